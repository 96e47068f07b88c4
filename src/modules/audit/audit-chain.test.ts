import { describe, expect, it } from 'vitest';
import type { AuditEntriesTable } from '../../db/types.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { canonicalEntry, entryHash } from './audit-chain.js';

// Backends: sqlite — pure functions, no storage
// Tier: quick
// The hand-written canonical text of an entry is exactly canonicalJson of the entry's fields, so the
// append's fast path and `wsvc audit verify` (which parses stored rows) hash the same text.
const base: Omit<AuditEntriesTable, 'hash'> = {
  id: 'aud_01',
  workspace_id: 'ws_1',
  seq: 7,
  time: '2026-11-27T10:00:00.000Z',
  actor_type: 'key',
  actor_id: 'key_1',
  actor_name: 'CI "deploy" \\ ключ \u2028',
  actor_user_id: null,
  action: 'resource.updated',
  target_type: 'resource',
  target_id: 'res_1',
  env: 'live',
  changes: JSON.stringify({ z: { before: 1, after: 2 }, a: { before: null, after: { y: [1, '\ud800'], b: true } } }),
  request_id: null,
  ip: '::1',
  user_agent: 'curl/8 😀',
};

function generic(e: Omit<AuditEntriesTable, 'hash'>): string {
  return canonicalJson({ ...e, seq: Number(e.seq), changes: JSON.parse(e.changes) as unknown });
}

describe('canonicalEntry', () => {
  it('equals canonicalJson of the entry, nulls, escapes and nested changes included', () => {
    for (const e of [
      base,
      { ...base, env: null, ip: null, user_agent: null, actor_user_id: 'usr_1', request_id: 'req_1', changes: '{}' },
    ]) {
      const changesText = canonicalJson(JSON.parse(e.changes) as unknown);
      expect(canonicalEntry(e, changesText)).toBe(generic(e));
    }
  });

  it('hashes the same with the stored changes text or with its canonical text', () => {
    const changesText = canonicalJson(JSON.parse(base.changes) as unknown);
    expect(entryHash('abc', base, changesText)).toBe(entryHash('abc', base));
    expect(entryHash('abc', { ...base, changes: changesText })).toBe(entryHash('abc', base));
    expect(entryHash('abd', base)).not.toBe(entryHash('abc', base));
  });
});
