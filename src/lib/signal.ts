/** An in-process "something changed" signal: the outbox rings it after a commit, the worker listens. */
export interface Signal {
  notify(): void;
  /** Returns a function that unsubscribes. */
  subscribe(listener: () => void): () => void;
}

export function createSignal(): Signal {
  const listeners = new Set<() => void>();
  return {
    notify() {
      for (const l of listeners) l();
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
