import { expect } from 'vitest';
import type { TestApp } from './app.js';

/**
 * Every row of every table of the test database, in a stable order: comparing two snapshots
 * proves that a refused request changed nothing (issue 2: "nothing changed").
 */
export async function snapshot(t: TestApp): Promise<Record<string, string[]>> {
  // PostgreSQL lists the tables of every schema: other test files' and other branches' runs (whose
  // migrations may add tables this schema does not have). Only this connection's schema counts.
  const own = t.storage.dialect.currentSchema ? await t.storage.dialect.currentSchema(t.storage.db) : undefined;
  const tables = [
    ...new Set(
      (await t.storage.db.introspection.getTables())
        .filter((x) => own === undefined || x.schema === own)
        .map((x) => x.name),
    ),
  ]
    .filter((n) => !n.startsWith('kysely_'))
    .sort();
  const out: Record<string, string[]> = {};
  for (const table of tables) {
    // biome-ignore lint/suspicious/noExplicitAny: tables are enumerated at run time
    const rows = await (t.storage.db as any).selectFrom(table).selectAll().execute();
    out[table] = rows.map((r: unknown) => JSON.stringify(r)).sort();
  }
  return out;
}

/** Runs `fn` and asserts that the database is exactly as before; returns what `fn` returned. */
export async function expectNoChange<T>(t: TestApp, fn: () => Promise<T>): Promise<T> {
  const before = await snapshot(t);
  const result = await fn();
  expect(await snapshot(t)).toEqual(before);
  return result;
}
