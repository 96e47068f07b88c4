/**
 * The chat platforms an integration posts to (docs/integrations.md): the one definition, used by the
 * database types, the schemas, the services and (type-only) the console.
 */
export const PLATFORMS = ['slack', 'discord'] as const;
export type Platform = (typeof PLATFORMS)[number];
