// Backends: both — the schema each database really has after every migration is what is checked
// Tier: quick
// Every column that holds a person's email, name, IP address or user agent has an erasure rule in the
// registry (src/platform/personal-data.ts), and every rule names a column that exists.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERSONAL_COLUMN_NAME, PERSONAL_DATA } from '../../src/platform/personal-data.js';
import { openTestStorage } from '../helpers/storage.js';

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let columns: string[];

beforeAll(async () => {
  storage = await openTestStorage();
  if (storage.dialect.name === 'postgres') {
    const { rows } = await sql<{ t: string; c: string }>`
      select table_name as t, column_name as c from information_schema.columns
      where table_schema = current_schema() and table_name not like 'kysely_%'`.execute(storage.db);
    columns = rows.map((r) => `${r.t}.${r.c}`);
  } else {
    const { rows } = await sql<{ t: string; c: string }>`
      select m.name as t, p.name as c from sqlite_master m, pragma_table_info(m.name) p
      where m.type = 'table' and m.name not like 'sqlite_%' and m.name not like 'kysely_%'`.execute(storage.db);
    columns = rows.map((r) => `${r.t}.${r.c}`);
  }
});

afterAll(() => storage.close());

describe('personal data', () => {
  it('every column that looks personal has an erasure rule', () => {
    const listed = new Set(PERSONAL_DATA.map((p) => `${p.table}.${p.column}`));
    const missing = columns.filter((c) => PERSONAL_COLUMN_NAME.test(c.split('.')[1] ?? '') && !listed.has(c));
    expect(missing, 'add each to src/platform/personal-data.ts with its erasure rule').toEqual([]);
  });

  it('every rule names a column of the schema, once', () => {
    const have = new Set(columns);
    const named = PERSONAL_DATA.map((p) => `${p.table}.${p.column}`);
    expect(named.filter((c) => !have.has(c))).toEqual([]);
    expect(new Set(named).size).toBe(named.length);
  });

  it('the check itself finds columns (users.email among them)', () => {
    expect(columns).toContain('users.email');
    expect(columns.length).toBeGreaterThan(100);
  });
});
