// Backends: both — the key cache's epoch is the connection's on SQLite and shared in Redis on PostgreSQL
// Tier: quick
// docs/performance.md#the-key-cache-and-its-epochs: verified keys are reused between requests (SQLite: under the
// connection's epoch; PostgreSQL + Redis: under the epoch shared in Redis, src/modules/keys/keys-epoch.ts). The rules of
// docs/api.md#keys-scopes-and-roles must hold exactly as without the cache: revocation, demotion and removal
// take effect on the very next request, whether made by this process or by another connection (the `wsvc` CLI).
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/db/database.js';
import { openRedis, waitForRedis } from '../../src/db/redis.js';
import { keyChangeAnnouncer } from '../../src/modules/keys/keys-epoch.js';
import type { Services } from '../../src/services.js';
import { asCli, newWorkspace, otherProcess, startTestApp, type TestApp } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';
import { expectError } from '../helpers/expect.js';

let t: TestApp;
// A second connection to the same database, as the CLI would open (SQLite file or PostgreSQL schema).
let other: Storage;
let otherServices: Services;
let otherRedis: Redis | undefined;
// Keys read from the database by the app (its own count: a cache hit reads none).
let lookups = 0;
beforeAll(async () => {
  t = await startTestApp({
    wrapServices: (s) => {
      const verifyAt = s.keyRegistry.verifyAt;
      s.keyRegistry.verifyAt = (...args) => {
        lookups++;
        return verifyAt(...args);
      };
    },
  });
  ({ storage: other, services: otherServices } = otherProcess(t));
  // Like the CLI with REDIS_URL (src/cli/context.ts): its changes to keys and users are announced in Redis.
  if (t.redis && !other.dialect.keysEpoch && process.env.TEST_REDIS_URL) {
    otherRedis = openRedis(process.env.TEST_REDIS_URL);
    await waitForRedis(otherRedis, 5000);
    other.dialect.keyChanges = keyChangeAnnouncer(otherRedis, t.config.REDIS_KEY_PREFIX);
  }
});
afterAll(async () => {
  otherRedis?.disconnect();
  await other.close();
  await t.close();
});

const get = (key: string) => t.request({ method: 'GET', url: '/v1/users/me', key });

describe('verified-key reuse keeps role and revocation checks exact', () => {
  for (const where of ['this process', 'another connection'] as const) {
    const s = () => (where === 'this process' ? t.services : otherServices);

    it(`a key revoked by ${where} fails on the next request`, async () => {
      const ws = await newWorkspace(t);
      const k = await ws.key(ws.adminId, 'live');
      for (let i = 0; i < 3; i++) expect((await get(k.key)).statusCode).toBe(200);
      // Resource writes leave cached keys valid (keepsKeys); the revocation after them does not.
      await createResource(t, k.key);
      expect((await get(k.key)).statusCode).toBe(200);
      expect((await t.request({ method: 'HEAD', url: '/v1/users/me', key: k.key })).statusCode).toBe(200);
      await s().keyRegistry.revoke(asCli(s()), k.id);
      // HEAD too (Fastify's HEAD routes for GETs): a cached key is never answered unconfirmed.
      expect((await t.request({ method: 'HEAD', url: '/v1/users/me', key: k.key })).statusCode).toBe(401);
      expectError(await get(k.key), 401, 'expired_token');
      expect((await get(ws.live)).statusCode).toBe(200);
    });

    it(`a member demoted by ${where} loses write scope on the next request`, async () => {
      const ws = await newWorkspace(t);
      const m = await ws.member('member');
      await createResource(t, m.live);
      await s().users.setRole(asCli(s()), m.userId, 'viewer');
      const res = await t.request({
        method: 'POST',
        url: '/v1/resources',
        key: m.live,
        body: { name: 'x', type: 'standard' },
      });
      expectError(res, 403, 'insufficient_scope');
    });

    it(`a member removed by ${where} is 401 on the next request`, async () => {
      const ws = await newWorkspace(t);
      const m = await ws.member('member');
      expect((await get(m.live)).statusCode).toBe(200);
      await s().users.remove(asCli(s()), m.userId);
      expectError(await get(m.live), 401, 'expired_token');
    });
  }
});

// Where keys are cached at all: SQLite, or PostgreSQL with Redis (the shared epoch).
const caches = () => t.storage.dialect.keysEpoch !== undefined || t.storage.dialect.keyChanges !== undefined;

describe('the cache is used', () => {
  it('a key is read from the database once, then answered from the cache', async () => {
    if (!caches()) return;
    const ws = await newWorkspace(t);
    const k = await ws.key(ws.adminId, 'live');
    const before = lookups;
    for (let i = 0; i < 5; i++) expect((await get(k.key)).statusCode).toBe(200);
    // The SQLite cache is read through verifyNow (not counted here); under the shared epoch, one read.
    expect(lookups - before).toBeLessThanOrEqual(1);
  });

  it('while a change to keys is unsettled nothing is cached, and the key is read on every request', async () => {
    const announce = t.storage.dialect.keyChanges;
    if (!announce) return; // PostgreSQL + Redis only
    const ws = await newWorkspace(t);
    const k = await ws.key(ws.adminId, 'live');
    expect((await get(k.key)).statusCode).toBe(200);
    await announce.unsettle();
    try {
      const before = lookups;
      for (let i = 0; i < 3; i++) expect((await get(k.key)).statusCode).toBe(200);
      // Each request: the cached entry is stale, the epoch reads as none, so the key is read and not filed.
      expect(lookups - before).toBe(3);
    } finally {
      await announce.settle();
    }
    const before = lookups;
    for (let i = 0; i < 3; i++) expect((await get(k.key)).statusCode).toBe(200);
    expect(lookups - before).toBe(1);
  });
});
