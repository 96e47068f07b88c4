import { useQuery } from '@tanstack/react-query';
import { createContext, type ReactNode, useContext } from 'react';
import { useParams } from 'react-router';
import { ApiError, api, type Scope, setCsrfToken } from '../api/client';
import type { ConsoleSession, Env, Membership } from '../api/types';

export const SESSION_KEY = ['session'] as const;

/** The signed-in person, or null when signed out. */
export function useSessionQuery() {
  return useQuery({
    queryKey: SESSION_KEY,
    queryFn: async () => {
      try {
        const s = await api<{ data: ConsoleSession }>('/session');
        setCsrfToken(s.data.csrf_token);
        return s.data;
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return null;
        throw err;
      }
    },
    staleTime: 60_000,
  });
}

interface Current {
  session: ConsoleSession;
  membership: Membership;
  scope: Scope;
  isAdmin: boolean;
  canWriteResources: boolean;
  timeZone: string;
}
const CurrentContext = createContext<Current | null>(null);

export function CurrentProvider({ value, children }: { value: Current; children: ReactNode }) {
  return <CurrentContext.Provider value={value}>{children}</CurrentContext.Provider>;
}

/** The session, the workspace membership and the live/test scope of the page. */
export function useCurrent(): Current {
  const c = useContext(CurrentContext);
  if (!c) throw new Error('useCurrent outside the signed-in layout');
  return c;
}

export function useScopeParams(): { ws: string; env: Env } {
  const p = useParams();
  return { ws: p.ws ?? '', env: p.env === 'test' ? 'test' : 'live' };
}

/** A path inside the current workspace and environment. */
export function usePathTo() {
  const { scope } = useCurrent();
  return (rest: string, env: Env = scope.env) => `/w/${scope.ws}/${env}${rest}`;
}
