/**
 * The roles a member can have (docs/api.md#keys-scopes-and-roles): the one definition, used by the
 * database types, the schemas, the services, the CLI and (type-only) the console.
 */
export const ROLES = ['admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
