import type { FormEvent, ReactNode } from 'react';

/** The frame of the signed-out pages. */
export function AuthFrame({ title, children }: { title: string; children: ReactNode }) {
  return (
    <main className="auth" id="main">
      <p className="brand">Workspace Service</p>
      <h1>{title}</h1>
      {children}
    </main>
  );
}

export function onSubmit(fn: (data: FormData) => void) {
  return (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    fn(new FormData(e.currentTarget));
  };
}
