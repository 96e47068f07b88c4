import { describe, expect, it } from 'vitest';
import { SCOPES } from '../kernel/scopes.js';
import { keysTable, type ListedKey, SCOPES_COLUMN, scopesCell } from './keys-table.js';

// Backends: sqlite — the text of `wsvc keys list`, from rows in memory
// Tier: quick
// `wsvc keys list` fits a terminal (docs/using.md#api-keys): a key that is not narrowed shows `all`
// instead of every scope, a narrowed one its list when short and else a count; `--wide` the whole list.

const key = (over: Partial<ListedKey>): ListedKey => ({
  id: 'key_01M8499HT4MMT8WPXB21HT00GW',
  env: 'live',
  prefix: 'svc_live_',
  name: 'Default live key',
  owner_email: 'admin@acme.example.com',
  scopes: [...SCOPES],
  last_used_at: '2026-11-23T13:25:00.000Z',
  expires_at: null,
  revoked_at: null,
  ...over,
});
const member = SCOPES.filter(
  (s) =>
    !s.startsWith('webhooks') &&
    !s.startsWith('billing') &&
    s !== 'audit:read' &&
    s !== 'exports:write' &&
    s !== 'workspace:write',
);

describe('scopesCell', () => {
  it('is "all" for a key with every scope, whatever their order', () => {
    expect(scopesCell([...SCOPES].reverse(), false)).toBe('all');
    expect(scopesCell([...SCOPES], true)).toBe('all');
  });

  it('is the list when it fits, a count when it does not; --wide gives the list', () => {
    expect(scopesCell(['resources:read', 'keys:read'], false)).toBe('resources:read,keys:read');
    expect(member.join(',').length).toBeGreaterThan(SCOPES_COLUMN);
    expect(scopesCell(member, false)).toBe(`${member.length} of ${SCOPES.length}`);
    expect(scopesCell(member, true)).toBe(member.join(','));
  });
});

describe('keysTable', () => {
  const keys = [
    key({}),
    key({ id: 'key_01M8499HT5BCZ9AK5T9JK3QKRM', env: 'test', prefix: 'svc_test_', name: 'Default test key' }),
    key({
      id: 'key_01M8499V8XPAPYQWABJ64DW9M9',
      name: 'CI deploy',
      scopes: member,
      revoked_at: '2026-11-23T13:25:14.445Z',
    }),
    key({ id: 'key_01M8499X9RXZSRP3D9JNCBQK2P', name: 'viewer ro', scopes: ['resources:read', 'users:read'] }),
  ];
  const now = '2026-11-24T00:00:00.000Z';

  it('keeps every row to a terminal width: no row carries every scope', () => {
    const text = keysTable(keys, { now, wide: false });
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^ID\s+ENV\s+PREFIX\s+NAME\s+OWNER\s+SCOPES\s+LAST USED\s+STATUS$/);
    expect(lines.map((l) => l.split(/\s{2,}/)[5])).toEqual([
      'SCOPES',
      'all',
      'all',
      `${member.length} of ${SCOPES.length}`,
      'resources:read,users:read',
    ]);
    // The SCOPES column is never wider than SCOPES_COLUMN (every scope in one column made rows of about 300).
    const header = lines[0] ?? '';
    expect(header.indexOf('LAST USED') - header.indexOf('SCOPES') - 2).toBeLessThanOrEqual(SCOPES_COLUMN);
    // A new workspace's two keys, never used: rows that fit a 120-column terminal.
    const fresh = keysTable(
      keys.slice(0, 2).map((k) => ({ ...k, last_used_at: null })),
      { now, wide: false },
    );
    expect(Math.max(...fresh.split('\n').map((l) => l.length))).toBeLessThanOrEqual(120);
  });

  it('--wide lists every scope of a narrowed key', () => {
    const text = keysTable(keys, { now, wide: true });
    expect(text).toContain(member.join(','));
    expect(text.split('\n')[1]?.split(/\s{2,}/)[5]).toBe('all');
  });

  it('says when a key expired or was revoked', () => {
    const text = keysTable([key({ expires_at: '2026-11-23T00:00:00.000Z' })], { now, wide: false });
    expect(text.split('\n')[1]).toMatch(/expired 2026-11-23T00:00:00\.000Z$/);
    expect(keysTable(keys, { now, wide: false }).split('\n')[3]).toMatch(/revoked 2026-11-23T13:25:14\.445Z$/);
    expect(keysTable([], { now, wide: false })).toBe('');
  });
});
