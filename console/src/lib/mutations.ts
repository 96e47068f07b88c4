// The console's writes to the /v1 API, typed by the generated schema of the client package
// (packages/client/src/schema.d.ts, generated from the server's OpenAPI document): the path, its
// parameters, the request body and the answer all come from the document, so changing a request
// or response schema (and regenerating with `npm run client:schema`) fails `npm run typecheck`.
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { CallOptions, PathsWith, ResultOf, Schemas } from '../../../packages/client/src/index';
import { api } from '../api/client';
import type { EVENT_TYPES, ROLES } from './closed-sets';
import { useCurrent } from './session';

type Write = 'post' | 'put' | 'patch' | 'delete';

/** What a mutation takes: the operation's `params` (`path`, `query`) and `body`, as the client does. */
export type V1Variables<P extends PathsWith<M>, M extends Write> = CallOptions<P, M>;

/** `/v1/webhooks/{id}/test` with `{id: 'wh_…'}` → `/v1/webhooks/wh_…/test`. */
export function fillPath(path: string, params: Record<string, unknown> = {}): string {
  return path.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`Missing path parameter ${name} for ${path}.`);
    return encodeURIComponent(String(value));
  });
}

/**
 * A write to the /v1 API in the page's workspace and environment, typed by the OpenAPI document;
 * refreshes every cached read of the workspace after it:
 * `useV1Mutation('post', '/v1/webhooks/{id}/test').mutate({ params: { path: { id } } })`.
 */
export function useV1Mutation<M extends Write, P extends PathsWith<M>>(method: M, path: P) {
  const { scope } = useCurrent();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (variables: V1Variables<P, M>) => {
      const { params, body } = variables as { params?: { path?: Record<string, unknown> }; body?: unknown };
      return api<ResultOf<P, M>>(fillPath(path, params?.path), { method: method.toUpperCase(), scope, body });
    },
    onSuccess: () => qc.invalidateQueries({ queryKey: [scope.ws] }),
  });
}

type BodyOf<P extends PathsWith<M>, M extends Write> = NonNullable<V1Variables<P, M>['body']>;
/** The event names a webhook can subscribe to (with `*`), from the document. */
export type EventName = BodyOf<'/v1/webhooks', 'post'>['events'][number];
/** The scopes an API key can have, from the document. */
export type KeyScope = NonNullable<BodyOf<'/v1/keys', 'post'>['scopes']>[number];

/**
 * A list of every member of the string union `T`, checked both ways by the compiler: a value the
 * document does not have, or a missing one, fails `npm run typecheck`. For the option lists of
 * selects, which need the values at run time while the generated schema has only their types.
 */
export function everyOf<T extends string>() {
  return <const A extends readonly T[]>(
    list: A & ([T] extends [A[number]] ? unknown : { missing: Exclude<T, A[number]> }),
  ) => list as A;
}
/** The resource types of the document. */
export const RESOURCE_TYPES = everyOf<Schemas['Resource']['type']>()(['standard', 'premium', 'custom']);
/** True when two string unions hold the same members. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// The closed sets the console lists (lib/closed-sets.ts, from the server's types) are the
// document's too: an event type or role the OpenAPI document lacks, or has extra, fails typecheck.
const _eventTypesMatchDocument: Same<(typeof EVENT_TYPES)[number], Exclude<EventName, '*'>> = true;
const _rolesMatchDocument: Same<(typeof ROLES)[number], Schemas['User']['role']> = true;
void _eventTypesMatchDocument;
void _rolesMatchDocument;
