import { describe, expect, it } from 'vitest';
import type { AuditEntriesTable } from '../../db/types.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import {
  canonicalEntry,
  canonicalEntryV2,
  commitment,
  commitmentsOf,
  commitmentsText,
  entryHash,
  numberAfter,
  personalMismatch,
} from './audit-chain.js';

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
  personal_salt: null,
  commitments: null,
};

function generic(e: Omit<AuditEntriesTable, 'hash'>): string {
  const { personal_salt: _s, commitments: _c, ...rest } = e;
  return canonicalJson({ ...rest, seq: Number(e.seq), changes: JSON.parse(e.changes) as unknown });
}

/** The second form as an outside verifier builds it (docs/api.md#audit-log). */
function genericV2(e: Omit<AuditEntriesTable, 'hash'> & { hash?: string }): string {
  const { hash: _h, personal_salt: _s, commitments, actor_name: _n, changes: _ch, ip: _i, user_agent: _u, ...rest } = e;
  return canonicalJson({ ...rest, seq: Number(e.seq), commitments: JSON.parse(commitments ?? 'null'), v: 2 });
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

describe('the second form: salted commitments to the personal fields', () => {
  const { seq: _seq, personal_salt: _s, commitments: _c, ...unnumbered } = base;
  const entry = { ...unnumbered, changes: canonicalJson(JSON.parse(base.changes) as unknown) };

  it('hashes the commitments, not the values, and equals canonicalJson of the entry with them', () => {
    const { rows, head } = numberAfter({ seq: 6, hash: 'abc' }, [entry, { ...entry, id: 'aud_02', ip: null }]);
    const [a, b] = rows as [AuditEntriesTable, AuditEntriesTable];
    expect(a.seq).toBe(7);
    expect(a.personal_salt).toMatch(/^[0-9a-f]{32}$/);
    expect(a.personal_salt).not.toBe(b.personal_salt);
    expect(JSON.parse(a.commitments ?? '')).toEqual({
      actor_name: commitment(a.personal_salt ?? '', base.actor_name),
      changes: commitment(a.personal_salt ?? '', entry.changes),
      ip: commitment(a.personal_salt ?? '', '::1'),
      user_agent: commitment(a.personal_salt ?? '', base.user_agent),
    });
    expect(JSON.parse(b.commitments ?? '').ip).toBeNull();
    expect(canonicalEntryV2(a, a.commitments ?? '')).toBe(genericV2(a));
    expect(canonicalEntryV2(a, a.commitments ?? '')).not.toContain('::1');
    expect(a.hash).toBe(entryHash('abc', a));
    expect(b.hash).toBe(entryHash(a.hash, b));
    expect(head).toEqual({ seq: 8, hash: b.hash });
  });

  it('names a personal field edited while its salt is kept; an erased entry (no salt) still hashes the same', () => {
    const [a] = numberAfter({ seq: 0, hash: '' }, [entry]).rows as [AuditEntriesTable];
    expect(personalMismatch(a)).toBeNull();
    expect(personalMismatch({ ...a, ip: '10.0.0.1' })).toBe('ip');
    expect(personalMismatch({ ...a, actor_name: 'someone else' })).toBe('actor_name');
    const erased = { ...a, actor_name: '[erased]', ip: null, user_agent: null, changes: '{}', personal_salt: null };
    expect(personalMismatch(erased)).toBeNull();
    expect(entryHash('', erased)).toBe(a.hash);
  });

  it('writes commitments as canonical JSON', () => {
    const c = commitmentsOf('00', base, '{}');
    expect(commitmentsText(c)).toBe(canonicalJson(c));
  });
});
