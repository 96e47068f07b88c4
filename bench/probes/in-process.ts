// The in-process app the request benchmarks share (bench/event-write.ts, bench/read-trips.ts): the real app through
// Fastify's inject (no sockets) on a fresh database (a SQLite file, or a schema of its own on PostgreSQL, dropped
// after) and, with a Redis URL, the shared Redis (rate limits, the key-cache epoch) under a prefix of its own; and the
// counters of what reaches each server: every pg query call (BEGIN and COMMIT included) and every ioredis command.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openStorage, type Storage } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { openRedis, waitForRedis } from '../../src/db/redis.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices, type Services } from '../../src/services.js';

/** Statements sent to PostgreSQL by kind (their first three words, up to a parenthesis), counted from the first call. */
export const pgStatements = new Map<string, number>();
/** Commands sent to Redis by name, counted from the first call. */
export const redisCommands = new Map<string, number>();
/**
 * pg query calls: each reaches PostgreSQL as one round trip, a simple-query string of several statements (held
 * deferred statements, src/db/pg-driver.ts) too, while `pgStatements` counts each of its statements.
 */
export const pgRoundTrips = { n: 0 };
let counting = false;

/** Starts counting every pg query and ioredis command of this process (once; the maps are cleared by the caller). */
export function countRoundTrips(): void {
  if (counting) return;
  counting = true;
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const a = args[0] as string | { text?: string; name?: string };
    const text = typeof a === 'string' ? a : (a?.text ?? '');
    pgRoundTrips.n += 1;
    for (const part of typeof a === 'string' ? text.split(';\n') : [text]) {
      const kind = part.trim().split(/\s+/).slice(0, 3).join(' ').toLowerCase().replace(/\(.*/, '').slice(0, 40);
      pgStatements.set(kind, (pgStatements.get(kind) ?? 0) + 1);
    }
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
  const send = Redis.prototype.sendCommand as (...args: unknown[]) => unknown;
  Redis.prototype.sendCommand = function (this: Redis, ...args: unknown[]) {
    const name = String((args[0] as { name?: string } | undefined)?.name ?? '?');
    redisCommands.set(name, (redisCommands.get(name) ?? 0) + 1);
    return send.apply(this, args);
  } as typeof Redis.prototype.sendCommand;
}

/** The sum of a counter map. */
export const sumOf = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

export interface InProcess {
  app: FastifyInstance;
  services: Services;
  storage: Storage;
  backend: 'sqlite' | 'postgres';
  redis?: Redis;
  close(): Promise<void>;
}

/** The app on a fresh database: PostgreSQL when `pgUrl` is set, else SQLite; Redis when `redisUrl` is set. */
export async function openInProcess(opts: { name: string; pgUrl?: string; redisUrl?: string }): Promise<InProcess> {
  const dir = mkdtempSync(join(tmpdir(), `wsvc-${opts.name}-`));
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  let url: string;
  let storage: Storage;
  if (opts.pgUrl) {
    url = opts.pgUrl;
    const admin = openStorage({ url: opts.pgUrl, poolSize: 1 });
    await sql.raw(`create schema ${schema}`).execute(admin.db);
    await admin.close();
    storage = openStorage({ url: opts.pgUrl, poolSize: 5, schema });
  } else {
    url = `sqlite:${join(dir, `${opts.name}.db`)}`;
    storage = openStorage({ url });
  }
  const redis = opts.redisUrl ? openRedis(opts.redisUrl) : undefined;
  const close = async () => {
    await storage.close();
    redis?.disconnect();
    if (opts.pgUrl) {
      const cleanup = openStorage({ url: opts.pgUrl, poolSize: 1 });
      await sql.raw(`drop schema ${schema} cascade`).execute(cleanup.db);
      await cleanup.close();
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await migrateToLatest(storage.db, storage.dialect);
    const config = loadConfig({
      DATABASE_URL: url,
      SECRETS_KEY: process.env.SECRETS_KEY,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_LIVE: '100000000',
      PLAN_LIMITS: 'off',
      REDIS_KEY_PREFIX: `wsvc-bench:${schema}:`,
    } as NodeJS.ProcessEnv);
    const resolveHost = async () => ['93.184.216.34'];
    const services = createServices({ storage, clock: systemClock, config, resolveHost });
    const app = await buildApp({ config, storage, services, redis, rateLimitNamespace: `wsvc-bench:${schema}:rl:` });
    await app.ready();
    if (redis) await waitForRedis(redis, 5000);
    return {
      app,
      services,
      storage,
      backend: opts.pgUrl ? 'postgres' : 'sqlite',
      redis,
      async close() {
        await app.close();
        await close();
      },
    };
  } catch (err) {
    await close();
    throw err;
  }
}
