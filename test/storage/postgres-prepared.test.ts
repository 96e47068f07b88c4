import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';

// Backends: postgres — PostgreSQL's named prepared statements
// Tier: full — PostgreSQL/Redis only, and `npm test` runs on SQLite
// docs/performance.md#queries-built-once: on PostgreSQL every prepared() query runs as a named prepared
// statement of its connection, inside a write's transaction too. And a statement prepared before a
// migration changed its table (a rolling upgrade) costs at most a 503 per connection, never a 500.
const pgUrl = process.env.TEST_DATABASE_URL;

describe.skipIf(!pgUrl)('PostgreSQL: named prepared statements in transactions', () => {
  let t: TestApp;
  let ws: TestWorkspace;
  beforeAll(async () => {
    t = await startTestApp();
    ws = await newWorkspace(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const create = (name: string) =>
    t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name, type: 'standard' } });
  /**
   * A new receivers' token for the workspace, as any change to its integrations would write: the next event
   * reads the integrations again instead of the ones this process cached (docs/performance.md#the-receivers-of-an-event-cached).
   */
  const receiversChanged = () =>
    sql`insert into receiver_versions (workspace_id, version) values (${ws.id}, ${`probe-${Math.random()}`})
      on conflict (workspace_id) do update set version = excluded.version`.execute(t.storage.db);

  /** The named statements of every pooled connection: all are held at once, each reads its own. */
  async function namedStatements(): Promise<string[]> {
    const poolSize = 5; // test/helpers/storage.ts
    const seen: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let ready = 0;
    const all = Array.from({ length: poolSize }, () =>
      t.storage.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(trx);
        seen.push(...rows.map((r) => r.statement));
        if (++ready === poolSize) release();
        await held;
      }),
    );
    await Promise.all(all);
    return seen;
  }

  it("a resource write's statements are named on its connection: the inserts, the integrations read, the key's re-check", async () => {
    for (let i = 0; i < 10; i++) {
      await receiversChanged();
      expect((await create(`named-${i}`)).statusCode).toBe(201);
    }
    // The deferred writes (docs/performance.md, "A write in one round trip on PostgreSQL") are prepared with
    // SQL's PREPARE, whose text pg_prepared_statements shows with it.
    const statements = (await namedStatements()).map((s) => s.replace(/^prepare wsvc_q\d+_sql as /i, ''));
    expect(statements.some((s) => /^insert into "resources"/i.test(s))).toBe(true);
    expect(statements.some((s) => /^insert into "events"/i.test(s))).toBe(true);
    expect(statements.some((s) => /^insert into "audit_pending"/i.test(s))).toBe(true);
    expect(statements.some((s) => /from "integrations"/i.test(s))).toBe(true);
    expect(statements.some((s) => /wsvc_hold_key/.test(s))).toBe(true);
  });

  it('a column added under prepared statements: 503 with Retry-After at most once per connection, then 201', async () => {
    // Every connection has prepared the integrations read (select *) by now, or prepares it after the change
    // (each write reads them: the receivers' token changed before it).
    for (let i = 0; i < 20; i++) {
      await receiversChanged();
      expect((await create(`before-${i}`)).statusCode).toBe(201);
    }
    await sql`alter table integrations add column rolling_upgrade_probe integer`.execute(t.storage.db);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        await receiversChanged();
        const res = await create(`after-${i}`);
        statuses.push(res.statusCode);
        if (res.statusCode === 503) {
          expect(json(res).error).toMatchObject({ code: 'service_unavailable' });
          expect(res.headers['retry-after']).toBeDefined();
        }
      }
      console.log(`column added under prepared statements: ${statuses.join(' ')}`);
      expect(statuses.filter((s) => s !== 201 && s !== 503)).toEqual([]);
      // At least one connection had prepared the read before the change (else this test tests nothing).
      expect(statuses).toContain(503);
      expect(statuses.filter((s) => s === 503).length).toBeLessThanOrEqual(5);
      expect(statuses.slice(-5)).toEqual([201, 201, 201, 201, 201]);
    } finally {
      await sql`alter table integrations drop column rolling_upgrade_probe`.execute(t.storage.db);
    }
  });
});
