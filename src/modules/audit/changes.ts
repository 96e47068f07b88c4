import type { Changes } from '../../kernel/audit-actions.js';
import { canonicalJson } from '../../lib/canonical-json.js';

/** What a secret's value becomes in an audit entry. */
export const REDACTED = '[redacted]';

/**
 * Fields whose values never appear in an entry, whatever the change: secrets, password hashes, key
 * material, link tokens, second-factor secrets, recovery codes, client secrets.
 */
const ALWAYS_REDACTED = new Set([
  'secret',
  'signing_secret',
  'client_secret',
  'password',
  'password_hash',
  'new_password',
  'current_password',
  'digest',
  'salt',
  'key',
  'plaintext',
  'token',
  'link_token',
  'totp_secret',
  'recovery_codes',
  'public_key',
]);

/**
 * The fields that differ between `before` and `after` (null: created or removed), each as
 * `{before, after}`; secrets become `"[redacted]"` (null stays null). Fields absent on both sides are
 * skipped; `opts.redact` names more fields to hide.
 */
export function changesOf(
  before: object | null,
  after: object | null,
  opts: { redact?: readonly string[] } = {},
): Changes {
  const b = (before ?? {}) as Record<string, unknown>;
  const a = (after ?? {}) as Record<string, unknown>;
  const extra = new Set(opts.redact ?? []);
  const out: Changes = {};
  for (const field of new Set([...Object.keys(b), ...Object.keys(a)])) {
    const was = b[field] === undefined ? null : b[field];
    const is = a[field] === undefined ? null : a[field];
    if (sameValue(was, is)) continue;
    const hide = ALWAYS_REDACTED.has(field) || extra.has(field);
    out[field] = hide ? { before: hidden(was), after: hidden(is) } : { before: was, after: is };
  }
  return out;
}

function hidden(value: unknown): unknown {
  return value === null ? null : REDACTED;
}

/** Deep equality of JSON values (objects compared whatever their keys' order). */
function sameValue(x: unknown, y: unknown): boolean {
  if (x === y) return true;
  if (x === null || y === null || typeof x !== 'object' || typeof y !== 'object') return false;
  return canonicalJson(x) === canonicalJson(y);
}
