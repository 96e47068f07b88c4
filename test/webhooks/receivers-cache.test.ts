// Backends: both — the receivers' token is read by the event's insert on SQLite and on PostgreSQL, and another connection changes it
// Tier: quick
// docs/performance.md, "The receivers of an event, cached": each process reuses a workspace's enabled webhooks
// and integrations between event writes while its receivers' token is unchanged. A webhook created, disabled,
// re-enabled, given other events or deleted, and an integration added, disabled or removed, must be honoured
// by the very next event this process writes, whether the change was made by this process or by another
// connection to the same database (a second set of services, as the `wsvc` CLI or another API process would be).
// On PostgreSQL an event whose receivers this process holds is inserted with its write's COMMIT and their token
// asserted (docs/performance.md, "A write in one round trip on PostgreSQL"): a change that moved the token fails
// that write before it commits, and the write runs once more with the receivers read afresh.
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/db/database.js';
import type { ApiKeyPrincipal } from '../../src/kernel/principal.js';
import type { Services } from '../../src/services.js';
import {
  keyPrincipal,
  newWorkspace,
  otherProcess,
  startTestApp,
  type TestApp,
  type TestWorkspace,
} from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';
import { testBackend } from '../helpers/storage.js';

// This file's pg queries (pg.Client#query, which the pool and our driver call): how many sent an assertion
// of the receivers' token, and how many failed on one (SQLSTATE WK409: the write then runs again).
const sent: string[] = [];
let moved = 0;
const pgQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const a = args[0] as string | { text?: string };
  sent.push(typeof a === 'string' ? a : (a?.text ?? ''));
  const result = pgQuery.apply(this, args);
  if (result instanceof Promise) {
    result.catch((err: { code?: string }) => {
      if (err?.code === 'WK409') moved += 1;
    });
  }
  return result;
} as typeof pg.Client.prototype.query;

const dns: Record<string, string[]> = {
  'hooks.slack.com': ['3.120.10.10'],
  'receiver.public.test': ['93.184.216.34'],
};
const resolveHost = async (host: string) => dns[host] ?? [];
const SLACK = 'https://hooks.slack.com/services/T000/B000/cachetest1234';
const URL = 'https://receiver.public.test/hook';

let t: TestApp;
let other: Storage;
let otherServices: Services;
beforeAll(async () => {
  t = await startTestApp({ resolveHost });
  ({ storage: other, services: otherServices } = otherProcess(t, { resolveHost }));
});
afterAll(async () => {
  pg.Client.prototype.query = pgQuery as typeof pg.Client.prototype.query;
  await other.close();
  await t.close();
});

/** Deliveries queued to the webhook `id` so far (pending: no worker runs here). */
async function deliveriesTo(id: string): Promise<number> {
  const r = await t.storage.db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('webhook_id', '=', id)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Messages queued to the integration `id` so far. */
async function messagesTo(id: string): Promise<number> {
  const r = await t.storage.db
    .selectFrom('integration_messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('integration_id', '=', id)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** One event written by this process (a resource created through its HTTP API). */
const post = (ws: TestWorkspace) => createResource(t, ws.live);

describe('the receivers cached per workspace are never used stale', () => {
  it('is in use: a change that skips the token (raw SQL) is not seen until a change that replaces it', async () => {
    // What makes the tests below able to fail: without the token, a cached answer would be served.
    const ws = await newWorkspace(t);
    const p = await keyPrincipal(t.services, ws.live);
    const hook = await t.services.webhooks.create(t.services.uow.as(p), { url: URL, events: ['*'] });
    await post(ws);
    expect(await deliveriesTo(hook.id)).toBe(1);
    await sql`update webhooks set status = 'disabled' where id = ${hook.id}`.execute(t.storage.db);
    await post(ws);
    expect(await deliveriesTo(hook.id)).toBe(2);
    // A change through the service (another webhook) replaces the token: the raw disable is seen now.
    await t.services.webhooks.create(t.services.uow.as(p), { url: `${URL}/2`, events: ['*'] });
    await post(ws);
    expect(await deliveriesTo(hook.id)).toBe(2);
  });

  for (const where of ['this process', 'another process'] as const) {
    const s = () => (where === 'this process' ? t.services : otherServices);
    const principal = (ws: TestWorkspace): Promise<ApiKeyPrincipal> => keyPrincipal(s(), ws.live);

    it(`a webhook created, disabled, re-enabled, given other events and deleted by ${where}`, async () => {
      const ws = await newWorkspace(t);
      const p = await principal(ws);
      await post(ws); // cached: no webhook
      const hook = await s().webhooks.create(s().uow.as(p), { url: URL, events: ['resource.created'] });
      await post(ws);
      expect(await deliveriesTo(hook.id)).toBe(1);
      await post(ws); // cached: one webhook
      expect(await deliveriesTo(hook.id)).toBe(2);

      await s().webhooks.setStatus(s().uow.as(p), hook.id, 'disabled');
      await post(ws);
      expect(await deliveriesTo(hook.id)).toBe(2);

      await s().webhooks.setStatus(s().uow.as(p), hook.id, 'enabled');
      await post(ws);
      expect(await deliveriesTo(hook.id)).toBe(3);

      await s().webhooks.update(s().uow.as(p), hook.id, { events: ['resource.deleted'] });
      await post(ws);
      expect(await deliveriesTo(hook.id)).toBe(3);
      await s().webhooks.update(s().uow.as(p), hook.id, { events: ['*'] });
      await post(ws);
      expect(await deliveriesTo(hook.id)).toBe(4);

      const second = await s().webhooks.create(s().uow.as(p), { url: `${URL}/2`, events: ['*'] });
      await post(ws);
      await s().webhooks.remove(s().uow.as(p), hook.id);
      // Deleting a webhook deletes its deliveries: the second one's count says whether the event was written.
      const before = await deliveriesTo(second.id);
      await post(ws);
      expect(await deliveriesTo(second.id)).toBe(before + 1);
      expect(await deliveriesTo(hook.id)).toBe(0);
    });

    it(`an integration added, disabled, re-enabled and removed by ${where}`, async () => {
      const ws = await newWorkspace(t);
      const p = await principal(ws);
      await post(ws); // cached: no integration
      const chat = await s().integrations.create(s().uow.as(p), {
        kind: 'slack',
        url: SLACK,
        env: 'live',
        events: ['resource.created'],
        categories: [],
      });
      await post(ws);
      expect(await messagesTo(chat.id)).toBe(1);
      await post(ws); // cached: one integration
      expect(await messagesTo(chat.id)).toBe(2);

      await s().integrations.update(s().uow.as(p), chat.id, { status: 'disabled' });
      await post(ws);
      expect(await messagesTo(chat.id)).toBe(2);

      await s().integrations.update(s().uow.as(p), chat.id, { status: 'enabled' });
      await post(ws);
      expect(await messagesTo(chat.id)).toBe(3);

      await s().integrations.update(s().uow.as(p), chat.id, { env: 'test' });
      await post(ws);
      expect(await messagesTo(chat.id)).toBe(3);
      await s().integrations.update(s().uow.as(p), chat.id, { env: 'live' });

      const second = await s().integrations.create(s().uow.as(p), {
        kind: 'slack',
        url: `${SLACK}x`,
        env: 'live',
        events: ['*'],
        categories: [],
      });
      await post(ws);
      await s().integrations.remove(s().uow.as(p), chat.id);
      const before = await messagesTo(second.id);
      await post(ws);
      expect(await messagesTo(second.id)).toBe(before + 1);
      expect(await messagesTo(chat.id)).toBe(0);
    });
  }

  it("one workspace's change leaves another's receivers cached, and each environment has its own webhooks", async () => {
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    const pa = await keyPrincipal(t.services, a.live);
    const pb = await keyPrincipal(t.services, b.live);
    const hookA = await t.services.webhooks.create(t.services.uow.as(pa), { url: URL, events: ['*'] });
    const hookB = await t.services.webhooks.create(t.services.uow.as(pb), { url: URL, events: ['*'] });
    await post(a);
    await post(b);
    // A test-environment event of workspace a: not to its live webhook.
    await createResource(t, a.test);
    expect(await deliveriesTo(hookA.id)).toBe(1);
    await otherServices.webhooks.setStatus(
      otherServices.uow.as(await keyPrincipal(otherServices, a.live)),
      hookA.id,
      'disabled',
    );
    await post(a);
    await post(b);
    expect(await deliveriesTo(hookA.id)).toBe(1);
    expect(await deliveriesTo(hookB.id)).toBe(2);
  });
});

describe('a write that expects the receivers it holds (PostgreSQL: sent with its COMMIT)', () => {
  const postgres = testBackend() === 'postgres';
  /** How many of the queries sent since `from` asserted the receivers' token. */
  const assertions = (from: number) => {
    const names = [...(t.storage.dialect.statementNames ?? [])]
      .filter(([text]) => text.includes('wsvc_expect_receivers'))
      // Deferred, a prepared() query is sent as EXECUTE of the statement the connection PREPAREd as its name + `_sql`.
      .map(([, name]) => `execute ${name}_sql(`);
    return sent.slice(from).filter((q) => names.some((n) => q.includes(n))).length;
  };
  const count = async (table: 'resources' | 'events', workspaceId: string) =>
    Number(
      (
        await t.storage.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('workspace_id', '=', workspaceId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('sees a change by another process at the very next write, through one retry that commits it once', async () => {
    const ws = await newWorkspace(t);
    const p = await keyPrincipal(t.services, ws.live);
    const hook = await t.services.webhooks.create(t.services.uow.as(p), { url: URL, events: ['*'] });
    await post(ws); // reads the receivers and caches them
    const from = sent.length;
    const moved0 = moved;
    await post(ws); // expects them
    expect(await deliveriesTo(hook.id)).toBe(2);
    if (postgres) expect(assertions(from)).toBe(1);
    expect(moved).toBe(moved0);

    await otherServices.webhooks.setStatus(
      otherServices.uow.as(await keyPrincipal(otherServices, ws.live)),
      hook.id,
      'disabled',
    );
    await post(ws); // expects the old token: fails before its commit, runs again and reads them
    expect(await deliveriesTo(hook.id)).toBe(2);
    expect(moved).toBe(postgres ? moved0 + 1 : moved0);
    await post(ws); // holds the new ones: no retry
    expect(moved).toBe(postgres ? moved0 + 1 : moved0);
    expect(await deliveriesTo(hook.id)).toBe(2);

    await otherServices.webhooks.setStatus(
      otherServices.uow.as(await keyPrincipal(otherServices, ws.live)),
      hook.id,
      'enabled',
    );
    await post(ws);
    expect(await deliveriesTo(hook.id)).toBe(3);
    expect(moved).toBe(postgres ? moved0 + 2 : moved0);
    // One resource and one event per POST: a write that failed on the token committed nothing.
    expect(await count('resources', ws.id)).toBe(5);
    // Five resource events, and the endpoint's webhook.disabled and webhook.enabled (recorded with no receiver).
    expect(await count('events', ws.id)).toBe(7);
  });

  it("needs no retry after a change by this process: it drops the workspace's cached webhooks", async () => {
    const ws = await newWorkspace(t);
    const p = await keyPrincipal(t.services, ws.live);
    const hook = await t.services.webhooks.create(t.services.uow.as(p), { url: URL, events: ['*'] });
    await post(ws);
    await post(ws);
    const moved0 = moved;
    await t.services.webhooks.setStatus(t.services.uow.as(p), hook.id, 'disabled');
    await post(ws);
    await t.services.webhooks.setStatus(t.services.uow.as(p), hook.id, 'enabled');
    await post(ws);
    expect(await deliveriesTo(hook.id)).toBe(3);
    expect(moved).toBe(moved0);
  });

  it.runIf(postgres)(
    'sees a change committed while a write that expects the old receivers waits in its transaction',
    async () => {
      const ws = await newWorkspace(t);
      const p = await keyPrincipal(t.services, ws.live);
      const hook = await t.services.webhooks.create(t.services.uow.as(p), { url: URL, events: ['*'] });
      await post(ws);
      expect(await deliveriesTo(hook.id)).toBe(1);
      const moved0 = moved;
      // Another session blocks resource inserts: the write's string (its event's insert and assertion after its
      // resource's) waits there, in its transaction, while the change commits.
      const schema = (t.storage as Storage & { schema?: string }).schema;
      const locker = new pg.Client({
        connectionString: process.env.TEST_DATABASE_URL,
        options: `-c search_path=${schema}`,
      });
      await locker.connect();
      try {
        await locker.query('begin');
        await locker.query('lock table resources in share mode');
        const write = post(ws);
        let waiting = false;
        for (let i = 0; i < 500 && !waiting; i++) {
          const { rows } = await sql<{ n: string }>`select count(*) as n from pg_locks
          where relation = 'resources'::regclass and not granted`.execute(t.storage.db);
          waiting = Number(rows[0]?.n) > 0;
          if (!waiting) await new Promise((r) => setTimeout(r, 10));
        }
        expect(waiting).toBe(true);
        await otherServices.webhooks.setStatus(
          otherServices.uow.as(await keyPrincipal(otherServices, ws.live)),
          hook.id,
          'disabled',
        );
        await locker.query('commit');
        await write;
      } finally {
        await locker.end();
      }
      expect(await deliveriesTo(hook.id)).toBe(1);
      expect(moved).toBe(moved0 + 1);
      expect(await count('resources', ws.id)).toBe(2);
    },
  );
});
