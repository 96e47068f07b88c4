import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Redis } from 'ioredis';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';
import { openStorage, type Storage } from '../../src/db/database.js';
import { openRedis, type RedisLog, waitForRedis } from '../../src/db/redis.js';
import type { Env, Role } from '../../src/db/types.js';
import { type Clock, systemClock } from '../../src/kernel/clock.js';
import { type ApiKeyPrincipal, type SystemActor, systemActor } from '../../src/kernel/principal.js';
import type { Send } from '../../src/lib/http-send.js';
import type { PaymentGateway } from '../../src/modules/billing/stripe-gateway.js';
import type { SsoFetch } from '../../src/modules/sso/sso.service.js';
import type { Unit } from '../../src/platform/unit-of-work.js';
import { createServices, type Services } from '../../src/services.js';
import { contractOf } from './contract.js';
import { openTestStorage } from './storage.js';

export interface TestApp {
  app: FastifyInstance;
  storage: Storage;
  services: Services;
  config: Config;
  /** The shared Redis (TEST_REDIS_URL or opts.redisUrl), when the run has one. */
  redis?: Redis;
  /** An HTTP request through the real app (routing, hooks, validation, serialization). */
  request(opts: {
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | 'OPTIONS';
    url: string;
    key?: string;
    body?: unknown;
    headers?: Record<string, string>;
  }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** Starts the real app on a fresh real database (see storage.ts). */
export async function startTestApp(
  opts: {
    config?: Partial<Config>;
    clock?: Clock;
    /** Use this storage (e.g. one reached through a cuttable proxy) instead of a fresh one. */
    storage?: Storage & { url: string };
    /** Redis to use instead of TEST_REDIS_URL; `null` for none. */
    redisUrl?: string | null;
    /** Rate-limit key namespace; apps sharing one see the same counters (default: unique). */
    rateLimitNamespace?: string;
    /** Where the Redis breaker logs (default: nowhere). */
    redisLog?: RedisLog;
    /** Lets a test wrap service calls, e.g. to revoke a key while its request runs (docs/api.md#keys-scopes-and-roles). */
    wrapServices?: (services: Services) => void;
    /** DNS for the webhook URL check at webhook creation (default: the system's). */
    resolveHost?: (host: string) => Promise<string[]>;
    /** How integrations POST to Slack and Discord (docs/integrations.md#testing-locally). */
    integrationSend?: Send;
    /** Where the app's log lines go (set LOG_LEVEL in config too; it is silent by default). */
    logStream?: { write(line: string): void };
    /** How single sign-on reaches the identity provider (a hand in the middle); fetch by default. */
    ssoFetch?: SsoFetch;
    /** Stripe as the test reaches it (a gateway wrapping the stand-in's); by default from the STRIPE_* settings. */
    paymentGateway?: PaymentGateway;
  } = {},
): Promise<TestApp> {
  const storage = opts.storage ?? (await openTestStorage());
  // One deployment per database: apps on the same storage share the key-cache epoch in Redis (src/modules/keys/keys-epoch.ts),
  // and runs on other databases never touch it.
  const redisKeyPrefix = `wsvc-test:${(storage as { schema?: string }).schema ?? randomBytes(6).toString('hex')}:`;
  const config = loadConfig(
    {},
    // Plan limits off unless a test turns them on (billing tests do): suites make more webhooks,
    // resources and requests than the free plan allows (docs/billing.md#plan-limits).
    {
      LOG_LEVEL: 'silent',
      // PostgreSQL needs SECRETS_KEY (vitest.config.ts sets one); SQLite uses the key file beside the database.
      SECRETS_KEY: process.env.SECRETS_KEY || undefined,
      DATABASE_URL: storage.url,
      REDIS_KEY_PREFIX: redisKeyPrefix,
      PLAN_LIMITS: 'off',
      PASSWORD_HASH_COST: Number(process.env.PASSWORD_HASH_COST) || undefined,
      // Export archives in a folder of the run's own, not the working tree (PostgreSQL's default is ./data/exports).
      EXPORTS_DIR: mkdtempSync(join(tmpdir(), 'wsvc-test-exports-')),
      ...opts.config,
    },
  );
  const clock = opts.clock ?? { now: () => Date.now() };
  const services = createServices({
    storage,
    clock,
    config,
    resolveHost: opts.resolveHost,
    integrationSend: opts.integrationSend,
    ssoFetch: opts.ssoFetch,
    paymentGateway: opts.paymentGateway,
  });
  opts.wrapServices?.(services);
  // With TEST_REDIS_URL the same tests run with Redis-backed rate limits, in their own key namespace.
  const redisUrl = opts.redisUrl === undefined ? process.env.TEST_REDIS_URL || undefined : (opts.redisUrl ?? undefined);
  const redis = redisUrl ? openRedis(redisUrl, { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS }) : undefined;
  const rateLimitNamespace = opts.rateLimitNamespace ?? `wsvc-test:${randomBytes(6).toString('hex')}:`;
  const app = await buildApp({
    config,
    storage,
    clock,
    services,
    redis,
    rateLimitNamespace,
    redisLog: opts.redisLog,
    logStream: opts.logStream,
  });
  await app.ready();
  if (redis) await waitForRedis(redis, 5000);
  // Every response a test receives is checked against the served OpenAPI document (contract.ts).
  const inject = app.inject.bind(app);
  const contract = await contractOf(app, inject);
  const checked = async (opts: InjectOptions): Promise<LightMyRequestResponse> => {
    const res = await inject(opts);
    const problems = contract.check(String(opts.method ?? 'GET'), String(opts.url ?? '/'), res);
    if (problems.length > 0) throw new Error(`Response differs from the OpenAPI document:\n${problems.join('\n')}`);
    return res;
  };
  (app as { inject: unknown }).inject = (opts?: InjectOptions, cb?: unknown) =>
    opts === undefined || cb !== undefined || typeof opts === 'string'
      ? (inject as (...a: unknown[]) => unknown)(opts, cb)
      : checked(opts);
  return {
    app,
    storage,
    services,
    config,
    redis,
    request({ method, url, key, body, headers }) {
      const h: Record<string, string> = { ...headers };
      if (key !== undefined) h.authorization = `Bearer ${key}`;
      if (body !== undefined && typeof body !== 'string' && !h['content-type']) h['content-type'] = 'application/json';
      return checked({
        method,
        url,
        headers: h,
        payload: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    async close() {
      await app.close();
      if (!opts.storage) await storage.close();
      redis?.disconnect();
    },
  };
}

export interface TestWorkspace {
  id: string;
  adminId: string;
  live: string;
  test: string;
  /** Adds a member with a live and a test key (optionally with scopes). */
  member(
    role: Role,
    scopes?: string[] | null,
  ): Promise<{ userId: string; live: string; test: string; liveKeyId: string; testKeyId: string }>;
  key(userId: string, env: Env, scopes?: string[] | null): Promise<{ id: string; key: string }>;
}

let counter = 0;

/** A fresh workspace per test (no table wiping), with its admin's live and test keys. */
export async function newWorkspace(t: TestApp, name = 'Test workspace'): Promise<TestWorkspace> {
  const out = await t.services.workspaces.create(asCli(t.services), {
    name,
    adminEmail: `admin${++counter}@example.test`,
  });
  const key = async (userId: string, env: Env, scopes: string[] | null = null) => {
    const k = await t.services.keyRegistry.create(asCli(t.services), { userId, env, name: `${env} key`, scopes });
    return { id: k.id, key: k.key };
  };
  return {
    id: out.workspace.id,
    adminId: out.user.id,
    live: out.keys.live.key,
    test: out.keys.test.key,
    key,
    async member(role, scopes = null) {
      const user = await t.services.users.create(asCli(t.services), {
        workspaceId: out.workspace.id,
        email: `u${++counter}@example.test`,
        role,
      });
      const live = await key(user.id, 'live', scopes);
      const test = await key(user.id, 'test', scopes);
      return { userId: user.id, live: live.key, test: test.key, liveKeyId: live.id, testKeyId: test.id };
    },
  };
}

/** The parsed JSON body of a response. */
// biome-ignore lint/suspicious/noExplicitAny: test convenience
export function json(res: LightMyRequestResponse): any {
  return res.body === '' ? undefined : JSON.parse(res.body);
}

/**
 * The principal of an API key, as the HTTP layer hands it to the services: for a test that calls a service
 * directly as a caller of a workspace (an admin's key acts as that admin). Throws when the key does not verify.
 */
export async function keyPrincipal(services: Pick<Services, 'keyRegistry'>, key: string): Promise<ApiKeyPrincipal> {
  const verified = await services.keyRegistry.verify(`Bearer ${key}`);
  if (!verified.ok) throw new Error(`the key does not verify: ${verified.code}`);
  return verified.principal;
}

/**
 * Another process on the test app's database: its own connection (one) and its own services, as the `wsvc`
 * CLI or a second API process would have (its caches, its writes committed through its own connection).
 */
export function otherProcess(
  t: TestApp,
  opts: { resolveHost?: (host: string) => Promise<string[]> } = {},
): { storage: Storage; services: Services } {
  const url = (t.storage as Storage & { url: string }).url;
  const schema = (t.storage as Storage & { schema?: string }).schema;
  const storage = openStorage({ url, poolSize: 1, schema });
  const services = createServices({
    storage,
    clock: systemClock,
    ...(opts.resolveHost ? { resolveHost: opts.resolveHost } : {}),
    config: loadConfig({
      DATABASE_URL: url.startsWith('sqlite:') ? url : 'postgres://x/y',
      SECRETS_KEY: process.env.SECRETS_KEY,
      PLAN_LIMITS: 'off',
    } as NodeJS.ProcessEnv),
  });
  return { storage, services };
}

/**
 * The door an operator's command has (`wsvc …` acts as the system actor `cli`): tests that set up data the way an
 * operator would (a workspace, a member, a key) enter through it, as the CLI does.
 */
export function asCli(services: Services): Unit<SystemActor> {
  return services.uow.as(systemActor('cli'));
}
