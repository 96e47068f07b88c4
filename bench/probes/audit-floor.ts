// Probe `audit-floor` (docs/performance.md#probes): what an audit entry costs SQLite itself, without any JavaScript of
// ours: better-sqlite3 statements on the product's own tables (a fresh file migrated to the latest schema), run as the
// write queue runs them: batches of 32 changes, each in its savepoint, one COMMIT per batch (WAL, synchronous=FULL).
// Each change writes a resource row and its event row (what a POST writes anyway) and, in the second shape, its audit
// entry the way the append does (head upsert, entry insert, head update) with the entry's SHA-256; two more shapes
// split the entry into its insert alone and its head statements alone. CPU µs per change (user + system: the commit's
// WAL writes and fsync are system time), median of interleaved rounds.
// Run: `npm run bench -- --probe audit-floor [--rounds 7] [--batches 200]`.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { migrateToLatest } from '../../src/db/migrate.js';
import { openSqlite } from '../../src/db/sqlite.js';

const PER_BATCH = 32;
const WS = 'ws_01KB0000000000000000000001';
const CHANGES =
  '{"metadata":{"after":{"a":"b"},"before":null},"name":{"after":"x","before":null},"status":{"after":"active","before":null},"type":{"after":"standard","before":null}}';

type Shape = 'rows' | 'rows+entry' | 'rows+insert' | 'rows+head';
const SHAPES: Shape[] = ['rows', 'rows+entry', 'rows+insert', 'rows+head'];
let n = 0;
const id = (prefix: string) => `${prefix}_01KB${String(++n).padStart(22, '0')}`;

async function measure(shape: Shape, BATCHES: number): Promise<{ user: number; system: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-floor-'));
  const { db, dialect, raw } = openSqlite(join(dir, 'floor.db'));
  try {
    await migrateToLatest(db, dialect);
    raw
      .prepare(
        "insert into workspaces (id, name, created_at, updated_at) values (?, 'floor', '2026-11-27T00:00:00.000Z', '2026-11-27T00:00:00.000Z')",
      )
      .run(WS);
    const resource = raw.prepare(
      "insert into resources (id, workspace_id, env, name, type, status, metadata, created_at, updated_at) values (?, ?, 'live', 'x', 'standard', 'active', '{\"a\":\"b\"}', ?, ?)",
    );
    const event = raw.prepare(
      "insert into events (id, workspace_id, env, type, resource_id, payload, created_at) values (?, ?, 'live', 'resource.created', ?, ?, ?)",
    );
    const lockHead = raw.prepare(
      "insert into audit_heads (workspace_id, seq, hash, anchor_seq, anchor_hash) values (?, 0, '', 0, '') on conflict (workspace_id) do update set seq = audit_heads.seq returning seq, hash",
    );
    const entry = raw.prepare(
      'insert into audit_entries (id, workspace_id, seq, time, actor_type, actor_id, actor_name, actor_user_id, action, target_type, target_id, env, changes, request_id, ip, user_agent, hash) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const setHead = raw.prepare('update audit_heads set seq = ?, hash = ? where workspace_id = ?');
    const [begin, commit, savepoint, release] = ['begin immediate', 'commit', 'savepoint w', 'release w'].map((s) =>
      raw.prepare(s),
    ) as [typeof entry, typeof entry, typeof entry, typeof entry];
    const cpu0 = process.cpuUsage();
    for (let b = 0; b < BATCHES; b++) {
      begin.run();
      for (let i = 0; i < PER_BATCH; i++) {
        savepoint.run();
        const now = new Date().toISOString();
        const rid = id('res');
        resource.run(rid, WS, now, now);
        event.run(id('evt'), WS, rid, `{"id":"evt","data":{"resource_id":"${rid}"}}`, now);
        if (shape !== 'rows') {
          // rows+insert: numbered without reading or writing the head.
          const head =
            shape === 'rows+insert' ? { seq: ++n, hash: '' } : (lockHead.get(WS) as { seq: number; hash: string });
          const seq = head.seq + 1;
          const row = [
            id('aud'),
            WS,
            seq,
            now,
            'key',
            'key_01KB0000000000000000000001',
            'bench key',
            'usr_01KB0000000000000000000001',
            'resource.created',
            'resource',
            rid,
            'live',
            CHANGES,
            'req_01KB00000000000000000001',
            '127.0.0.1',
            'autocannon',
          ];
          const hash = createHash('sha256')
            .update(head.hash + JSON.stringify(row))
            .digest('hex');
          if (shape !== 'rows+head') entry.run(...row, hash);
          if (shape !== 'rows+insert') setHead.run(seq, hash, WS);
        }
        release.run();
      }
      commit.run();
    }
    const c = process.cpuUsage(cpu0);
    return { user: c.user / (BATCHES * PER_BATCH), system: c.system / (BATCHES * PER_BATCH) };
  } finally {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the probe with its command-line options (`args`, after the probe's name). */
export async function run(args: string[]): Promise<void> {
  const opts = new Command('audit-floor')
    .option('--rounds <n>', 'interleaved rounds of the four shapes', Number, 7)
    .option('--batches <n>', 'batches of 32 changes per shape and round', Number, 200)
    .parse(args, { from: 'user' })
    .opts<{ rounds: number; batches: number }>();
  const ROUNDS = opts.rounds;
  const BATCHES = opts.batches;
  const results = new Map<Shape, { user: number; system: number }[]>(SHAPES.map((s) => [s, []]));
  process.stdout.write(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${ROUNDS} rounds of ${BATCHES} batches of ${PER_BATCH}\n`,
  );
  await measure('rows+entry', BATCHES); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    // Interleaved, a different shape first each round.
    for (let i = 0; i < SHAPES.length; i++) {
      const shape = SHAPES[(i + r) % SHAPES.length] as Shape;
      results.get(shape)?.push(await measure(shape, BATCHES));
    }
  }
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] as number;
  const total = (shape: Shape) => median((results.get(shape) ?? []).map((x) => x.user + x.system));
  for (const [shape, a] of results) {
    const line = `${shape.padEnd(12)} ${total(shape).toFixed(1).padStart(6)} µs CPU per change (user ${median(a.map((x) => x.user)).toFixed(1)}, system ${median(a.map((x) => x.system)).toFixed(1)}; rounds ${a.map((x) => (x.user + x.system).toFixed(0)).join(' ')})`;
    process.stdout.write(`${line}\n`);
  }
  process.stdout.write(
    `the entry: ${(total('rows+entry') - total('rows')).toFixed(1)} µs of CPU per change (${((100 * (total('rows+entry') - total('rows'))) / total('rows')).toFixed(0)} % of the rows alone)\n`,
  );
}
