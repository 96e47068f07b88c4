/**
 * Every column that holds a person's data (an email, a name, an IP address, a user agent, or free text that may
 * quote them) and what erasing a person does to it (docs/data-lifecycle.md#erasing-a-person). The erasure
 * (modules/users/user-erasure.ts) runs these rules; test/architecture/personal-data.test.ts fails when the schema
 * has a column that looks personal and is not listed here, or when an entry names a column that does not exist.
 *
 * A person's rows are found by their email (`email`: the column equals it), by the ids of their user rows
 * (`user`: the column `user_id` is one of them), by the rows of the same table found that way (`row`), or by
 * the text naming them (`mention`: the column contains their email).
 */
export type ErasureRule =
  /** The person's rows are deleted. */
  | { rule: 'delete-row'; find: 'email' | 'user' | 'mention' }
  /** The value becomes null. */
  | { rule: 'erase'; find: 'email' | 'row' }
  /** The value becomes `[erased]` (the row stays: another person's record refers to it). */
  | { rule: 'replace'; find: 'email' | 'row' }
  /** Free text: each occurrence of the person's email, and of their name as a JSON string, becomes `[erased]`. */
  | { rule: 'scrub'; find: 'mention' }
  /**
   * The audit log: the value is erased or scrubbed and its salt deleted; the chain hashes a salted commitment
   * of it, kept, so the chain still verifies (docs/api.md#audit-log).
   */
  | { rule: 'commitment' }
  /** Not a person's data, and why. */
  | { rule: 'not-personal'; reason: string };

export type PersonalKind = 'email' | 'name' | 'ip' | 'user_agent' | 'text';

export interface PersonalColumn {
  table: string;
  column: string;
  holds: PersonalKind;
  erasure: ErasureRule;
}

const col = (table: string, column: string, holds: PersonalKind, erasure: ErasureRule): PersonalColumn => ({
  table,
  column,
  holds,
  erasure,
});
const notPersonal = (table: string, column: string, reason: string): PersonalColumn =>
  col(table, column, 'name', { rule: 'not-personal', reason });

/** The registry, table by table. */
export const PERSONAL_DATA: readonly PersonalColumn[] = [
  // A member's row stays (their keys, the audit log and invoices refer to it), removed, without who they were.
  col('users', 'email', 'email', { rule: 'replace', find: 'email' }),
  col('users', 'name', 'name', { rule: 'replace', find: 'row' }),
  col('user_test_profiles', 'name', 'name', { rule: 'delete-row', find: 'user' }),
  // Console sign-in: keyed by email, across workspaces.
  col('console_credentials', 'email', 'email', { rule: 'delete-row', find: 'email' }),
  col('console_links', 'email', 'email', { rule: 'delete-row', find: 'email' }),
  col('console_mfa', 'email', 'email', { rule: 'delete-row', find: 'email' }),
  col('console_passkeys', 'email', 'email', { rule: 'delete-row', find: 'email' }),
  notPersonal('console_passkeys', 'name', "the passkey's label, deleted with its row"),
  col('console_pending_sign_ins', 'email', 'email', { rule: 'delete-row', find: 'email' }),
  col('console_pending_sign_ins', 'ip', 'ip', { rule: 'erase', find: 'row' }),
  col('console_recovery_codes', 'email', 'email', { rule: 'delete-row', find: 'email' }),
  col('console_sessions', 'email', 'email', { rule: 'delete-row', find: 'email' }),
  col('console_sessions', 'ip', 'ip', { rule: 'erase', find: 'row' }),
  col('console_sessions', 'user_agent', 'user_agent', { rule: 'erase', find: 'row' }),
  col('console_webauthn_challenges', 'email', 'email', { rule: 'delete-row', find: 'email' }),
  // `email:<email>` and `email_ip:<ip>|<email>`: the failed sign-ins that name the person.
  col('console_sign_in_failures', 'subject', 'email', { rule: 'delete-row', find: 'mention' }),
  // The audit log: actor_name, ip, user_agent and changes are committed to by the chain (audit-chain.ts).
  col('audit_entries', 'actor_name', 'name', { rule: 'commitment' }),
  col('audit_entries', 'ip', 'ip', { rule: 'commitment' }),
  col('audit_entries', 'user_agent', 'user_agent', { rule: 'commitment' }),
  col('audit_entries', 'changes', 'text', { rule: 'commitment' }),
  // Entries not numbered yet: the erasure numbers them first, so none is left.
  col('audit_pending', 'actor_name', 'name', { rule: 'commitment' }),
  col('audit_pending', 'ip', 'ip', { rule: 'commitment' }),
  col('audit_pending', 'user_agent', 'user_agent', { rule: 'commitment' }),
  col('audit_pending', 'changes', 'text', { rule: 'commitment' }),
  // Notifications addressed to the person go; others' that name them are scrubbed.
  col('notifications', 'user_id', 'text', { rule: 'delete-row', find: 'user' }),
  col('notifications', 'data', 'text', { rule: 'scrub', find: 'mention' }),
  col('mailbox', 'to_address', 'email', { rule: 'delete-row', find: 'email' }),
  col('mailbox', 'text', 'text', { rule: 'delete-row', find: 'mention' }),
  col('mailbox', 'html', 'text', { rule: 'delete-row', find: 'mention' }),
  col('mailbox', 'subject', 'text', { rule: 'delete-row', find: 'mention' }),
  // Free text that may quote an email: request bodies, stored responses, event payloads, chat messages.
  col('request_log', 'body', 'text', { rule: 'scrub', find: 'mention' }),
  col('idempotency_keys', 'response_body', 'text', { rule: 'scrub', find: 'mention' }),
  col('events', 'payload', 'text', { rule: 'scrub', find: 'mention' }),
  col('integration_messages', 'payload', 'text', { rule: 'scrub', find: 'mention' }),
  notPersonal('api_keys', 'name', "a key's label, chosen by its owner"),
  notPersonal('resources', 'name', "a resource's name: the workspace's data"),
  notPersonal('workspaces', 'name', "the workspace's name"),
];

/** Column names that look like a person's data: such a column must be in the registry. */
export const PERSONAL_COLUMN_NAME = /email|name|(^|_)ip($|_)|ip_address|user_agent|address|subject/;
