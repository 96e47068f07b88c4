import type { FastifyInstance } from 'fastify';
import type { Storage } from '../db/database.js';
import type { RedisGuard } from '../db/redis.js';
import { errorBody } from './errors.js';

/** How long /readyz waits for the database: a balancer's probe must get an answer, not a hang. */
const READY_TIMEOUT_MS = 800;

/**
 * `/healthz` (the process runs) and `/readyz` (it can serve): each dependency's state, answered
 * within a second whatever the network does. The database `ok`, `unavailable` (refused, broken)
 * or `not_responding` (no answer in time, e.g. a partition) decides 200 or 503; Redis is
 * reported the same way but never makes the process unready (rate limits fail open).
 */
export function installHealth(app: FastifyInstance, deps: { storage: Storage; redis?: RedisGuard }): void {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (req, reply) => {
    const redis = deps.redis ? { redis: deps.redis.state() } : {};
    const database = await deps.storage.ping(READY_TIMEOUT_MS).then(
      () => 'ok' as const,
      (err: { code?: string }) => (err?.code === 'ETIMEDOUT' ? ('not_responding' as const) : ('unavailable' as const)),
    );
    if (database === 'ok') return { status: 'ready', database, ...redis };
    const message =
      database === 'not_responding'
        ? `The database did not answer within ${READY_TIMEOUT_MS} ms.`
        : 'The database is not reachable.';
    return reply.code(503).send({ ...errorBody(req, 'service_unavailable', message), database, ...redis });
  });
}
