import type { Role } from './roles.js';

/** Every scope (docs/api.md#keys-scopes-and-roles): the one definition, used by the schemas, the services, the CLI and (type-only) the console. */
export const SCOPES = [
  'users:read',
  'users:write',
  'resources:read',
  'resources:write',
  'events:read',
  'webhooks:read',
  'webhooks:write',
  'keys:read',
  'keys:write',
  'usage:read',
  'requests:read',
  'billing:read',
  'audit:read',
  'exports:write',
  'workspace:write',
] as const;
export type Scope = (typeof SCOPES)[number];

/** docs/api.md#keys-scopes-and-roles: what each role may do; a key's scopes are intersected with its owner's current role. */
const ROLE_SCOPES: Record<Role, ReadonlySet<Scope>> = {
  admin: new Set(SCOPES),
  // keys:*: everyone manages their own keys; which keys (own or all) is decided by the keys service.
  member: new Set([
    'users:read',
    'users:write',
    'resources:read',
    'resources:write',
    'events:read',
    'keys:read',
    'keys:write',
    'usage:read',
    'requests:read',
  ]),
  viewer: new Set(['users:read', 'users:write', 'resources:read', 'events:read', 'keys:read', 'keys:write']),
};

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Whether a key with `keyScopes` (null: every scope) held by a `role` user may use `scope`. */
export function allows(role: Role, keyScopes: readonly string[] | null, scope: Scope): boolean {
  if (!ROLE_SCOPES[role].has(scope)) return false;
  return keyScopes === null || keyScopes.includes(scope);
}
