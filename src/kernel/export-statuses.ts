/**
 * Every state of a workspace export (docs/data-lifecycle.md#export): the one definition, used by the database
 * types, the schemas, the services and (type-only) the console.
 */
export const EXPORT_STATUSES = ['queued', 'running', 'ready', 'failed', 'expired'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];
