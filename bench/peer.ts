// Benchmark (docs/performance.md#a-peer): this tree against a peer, a well-known API server users could pick
// instead: Directus (source-available, BUSL-1.1), installed in bench/peer/ (its own package.json and lock file, `npm ci` there on first
// use; the product's lock file does not carry it). Per backend, one Directus on its own database (a SQLite file in
// WAL mode, or a PostgreSQL database `bench_peer_*` created for the run and dropped after it), bootstrapped with an
// admin, a `resources` collection shaped like ours (id, name, type, status, JSON metadata, created/updated times)
// and a non-admin user whose static token may create and read it; and our server (bench/against.ts, startSide).
// The same operations, create, read by id and a list of 20 newest first with a total, run on both in interleaved
// rounds, alternating which goes first; a row's ratio is our req/s over the peer's in the same round.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { AB_SCENARIOS, startSide } from './against.js';
import { type Backend, type Child, freePort, load, ROOT, startChild } from './harness.js';
import { median, type Round, type Row, summarise } from './report.js';

const PEER_DIR = join(ROOT, 'bench/peer');
/** Directus's CLI without its `directus` wrapper, which asks the npm registry for a newer version when it starts. */
const CLI = join(PEER_DIR, 'node_modules/@directus/api/dist/cli/run.js');
const COLLECTION = 'resources';

/** Installs the peer (bench/peer/package-lock.json) when it is not there yet; returns its name and version. */
export function preparePeer(log: (line: string) => void): string {
  if (!existsSync(CLI)) {
    log('installing the peer in bench/peer (npm ci; it compiles isolated-vm and sqlite3: a few minutes)');
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: PEER_DIR, stdio: 'inherit' });
  }
  const pkg = JSON.parse(readFileSync(join(PEER_DIR, 'node_modules/directus/package.json'), 'utf8')) as {
    version: string;
  };
  return `Directus ${pkg.version}`;
}

/** One operation on both servers: ours from bench/against.ts, the peer's request built from items it created. */
interface PeerScenario {
  name: string;
  peer(api: PeerApi): Promise<autocannon.Request[]>;
}

const item = { name: 'bench', type: 'standard', metadata: { a: 'b' } };

const PEER_SCENARIOS: PeerScenario[] = [
  {
    name: 'GET /v1/resources/{id}',
    async peer(api) {
      const [id] = await api.create(1);
      return [{ method: 'GET', path: `/items/${COLLECTION}/${id}` }];
    },
  },
  {
    name: 'GET /v1/resources?limit=20',
    async peer(api) {
      await api.create(40);
      // Newest first with the total, as ours answers (`meta.total`).
      return [{ method: 'GET', path: `/items/${COLLECTION}?limit=20&sort=-date_created&meta=filter_count` }];
    },
  },
  {
    name: 'POST /v1/resources',
    peer: async () => [{ method: 'POST', path: `/items/${COLLECTION}`, body: JSON.stringify(item) }],
  },
];

interface PeerApi {
  server: Child;
  headers: Record<string, string>;
  create(n: number): Promise<string[]>;
  stop(): Promise<void>;
}

async function call(port: number, token: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`peer: ${method} ${path}: ${res.status} ${text}`);
  return text ? (JSON.parse(text) as { data: unknown }).data : null;
}

/** A database of its own, Directus bootstrapped on it and started, the collection and the user's token made. */
async function startPeer(backend: Backend, dir: string): Promise<PeerApi> {
  const suffix = randomBytes(4).toString('hex');
  const home = join(dir, `peer_${suffix}`);
  mkdirSync(join(home, 'extensions'), { recursive: true });
  const adminToken = randomBytes(24).toString('hex');
  const token = randomBytes(24).toString('hex');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    KEY: randomBytes(16).toString('hex'),
    SECRET: randomBytes(32).toString('hex'),
    ADMIN_EMAIL: 'bench@example.com',
    ADMIN_PASSWORD: randomBytes(12).toString('hex'),
    ADMIN_TOKEN: adminToken,
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'warn',
    TELEMETRY: 'false',
    WEBSOCKETS_ENABLED: 'false',
    RATE_LIMITER_ENABLED: 'false',
    // Its pressure limiter answers 503 while the event loop lags (18 reads failed on this loaded machine with it
    // on); ours sheds nothing.
    PRESSURE_LIMITER_ENABLED: 'false',
    CACHE_ENABLED: 'false',
    EXTENSIONS_PATH: join(home, 'extensions'),
    STORAGE_LOCAL_ROOT: join(home, 'uploads'),
  };
  let drop = async () => {};
  if (backend === 'postgres') {
    const pgUrl = process.env.TEST_DATABASE_URL ?? '';
    const database = `bench_peer_${suffix}`;
    const admin = async (text: string) => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      try {
        await c.query(text);
      } finally {
        await c.end();
      }
    };
    await admin(`create database ${database}`);
    drop = () => admin(`drop database if exists ${database} with (force)`);
    const url = new URL(pgUrl);
    url.pathname = `/${database}`;
    Object.assign(env, { DB_CLIENT: 'pg', DB_CONNECTION_STRING: url.toString(), DB_POOL__MAX: '16' });
  } else {
    Object.assign(env, { DB_CLIENT: 'sqlite3', DB_FILENAME: join(home, 'data.db') });
  }
  try {
    execFileSync(process.execPath, [CLI, 'bootstrap'], { cwd: home, env: { ...process.env, ...env }, stdio: 'pipe' });
    if (backend === 'sqlite') {
      // Ours runs SQLite in WAL mode with synchronous=FULL; Directus leaves the rollback journal. WAL is kept in the
      // file, so the peer gets the same journal (and SQLite's default synchronous=FULL).
      const db = new SqliteDatabase(env.DB_FILENAME as string);
      db.pragma('journal_mode = WAL');
      db.close();
    }
    const server = await startChild([CLI, 'start'], env, null, port, [], { healthPath: '/server/ping', cwd: home });
    const as = (t: string, method: string, path: string, body?: unknown) => call(port, t, method, path, body);
    try {
      await as(adminToken, 'POST', '/collections', {
        collection: COLLECTION,
        meta: {},
        schema: {},
        fields: [
          {
            field: 'id',
            type: 'uuid',
            meta: { special: ['uuid'], hidden: true, readonly: true },
            schema: { is_primary_key: true },
          },
          { field: 'name', type: 'string', schema: { is_nullable: false } },
          { field: 'type', type: 'string' },
          { field: 'status', type: 'string', schema: { default_value: 'active' } },
          { field: 'metadata', type: 'json' },
          { field: 'date_created', type: 'timestamp', meta: { special: ['date-created'] } },
          { field: 'date_updated', type: 'timestamp', meta: { special: ['date-updated'] } },
        ],
      });
      // A key of ours is not an admin: the peer's token belongs to a user whose one policy may create and read.
      const policy = (await as(adminToken, 'POST', '/policies', {
        name: 'bench',
        admin_access: false,
        app_access: false,
        permissions: ['create', 'read'].map((action) => ({ collection: COLLECTION, action, fields: ['*'] })),
      })) as { id: string };
      await as(adminToken, 'POST', '/users', {
        email: 'api@example.com',
        token,
        policies: [{ policy: policy.id }],
      });
    } catch (err) {
      await server.stop();
      throw err;
    }
    return {
      server,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      async create(n) {
        const ids: string[] = [];
        for (let i = 0; i < n; i++) {
          const body = { ...item, name: `r${i}`, metadata: { i: String(i) } };
          ids.push(((await as(token, 'POST', `/items/${COLLECTION}`, body)) as { id: string }).id);
        }
        return ids;
      },
      async stop() {
        await server.stop();
        await drop();
      },
    };
  } catch (err) {
    await drop();
    throw err;
  }
}

/** The three operations on every backend: this tree (candidate) against the peer, in interleaved rounds. */
export async function runPeer(opts: {
  peer: string;
  backends: Backend[];
  duration: number;
  rounds: number;
  only?: string;
  onRow?(row: Row): void;
}): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-bench-peer-'));
  try {
    for (const backend of opts.backends) {
      // One server of each per backend: the reads run before the creates, on the items the scenarios made.
      const peer = await startPeer(backend, dir);
      const ours = await startSide(ROOT, backend, dir, 'ours');
      try {
        for (const sc of PEER_SCENARIOS) {
          if (opts.only && !sc.name.includes(opts.only)) continue;
          const mine = AB_SCENARIOS.find((s) => s.name === sc.name);
          if (!mine) throw new Error(`no scenario ${sc.name} in bench/against.ts`);
          const oursReq = await mine.requests(ours.server.port, ours.headers);
          const peerReq = await sc.peer(peer);
          // Warm-up of both, as long as a round: Directus's CPU per GET by id fell from 4.5 ms over its first 4 s
          // of load to about 3 ms after (one second, the A/B runs' warm-up, left it far higher).
          await load(peer.server, opts.duration, peerReq, peer.headers);
          await load(ours.server, opts.duration, oursReq, ours.headers);
          const done: Round[] = [];
          for (let i = 0; i < opts.rounds; i++) {
            const peerFirst = i % 2 === 0;
            const a = peerFirst ? await load(peer.server, opts.duration, peerReq, peer.headers) : undefined;
            const c = await load(ours.server, opts.duration, oursReq, ours.headers);
            const b = a ?? (await load(peer.server, opts.duration, peerReq, peer.headers));
            done.push({ base: b, cand: c, ratio: b.rps ? c.rps / b.rps : 0 });
          }
          const at = (f: (r: Round) => number) => Math.round(median(done.map(f)));
          const db = backend === 'postgres' ? ` + db ${at((r) => r.base.dbCpuUs ?? 0)}` : '';
          const failed = done.reduce((n, r) => n + r.base.non2xx, 0);
          const row: Row = {
            ...summarise(backend, sc.name, done, ours.server.peakRssMb()),
            note:
              `ratio: to ${opts.peer}, ${at((r) => r.base.rps)} req/s, p99 ${at((r) => r.base.p99)} ms, ` +
              `${at((r) => r.base.cpuUs ?? 0)} µs CPU/req${db}, ${failed} non-2xx, ` +
              `peak RSS ${peer.server.peakRssMb()} MB there`,
          };
          rows.push(row);
          opts.onRow?.(row);
        }
      } finally {
        await peer.stop();
        await ours.server.stop();
        await ours.drop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
