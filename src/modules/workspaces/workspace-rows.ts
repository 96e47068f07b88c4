import { type RawBuilder, sql } from 'kysely';
import { deleteBounded } from '../../db/bounded-delete.js';
import type { Db, DialectName } from '../../db/dialect.js';

/**
 * What happens to each table's rows when a workspace is deleted (docs/data-lifecycle.md#deleting-a-workspace),
 * in the order the deletion job goes: children before parents. Every table of the database has exactly one rule
 * (test/workspaces/deletion.test.ts compares this list with the database's tables), so a new table without a
 * rule fails a test.
 * - `workspace`: its rows whose `workspace_id` is the workspace's;
 * - `via`: its rows whose `column` names a row of `parent` that belongs to the workspace;
 * - `keep`: nothing is deleted, for the reason given.
 */
export type TableRule =
  | { table: string; rule: 'workspace' }
  | { table: string; rule: 'via'; column: string; parent: string }
  | { table: string; rule: 'keep'; why: string };

export const WORKSPACE_TABLE_RULES: readonly TableRule[] = [
  { table: 'delivery_attempts', rule: 'via', column: 'delivery_id', parent: 'deliveries' },
  { table: 'exhausted_deliveries', rule: 'via', column: 'event_id', parent: 'events' },
  { table: 'exports', rule: 'workspace' },
  {
    table: 'operator_deliveries',
    rule: 'keep',
    why: "the operator's instance-wide events (workspace.deleted among them), purged after EVENT_RETENTION_DAYS",
  },
  { table: 'deliveries', rule: 'workspace' },
  { table: 'events', rule: 'workspace' },
  { table: 'receiver_versions', rule: 'workspace' },
  { table: 'integration_messages', rule: 'workspace' },
  { table: 'integrations', rule: 'workspace' },
  { table: 'webhooks', rule: 'workspace' },
  { table: 'resource_counts', rule: 'workspace' },
  { table: 'resources', rule: 'workspace' },
  { table: 'idempotency_keys', rule: 'workspace' },
  { table: 'usage_counts', rule: 'workspace' },
  { table: 'request_log', rule: 'workspace' },
  { table: 'usage_notices', rule: 'workspace' },
  { table: 'mailbox', rule: 'via', column: 'notification_id', parent: 'notifications' },
  { table: 'notifications', rule: 'workspace' },
  { table: 'notification_preferences', rule: 'via', column: 'user_id', parent: 'users' },
  { table: 'subscription_changes', rule: 'workspace' },
  { table: 'subscriptions', rule: 'workspace' },
  { table: 'billing_customers', rule: 'workspace' },
  {
    table: 'invoice_payment_attempts',
    rule: 'keep',
    why: 'the payment attempts of a finalized invoice, kept with it (Stripe ids, amounts, outcomes; no card data)',
  },
  {
    table: 'stripe_events',
    rule: 'keep',
    why: 'the ids of the Stripe events processed, so a repeat is ignored; they name no workspace',
  },
  { table: 'invoice_lines', rule: 'keep', why: 'the lines of a finalized invoice, kept with it' },
  { table: 'invoices', rule: 'keep', why: 'finalized invoices (every stored invoice is finalized) are kept by law' },
  { table: 'workspace_mfa_policies', rule: 'workspace' },
  { table: 'sso_sign_ins', rule: 'workspace' },
  { table: 'workspace_sso', rule: 'workspace' },
  { table: 'console_links', rule: 'workspace' },
  { table: 'console_sessions', rule: 'workspace' },
  { table: 'audit_pending', rule: 'workspace' },
  { table: 'audit_entries', rule: 'workspace' },
  { table: 'audit_heads', rule: 'workspace' },
  { table: 'api_keys', rule: 'workspace' },
  { table: 'user_test_profiles', rule: 'via', column: 'user_id', parent: 'users' },
  { table: 'users', rule: 'workspace' },
  { table: 'console_credentials', rule: 'keep', why: "a person's console password, shared by all their workspaces" },
  { table: 'console_mfa', rule: 'keep', why: "a person's second factors, shared by all their workspaces" },
  { table: 'console_recovery_codes', rule: 'keep', why: "a person's recovery codes" },
  { table: 'console_passkeys', rule: 'keep', why: "a person's passkeys" },
  {
    table: 'console_webauthn_challenges',
    rule: 'keep',
    why: 'a browser challenge of a person, purged after 5 minutes',
  },
  { table: 'console_pending_sign_ins', rule: 'keep', why: "a person's sign-in step, purged after 5 minutes" },
  { table: 'console_sign_in_failures', rule: 'keep', why: 'failed sign-ins per email or IP, purged after 15 minutes' },
  { table: 'workspace_tombstones', rule: 'keep', why: 'what stays of a deleted workspace' },
  // Last, in the job's final change with the tombstone and `workspace.deleted`.
  { table: 'workspaces', rule: 'keep', why: "deleted by the job's last change, with the tombstone" },
];

/** The condition that picks a workspace's rows of the table a rule deletes from. */
function rowsOf(r: Exclude<TableRule, { rule: 'keep' }>, workspaceId: string): RawBuilder<unknown> {
  if (r.rule === 'workspace') return sql`workspace_id = ${workspaceId}`;
  return sql`${sql.ref(r.column)} in (select id from ${sql.table(r.parent)} where workspace_id = ${workspaceId})`;
}

/**
 * One bounded batch of a workspace's deletion: deletes at most `limit` of its rows of the rule's table; returns
 * how many (fewer than `limit`: the table holds no more of them).
 */
export function deleteBatch(
  db: Db,
  dialect: DialectName,
  r: Exclude<TableRule, { rule: 'keep' }>,
  workspaceId: string,
  limit: number,
): Promise<number> {
  return deleteBounded(db, dialect, r.table, rowsOf(r, workspaceId), limit);
}

/** The workspace's audit chain's last entry (seq, hash), if it has one. */
export async function auditHeadOf(db: Db, workspaceId: string): Promise<{ seq: number; hash: string } | undefined> {
  const { rows } = await sql<{ seq: number | string; hash: string }>`
    select seq, hash from audit_heads where workspace_id = ${workspaceId}`.execute(db);
  const head = rows[0];
  return head ? { seq: Number(head.seq), hash: head.hash } : undefined;
}
