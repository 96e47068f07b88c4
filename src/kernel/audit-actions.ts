import type { Env } from './environments.js';

/**
 * docs/api.md#audit-log: the catalogue of audited actions, the one definition, used by the database
 * types, the schemas (the OpenAPI enum), the services and (type-only) the console.
 */
export const AUDIT_ACTIONS = [
  'key.created',
  'key.revoked',
  'key.rolled',
  'member.invited',
  'member.role_changed',
  'member.removed',
  'user.updated',
  'user.password_changed',
  'user.mfa_enabled',
  'user.mfa_disabled',
  'user.passkey_added',
  'user.passkey_removed',
  'user.passkey_renamed',
  'user.recovery_codes_regenerated',
  'user.reset_link_created',
  'user.mfa_reset',
  'user.erased',
  'session.signed_in',
  'session.sign_in_failed',
  'session.signed_out',
  'resource.created',
  'resource.updated',
  'resource.archived',
  'resource.unarchived',
  'resource.deleted',
  'webhook.created',
  'webhook.updated',
  'webhook.disabled',
  'webhook.enabled',
  'webhook.deleted',
  'webhook.secret_rotated',
  'delivery.retried',
  'integration.created',
  'integration.updated',
  'integration.deleted',
  'plan.changed',
  'invoice.finalized',
  'invoice.marked_paid',
  'invoice.voided',
  'invoice.payment_succeeded',
  'invoice.payment_failed',
  'invoice.refunded',
  'payment_method.updated',
  'subscription.unpaid',
  'subscription.reactivated',
  'workspace.created',
  'workspace.settings_changed',
  'export.created',
  'workspace.deletion_scheduled',
  'workspace.deletion_cancelled',
  'sso.configured',
  'audit.purged',
  'audit.chain_migrated',
  'secrets.key_rotated',
  'events.purged',
  'request_log.purged',
  'usage.purged',
  'idempotency.purged',
  'notifications.purged',
  'integration_messages.purged',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Each changed field's value before and after the change; secrets are `"[redacted]"`. */
export type Changes = Record<string, { before: unknown; after: unknown }>;

/** Who an entry names (docs/api.md#audit-log): a key also names its user; the CLI, worker and jobs are `system`. */
export interface AuditActor {
  type: 'user' | 'key' | 'system';
  id: string;
  name: string;
  user_id?: string | null;
}

/** Where an HTTP request came from; absent for the CLI, the worker and the jobs. */
export interface RequestOrigin {
  requestId: string;
  /** The client's address as Fastify computes it (honouring TRUST_PROXY). */
  ip: string;
  userAgent: string | null;
}

/** What a change says it did: one audit entry, written in its transaction. */
export interface AuditRecord {
  action: AuditAction;
  target: { type: string; id: string };
  /** The change's environment; null for workspace-level changes (members, sessions, plans, sign-in). */
  env: Env | null;
  /** Only the fields that changed (changesOf); none for a creation or removal that names nothing. */
  changes?: Changes;
  /** Required when the actor acts in no workspace (system, anonymous and person actors). */
  workspaceId?: string;
  /** Names someone else than the actor: required for anonymous and person actors (the user concerned). */
  actor?: AuditActor;
}

/**
 * Given to every change by the unit of work (`Change.audit`): what it records is
 * appended last in the same transaction, so a change and its entries commit together or not at all.
 */
export interface AuditTrail {
  record(entry: AuditRecord): void;
}
