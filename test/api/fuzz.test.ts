import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli, json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { type Contract, contractOf } from '../helpers/contract.js';
import { type FuzzContext, type FuzzRequest, operationsOf, requestsFor } from '../helpers/fuzz.js';

// Backends: both — generated requests through every operation write and read real rows (a NUL character was a 500 on PostgreSQL only)
// Tier: quick — 1,000 requests in `npm test`, 5,000 (SQLite) and 2,500 (PostgreSQL) in the full tier
// Schema-driven fuzzing of every operation of the served OpenAPI document (docs/api.md#the-openapi-document):
// at least 5,000 hostile and boundary requests per full run (FUZZ_RUNS to change), each answered
// without a 5xx, with the error body on every error, with a documented status, headers and body
// (the contract of test/helpers/contract.ts), and without echoing a key or a webhook secret.

// 5,000 on SQLite; 2,500 more on PostgreSQL, where each write costs more, to keep the run short; 1,000
// in the quick tier (`npm test`, WSVC_TEST_TIER=quick), a contributor's check before each commit.
const RUNS = Number(
  process.env.FUZZ_RUNS ??
    (process.env.WSVC_TEST_TIER === 'quick' ? 1000 : process.env.WSVC_TEST_PROJECT === 'postgres' ? 2500 : 5000),
);

let t: TestApp;
let contract: Contract;
let ctx: FuzzContext;
const secrets: string[] = [];
const statuses = new Map<number, number>();
const perOperation = new Map<string, number>();

beforeAll(async () => {
  t = await startTestApp({
    config: { RATE_LIMIT_LIVE: 1_000_000, RATE_LIMIT_TEST: 1_000_000 },
    // Webhook URLs resolve to a public address without the network; nothing is delivered here.
    resolveHost: async () => ['93.184.216.34'],
  });
  contract = await contractOf(t.app);
  const ws = await newWorkspace(t);
  const viewer = await ws.member('viewer');
  const revoked = await ws.key(ws.adminId, 'live');
  await t.services.keyRegistry.revoke(asCli(t.services), revoked.id);
  const other = await newWorkspace(t, 'Other workspace');
  secrets.push(ws.live, ws.test, viewer.live, revoked.key, other.live);
  ctx = {
    doc: contract.doc,
    ids: new Map(),
    auth: [
      `Bearer ${ws.live}`,
      `Bearer ${ws.test}`,
      `Bearer ${viewer.live}`,
      `Bearer ${revoked.key}`,
      `Bearer ${other.live}`,
      `Bearer svc_live_${'a'.repeat(43)}`,
      `Basic ${ws.live}`,
      'Bearer',
      '',
    ],
  };
  // Objects to aim at: a webhook, then a resource (so an event and a delivery exist).
  const hook = json(
    await t.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: ws.live,
      body: { url: 'https://hooks.example.com/in', events: ['*'] },
    }),
  );
  secrets.push(hook.data.secret);
  await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: 'a', type: 'standard' } });
  await refreshIds(ws.live);
}, 60_000);
afterAll(() => t?.close());

async function refreshIds(key: string) {
  const list = async (url: string) =>
    (json(await t.request({ method: 'GET', url, key })).data ?? []).map((x: { id: string }) => x.id) as string[];
  const hooks = await list('/v1/webhooks?limit=100');
  const deliveries = hooks.length > 0 ? await list(`/v1/webhooks/${hooks[0]}/deliveries?limit=100`) : [];
  ctx.ids.set('wh_', hooks);
  ctx.ids.set('res_', await list('/v1/resources?limit=100'));
  ctx.ids.set('evt_', await list('/v1/events?limit=100'));
  ctx.ids.set('dlv_', deliveries);
  ctx.ids.set('usr_', await list('/v1/users?limit=100'));
}

async function send(req: FuzzRequest) {
  // Straight to the app (not through the helpers' checked inject): the checks are the property's.
  const res = await t.app.inject({
    method: req.method as 'GET',
    url: req.url,
    headers: req.headers,
    payload: req.payload,
  });
  statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
  perOperation.set(req.operation, (perOperation.get(req.operation) ?? 0) + 1);
  const where = `${req.method} ${req.url} → ${res.statusCode}: ${res.body.slice(0, 300)}`;
  expect(res.statusCode, where).toBeLessThan(500);
  expect(contract.check(req.method, req.url, res), where).toEqual([]);
  if (res.statusCode >= 400 && req.method !== 'HEAD') {
    const body = JSON.parse(res.body);
    expect(Object.keys(body), where).toEqual(['error']);
    // A replayed answer is the first one byte for byte, its request id included (docs/api.md#idempotency-details).
    if (res.headers['idempotent-replayed'] !== 'true')
      expect(body.error.request_id, where).toBe(res.headers['x-request-id']);
  }
  const echoed = `${res.body}\n${JSON.stringify(res.headers)}`;
  for (const secret of secrets) expect(echoed.includes(secret), `${where}: echoes a key or secret`).toBe(false);
  // A webhook secret is shown only when it is made: creation (201) and rotate-secret (200).
  const showsSecret =
    req.method === 'POST' && (res.statusCode === 201 || (res.statusCode === 200 && req.url.endsWith('/rotate-secret')));
  expect(/whsec_/.test(echoed) && !showsSecret, where).toBe(false);
}

describe('fuzzing every operation from the OpenAPI document', () => {
  it(`answers ${RUNS} hostile and boundary requests with documented, non-5xx answers`, async () => {
    const operations = operationsOf(contract.doc);
    expect(operations.length).toBeGreaterThan(10);
    const arbitrary = fc.oneof(...operations.map((op) => requestsFor(ctx, op)));
    let n = 0;
    await fc.assert(
      fc.asyncProperty(arbitrary, async (req) => {
        if (++n % 500 === 0) await refreshIds(secrets[0] as string);
        await send(req);
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    const total = [...statuses.values()].reduce((a, b) => a + b, 0);
    const distribution = Object.fromEntries([...statuses].sort(([a], [b]) => a - b));
    console.log(
      `fuzz: ${total} requests over ${operations.length} operations; statuses ${JSON.stringify(distribution)}`,
    );
    expect(total).toBeGreaterThanOrEqual(RUNS);
    for (const op of operations)
      expect(perOperation.get(`${op.method} ${op.path}`) ?? 0, op.path).toBeGreaterThan(RUNS / operations.length / 4);
    // The run reached the handlers, not only the guards in front of them.
    for (const s of [200, 201, 400, 401, 403, 404, 405, 415])
      expect(statuses.get(s) ?? 0, `status ${s}`).toBeGreaterThan(0);
  }, 240_000);
});
