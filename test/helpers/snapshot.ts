import { sql } from 'kysely';
import { expect } from 'vitest';
import type { TestApp } from './app.js';

/**
 * What usage metering writes on its own schedule (docs/usage.md): a refused request is counted and
 * logged, and a flush may land while a test compares, so these are left out of snapshots.
 */
const METERED = new Set(['usage_counts', 'request_log']);

function withoutMetering(table: string, row: Record<string, unknown>): Record<string, unknown> {
  if (table !== 'api_keys') return row;
  const { last_used_at: _, ...rest } = row;
  return rest;
}

/**
 * Every row of every table of the test database, in a stable order: comparing two snapshots
 * proves that a refused request changed nothing (docs/api.md#errors: a refused request changes nothing).
 */
export async function snapshot(t: TestApp): Promise<Record<string, string[]>> {
  // Only this test's schema: introspecting every schema races with other files dropping theirs.
  const query =
    t.storage.dialect.name === 'postgres'
      ? sql<{ name: string }>`select table_name as name from information_schema.tables
          where table_schema = current_schema() and table_type = 'BASE TABLE'`
      : sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`;
  const tables = (await query.execute(t.storage.db)).rows
    .map((r) => r.name)
    .filter((n) => !n.startsWith('kysely_') && !METERED.has(n))
    .sort();
  const out: Record<string, string[]> = {};
  for (const table of tables) {
    // biome-ignore lint/suspicious/noExplicitAny: tables are enumerated at run time
    const rows = await (t.storage.db as any).selectFrom(table).selectAll().execute();
    out[table] = rows.map((r: Record<string, unknown>) => JSON.stringify(withoutMetering(table, r))).sort();
  }
  return out;
}

/** Runs `fn` and asserts that the database is exactly as before; returns what `fn` returned. */
export async function expectNoChange<T>(t: TestApp, fn: () => Promise<T>): Promise<T> {
  const before = await snapshot(t);
  const result = await fn();
  const after = await snapshot(t);
  // The same rows serialise to the same string: one comparison of two strings, and the deep
  // comparison (which names the difference) only when they differ.
  if (JSON.stringify(after) !== JSON.stringify(before)) expect(after).toEqual(before);
  return result;
}
