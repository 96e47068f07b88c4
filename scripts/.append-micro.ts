import { openStorage } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { loadConfig } from '../src/config.js';
import { systemClock } from '../src/kernel/clock.js';
import { createServices } from '../src/services.js';
import { systemActor } from '../src/kernel/principal.js';
import { changesOf } from '../src/modules/audit/changes.js';
import { sql } from 'kysely';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
const url = process.env.URL ?? `sqlite://${mkdtempSync(`${tmpdir()}/am-`)}/db.sqlite`;
const storage = openStorage({ url });
await migrateToLatest(storage.db, storage.dialect);
const config = loadConfig({}, { DATABASE_URL: url, LOG_LEVEL: 'silent', PLAN_LIMITS: 'off' });
const s = createServices({ storage, clock: systemClock, config });
const ws = await s.workspaces.create({ name: 'm', adminEmail: 'm@example.test' });
const actor = systemActor('cli');
const N = 3000;
async function run(withAudit: boolean) {
  const t0 = process.cpuUsage(); const w0 = performance.now();
  for (let i = 0; i < N; i += 32) {
    await Promise.all(Array.from({ length: 32 }, (_, j) => s.writeAs(actor, async (trx, audit) => {
      await sql`update resource_counts set n = n where workspace_id = ${ws.workspace.id}`.execute(trx);
      await sql`insert into events (id, workspace_id, env, type, resource_id, payload, created_at) values (${`evt_${i}_${j}_${withAudit}_${Math.random()}`}, ${ws.workspace.id}, 'live', 'resource.created', null, '{}', '2026-01-01T00:00:00.000Z')`.execute(trx);
      if (withAudit) audit.record({ workspaceId: ws.workspace.id, action: 'resource.created', target: { type: 'resource', id: `res_${i}` }, env: 'live', changes: changesOf(null, { name: 'x', type: 'document', status: 'active', metadata: { a: 1 } }) });
    })));
  }
  const c = process.cpuUsage(t0);
  return { cpu: (c.user + c.system) / N, wall: ((performance.now() - w0) * 1000) / N };
}
for (let r = 0; r < 3; r++) {
  const a = await run(false); const b = await run(true);
  console.log(`empty: cpu ${a.cpu.toFixed(1)} µs wall ${a.wall.toFixed(1)} | audit: cpu ${b.cpu.toFixed(1)} µs wall ${b.wall.toFixed(1)}`);
}
await storage.close();
