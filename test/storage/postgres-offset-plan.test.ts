import {
  CompiledQuery,
  createQueryId,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  sql,
  type UnknownRow,
} from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toPageRequest } from '../../src/lib/paging.js';
import { eventsRepository } from '../../src/modules/events/events.repository.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';

// Backends: postgres — PostgreSQL's query plans (EXPLAIN ANALYZE)
// Tier: full — PostgreSQL/Redis only, and `npm test` runs on SQLite
// The offset page of a resource list (`GET /v1/resources?offset=`) must plan its offset
// scan once, whether or not the table has statistics yet: as `id in (select … offset)` a fresh table's
// plan was a semi-join that ran the offset scan once per row of the workspace. The query checked is the
// one the repository compiled (found among the connection's prepared queries), with EXPLAIN ANALYZE.
const pgUrl = process.env.TEST_DATABASE_URL;

type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Loops': number;
  Plans?: PlanNode[];
};
const flatten = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(flatten)];

describe.skipIf(!pgUrl)('PostgreSQL: the offset page plans its offset scan once (fresh, analyzed, large)', () => {
  let t: TestApp;
  let ws: TestWorkspace;
  beforeAll(async () => {
    t = await startTestApp();
    ws = await newWorkspace(t);
    // 500 resources of one workspace, written directly (no counts: only the rows and the plan matter here).
    await sql`insert into resources (id, workspace_id, env, name, type, status, metadata, created_at, updated_at)
      select 'res_' || lpad(g::text, 26, '0'), ${ws.id}, 'live', 'r', 'standard', 'active', '{}', now(), now()
      from generate_series(1, 500) g`.execute(t.storage.db);
  });
  afterAll(async () => {
    await t.close();
  });

  /** Serves the page over HTTP, then EXPLAIN ANALYZEs the very SQL the repository ran for it. */
  async function offsetPage(): Promise<PlanNode[]> {
    const res = await t.request({ method: 'GET', url: '/v1/resources?limit=20&offset=100', key: ws.live });
    expect(res.statusCode).toBe(200);
    const ids = (json(res).data as { id: string }[]).map((r) => r.id);
    expect(ids).toEqual(Array.from({ length: 20 }, (_, i) => `res_${String(101 + i).padStart(26, '0')}`));
    const compiled = [...t.storage.dialect.preparedQueries.values()].find((c) =>
      /offset/i.test((c as { sql: string }).sql),
    ) as { sql: string; binds: (string | { value: unknown })[] };
    expect(compiled.sql).toMatch(/inner join/i);
    const values: Record<string, unknown> = { ws: ws.id, env: 'live', limit: 21, offset: 100 };
    const parameters = compiled.binds.map((b) => (typeof b === 'string' ? values[b] : b.value));
    const { rows } = await t.storage.db.executeQuery<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
      CompiledQuery.raw(`explain (analyze, format json) ${compiled.sql}`, parameters),
    );
    const plan = rows[0]?.['QUERY PLAN'][0]?.Plan as PlanNode;
    return flatten(plan);
  }

  const check = (nodes: PlanNode[], when: string, { small = false } = {}) => {
    const limits = nodes.filter((n) => n['Node Type'] === 'Limit');
    console.log(`${when}: ${nodes.map((n) => `${n['Node Type']}×${n['Actual Loops']}`).join(' > ')}`);
    expect(limits.length).toBeGreaterThan(0);
    // The offset scan (under the Limit) runs once; on a large table the page's rows are read by primary
    // key, never by a scan of the whole table (a 500-row table analyzed may be read whole: it is cheaper).
    for (const l of limits) expect(l['Actual Loops']).toBe(1);
    if (small) return;
    expect(nodes.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'resources')).toEqual([]);
  };

  it('on a fresh table (no statistics), after ANALYZE, and on a large shared one', async () => {
    check(await offsetPage(), 'fresh');
    await sql`analyze resources`.execute(t.storage.db);
    check(await offsetPage(), 'analyzed', { small: true });
    // 100,000 rows more in the same table (another environment), analyzed: the page still reads 20 by key.
    await sql`insert into resources (id, workspace_id, env, name, type, status, metadata, created_at, updated_at)
      select 'res_z' || lpad(g::text, 25, '0'), ${ws.id}, 'test', 'r', 'standard', 'active', '{}', now(), now()
      from generate_series(1, 100000) g`.execute(t.storage.db);
    await sql`analyze resources`.execute(t.storage.db);
    check(await offsetPage(), 'large, analyzed');
  }, 60_000);
});

/** Keeps every query run through the Kysely instance it is plugged into (to EXPLAIN the very SQL afterwards). */
class Recorder implements KyselyPlugin {
  readonly nodes: RootOperationNode[] = [];
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.nodes.push(args.node);
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

// The other lists (`db/keyset.ts#pageById`: events, webhooks, deliveries, users, keys, resources by name prefix)
// page by offset with the same derived-table shape. Checked on the events list, the table every write grows.
describe.skipIf(!pgUrl)('PostgreSQL: pageById plans its offset scan once (fresh, analyzed, large)', () => {
  let t: TestApp;
  let ws: TestWorkspace;
  beforeAll(async () => {
    t = await startTestApp();
    ws = await newWorkspace(t);
    await sql`insert into events (id, workspace_id, env, type, resource_id, payload, created_at)
      select 'evt_' || lpad(g::text, 26, '0'), ${ws.id}, 'live', 'resource.created', null, '{}', now()
      from generate_series(1, 500) g`.execute(t.storage.db);
  });
  afterAll(async () => {
    await t.close();
  });

  /** Lists one events page by offset through the repository, then EXPLAIN ANALYZEs the SQL it ran for the rows. */
  async function offsetPage(order: 'asc' | 'desc'): Promise<PlanNode[]> {
    const recorder = new Recorder();
    const db = t.storage.db.withPlugin(recorder);
    const page = await eventsRepository.list(
      db,
      { workspaceId: ws.id, env: 'live' },
      {},
      toPageRequest({ limit: 20, offset: 100, order }),
    );
    const expected = Array.from({ length: 20 }, (_, i) => (order === 'asc' ? 101 + i : 400 - i));
    expect(page.items.map((e) => e.id)).toEqual(expected.map((n) => `evt_${String(n).padStart(26, '0')}`));
    expect(page.total).toBe(500);
    // The recorder also sees the derived table's own query (built as a subquery): take the whole statement.
    const compiled = recorder.nodes
      .map((node) => t.storage.db.getExecutor().compileQuery(node, createQueryId()))
      .filter((c) => /offset/i.test(c.sql))
      .sort((a, b) => b.sql.length - a.sql.length)[0];
    if (!compiled) throw new Error('no offset query was run');
    expect(compiled.sql).toMatch(/inner join/i);
    const { rows } = await t.storage.db.executeQuery<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
      CompiledQuery.raw(`explain (analyze, format json) ${compiled.sql}`, [...compiled.parameters]),
    );
    return flatten(rows[0]?.['QUERY PLAN'][0]?.Plan as PlanNode);
  }

  const check = (nodes: PlanNode[], when: string, { small = false } = {}) => {
    console.log(`events ${when}: ${nodes.map((n) => `${n['Node Type']}×${n['Actual Loops']}`).join(' > ')}`);
    const limits = nodes.filter((n) => n['Node Type'] === 'Limit');
    expect(limits.length).toBeGreaterThan(0);
    for (const l of limits) expect(l['Actual Loops']).toBe(1);
    if (small) return;
    expect(nodes.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'events')).toEqual([]);
  };

  it('on a fresh table (no statistics), after ANALYZE, and on a large shared one, in both orders', async () => {
    check(await offsetPage('asc'), 'fresh, asc');
    check(await offsetPage('desc'), 'fresh, desc');
    await sql`analyze events`.execute(t.storage.db);
    check(await offsetPage('asc'), 'analyzed, asc', { small: true });
    // 100,000 events of another workspace in the same table, analyzed: the page still reads 20 by key.
    const other = await newWorkspace(t);
    await sql`insert into events (id, workspace_id, env, type, resource_id, payload, created_at)
      select 'evt_z' || lpad(g::text, 25, '0'), ${other.id}, 'live', 'resource.created', null, '{}', now()
      from generate_series(1, 100000) g`.execute(t.storage.db);
    await sql`analyze events`.execute(t.storage.db);
    check(await offsetPage('asc'), 'large, analyzed, asc');
    check(await offsetPage('desc'), 'large, analyzed, desc');
  }, 60_000);
});
