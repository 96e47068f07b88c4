// The memory of a workspace export (docs/data-lifecycle.md#export): a fresh SQLite file seeded in bulk with
// RESOURCES resources and DELIVERIES events and deliveries (plain SQL, not the API), then one export run in this
// process while its RSS is sampled every 50 ms. Prints the seed time, the export's time, the RSS before and at its
// peak, and the archive's size.
//   npx tsx bench/export-rss.ts [resources=200000] [deliveries=50000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { openStorage } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/kernel/clock.js';
import { newId } from '../src/kernel/ids.js';
import { systemActor } from '../src/kernel/principal.js';
import { createServices } from '../src/services.js';

const RESOURCES = Number(process.argv[2] ?? 200_000);
const DELIVERIES = Number(process.argv[3] ?? 50_000);
const CHUNK = 500;

const dir = mkdtempSync(join(tmpdir(), 'wsvc-export-rss-'));
const url = `sqlite:${join(dir, 'bench.db')}`;
const storage = openStorage({ url });
await migrateToLatest(storage.db, storage.dialect);
const config = loadConfig({}, { DATABASE_URL: url, LOG_LEVEL: 'silent', PLAN_LIMITS: 'off' });
const s = createServices({ storage, clock: systemClock, config });
const cli = s.uow.as(systemActor('cli'));
const ws = await s.workspaces.create(cli, { name: 'Large', adminEmail: 'large@example.test' });
const workspaceId = ws.workspace.id;

const seedStart = performance.now();
const at = new Date().toISOString();
const metadata = JSON.stringify({ team: 'bench', tier: 'gold', note: 'x'.repeat(80) });
for (let i = 0; i < RESOURCES; i += CHUNK) {
  const rows = Array.from({ length: Math.min(CHUNK, RESOURCES - i) }, (_, j) => ({
    id: newId('resource'),
    workspace_id: workspaceId,
    env: (j % 2 === 0 ? 'live' : 'test') as 'live' | 'test',
    name: `Resource ${i + j}`,
    type: 'standard' as const,
    status: 'active' as const,
    metadata,
    created_at: at,
    updated_at: at,
  }));
  await storage.db.insertInto('resources').values(rows).execute();
}
const webhookId = newId('webhook');
await storage.db
  .insertInto('webhooks')
  .values({
    id: webhookId,
    workspace_id: workspaceId,
    env: 'live',
    url: 'https://93.184.216.34/bench',
    events: JSON.stringify(['*']),
    label: null,
    status: 'enabled',
    secret: 'whsec_bench',
    created_at: at,
    updated_at: at,
  })
  .execute();
for (let i = 0; i < DELIVERIES; i += CHUNK) {
  const n = Math.min(CHUNK, DELIVERIES - i);
  const events = Array.from({ length: n }, () => ({
    id: newId('event'),
    workspace_id: workspaceId,
    env: 'live' as const,
    type: 'resource.created' as const,
    resource_id: null,
    payload: JSON.stringify({ id: 'evt', type: 'resource.created', data: { name: 'x' } }),
    created_at: at,
  }));
  await storage.db.insertInto('events').values(events).execute();
  await storage.db
    .insertInto('deliveries')
    .values(
      events.map((e) => ({
        id: newId('delivery'),
        webhook_id: webhookId,
        event_id: e.id,
        event_type: e.type,
        workspace_id: workspaceId,
        env: 'live' as const,
        status: 'succeeded' as const,
        attempt_count: 1,
        next_attempt_at: null,
        lease_until: null,
        leased_by: null,
        last_response_status: 200,
        last_error: null,
        created_at: at,
        updated_at: at,
      })),
    )
    .execute();
}
const seedS = (performance.now() - seedStart) / 1000;

global.gc?.();
const before = process.memoryUsage().rss;
let peak = before;
const sampler = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 50);
const exportStart = performance.now();
const requested = await s.exports.request(cli, workspaceId);
await s.exports.runDue(cli, { only: requested.id });
const exportS = (performance.now() - exportStart) / 1000;
clearInterval(sampler);
peak = Math.max(peak, process.memoryUsage().rss);
const done = await s.exports.downloadFor(workspaceId, requested.id);
const mb = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MB`;
console.log(
  JSON.stringify({
    resources: RESOURCES,
    deliveries: DELIVERIES,
    events: DELIVERIES,
    seed_s: Number(seedS.toFixed(1)),
    export_s: Number(exportS.toFixed(1)),
    rss_before: mb(before),
    rss_peak: mb(peak),
    archive: mb(done.size),
  }),
);
await storage.close();
rmSync(dir, { recursive: true, force: true });
