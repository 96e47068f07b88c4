import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from '../lib/errors.js';
import { type Principal, principalId } from '../lib/principal.js';

export interface RateLimitOptions {
  live: number;
  test: number;
  windowS: number;
  /** Shared counters for many processes (docs/api.md#rate-limits); without it, counters live in this process. */
  redis?: Redis;
  /** Redis key prefix; tests give each app its own so runs never collide. */
  nameSpace?: string;
}

/**
 * docs/api.md#rate-limits: per-key fixed window, X-RateLimit-* on every authenticated response, 429 with
 * Retry-After. Runs as a route hook, so after the authentication hook has set the principal.
 */
export async function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    timeWindow: opts.windowS * 1000,
    max: (request) => (request.principal?.env === 'test' ? opts.test : opts.live),
    keyGenerator: (request) => rateKey(request.principal),
    // Routes without a scope (health, docs, 404/405) are not rate limited.
    allowList: (request) => !request.routeOptions.config?.scope,
    redis: opts.redis,
    nameSpace: opts.nameSpace ?? 'wsvc:rl:',
    // Redis down: serve rather than refuse (fail-open, logged by src/redis.ts), see docs/operations.md.
    skipOnError: true,
    addHeadersOnExceeding: {
      'x-ratelimit-limit': true,
      'x-ratelimit-remaining': true,
      'x-ratelimit-reset': true,
    },
    addHeaders: {
      'x-ratelimit-limit': true,
      'x-ratelimit-remaining': true,
      'x-ratelimit-reset': true,
      'retry-after': true,
    },
    errorResponseBuilder: (_request, context) =>
      new AppError(
        429,
        'rate_limited',
        `Rate limit of ${context.max} requests per ${opts.windowS} s exceeded for this API key; retry after ${Math.ceil(context.ttl / 1000)} s.`,
      ),
  });
}

/** The counter of a caller: an API key's id (as before principals had kinds), else the principal's id. */
function rateKey(p: Principal | null): string {
  if (!p) return 'anonymous';
  return p.kind === 'api_key' ? p.keyId : principalId(p);
}
