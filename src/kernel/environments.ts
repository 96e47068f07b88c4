/**
 * The environments a workspace's data lives in (docs/api.md#environments): the one definition, used
 * by the database types, the schemas, the services, the CLI and (type-only) the console.
 */
export const ENVIRONMENTS = ['live', 'test'] as const;
export type Env = (typeof ENVIRONMENTS)[number];
