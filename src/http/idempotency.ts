import { createHash } from 'node:crypto';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onSendAsyncHookHandler,
  preHandlerAsyncHookHandler,
} from 'fastify';
import type { Db, Dialect } from '../db/dialect.js';
import { type Clock, isoAt } from '../lib/clock.js';
import { ConflictError, fieldError } from '../lib/errors.js';

const KEY_RE = /^[\x20-\x7e]{1,255}$/;
const RETENTION_MS = 24 * 60 * 60 * 1000;
/** A claim older than this is taken to belong to a process that died mid-request. */
const LOCK_MS = 60 * 1000;
/** How often expired records are deleted. */
const PURGE_EVERY_MS = 10 * 60 * 1000;

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: { key: string; hash: string } | null;
  }
}

/**
 * docs/api.md#idempotency: the first completed response to a POST with `Idempotency-Key` is stored for 24 h per
 * workspace+environment and replayed (`Idempotent-Replayed: true`) for the same request; a
 * different request with the key is 409 idempotency_key_reused; one still running is 409
 * idempotency_key_in_use. The claim is a row insert, so concurrent duplicates race on the
 * primary key and exactly one runs. Runs after validation: invalid requests are not stored.
 */
export function installIdempotency(
  app: FastifyInstance,
  deps: { db: Db; dialect: Dialect; clock: Clock; purgeEveryMs?: number },
): void {
  const { db, dialect, clock } = deps;
  app.decorateRequest('idempotency', null);

  // Expired records are refused on read anyway; this keeps the table from growing forever.
  let purgeTimer: NodeJS.Timeout | undefined;
  const purgeEveryMs = deps.purgeEveryMs ?? PURGE_EVERY_MS;
  app.addHook('onReady', async () => {
    if (purgeEveryMs <= 0) return;
    purgeTimer = setInterval(() => {
      purgeExpiredIdempotencyKeys(db, clock.now()).catch((err) =>
        app.log.warn({ err }, 'purging expired idempotency keys failed'),
      );
    }, purgeEveryMs);
    purgeTimer.unref();
  });
  app.addHook('onClose', async () => clearInterval(purgeTimer));

  const preHandler = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method !== 'POST' || !request.actor) return;
    const raw = request.headers['idempotency-key'];
    if (raw === undefined) return;
    const key = Array.isArray(raw) ? raw[0] : raw;
    if (key === undefined || !KEY_RE.test(key)) {
      throw fieldError(
        'Idempotency-Key',
        'invalid_format',
        'Idempotency-Key must be 1 to 255 printable ASCII characters.',
      );
    }
    const hash = requestHash(request);
    const scope = { workspace_id: request.actor.workspaceId, env: request.actor.env, key };
    const now = clock.now();
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await db
          .insertInto('idempotency_keys')
          .values({
            ...scope,
            request_hash: hash,
            state: 'processing',
            status_code: null,
            response_body: null,
            locked_until: isoAt(now + LOCK_MS),
            expires_at: isoAt(now + RETENTION_MS),
            created_at: isoAt(now),
          })
          .execute();
        request.idempotency = { key, hash };
        return;
      } catch (err) {
        if (!dialect.isUniqueViolation(err)) throw err;
      }
      const existing = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('workspace_id', '=', scope.workspace_id)
        .where('env', '=', scope.env)
        .where('key', '=', key)
        .executeTakeFirst();
      if (!existing) continue; // expired and purged in between: claim again
      if (existing.expires_at <= isoAt(now)) {
        await deleteIf(db, scope, existing.created_at);
        continue;
      }
      if (existing.request_hash !== hash) {
        throw new ConflictError(
          'idempotency_key_reused',
          'This Idempotency-Key was already used with a different request (method, path or body).',
        );
      }
      if (existing.state === 'done') {
        return replay(reply, existing.status_code ?? 200, existing.response_body ?? '');
      }
      if (existing.locked_until > isoAt(now)) {
        throw new ConflictError(
          'idempotency_key_in_use',
          'A request with this Idempotency-Key is still being processed; retry later.',
        );
      }
      // The first attempt's process died before finishing: take the claim over.
      const taken = await db
        .updateTable('idempotency_keys')
        .set({ locked_until: isoAt(now + LOCK_MS) })
        .where('workspace_id', '=', scope.workspace_id)
        .where('env', '=', scope.env)
        .where('key', '=', key)
        .where('state', '=', 'processing')
        .where('locked_until', '=', existing.locked_until)
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) === 1) {
        request.idempotency = { key, hash };
        return;
      }
    }
    throw new ConflictError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed.');
  };

  const onSend = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const claim = request.idempotency;
    if (!claim) return payload;
    request.idempotency = null;
    const where = {
      workspace_id: request.actor.workspaceId,
      env: request.actor.env,
      key: claim.key,
    };
    if (reply.statusCode >= 500 || reply.statusCode === 401) {
      // Not a result worth replaying (a 5xx, or the key was revoked while the request ran,
      // docs/api.md#keys-scopes-and-roles): free the key so a retry, possibly with another key, runs again.
      await db
        .deleteFrom('idempotency_keys')
        .where('workspace_id', '=', where.workspace_id)
        .where('env', '=', where.env)
        .where('key', '=', where.key)
        .execute();
      return payload;
    }
    await db
      .updateTable('idempotency_keys')
      .set({ state: 'done', status_code: reply.statusCode, response_body: String(payload ?? '') })
      .where('workspace_id', '=', where.workspace_id)
      .where('env', '=', where.env)
      .where('key', '=', where.key)
      .execute();
    return payload;
  };

  // Performance (docs/performance.md, change 5): only POST routes carry these hooks, so GET, PUT and DELETE skip two async hooks.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST')) return;
    route.preHandler = [...hooks(route.preHandler), preHandler as preHandlerAsyncHookHandler];
    route.onSend = [...hooks(route.onSend), onSend as onSendAsyncHookHandler];
  });
}

function hooks<T>(h: T | T[] | undefined): T[] {
  return h === undefined ? [] : Array.isArray(h) ? h : [h];
}

function requestHash(request: FastifyRequest): string {
  return hashRequest(request.method, request.url.split('?')[0] ?? '', request.body);
}

/**
 * What makes two requests "the same" for docs/api.md#idempotency: method, path and the parsed body (keys sorted,
 * so whitespace and key order do not matter; values and types do).
 */
export function hashRequest(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body ?? null)}`)
    .digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Deletes idempotency records past their 24 h retention (docs/api.md#idempotency); returns how many. */
export async function purgeExpiredIdempotencyKeys(db: Db, now: number): Promise<number> {
  const r = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', isoAt(now)).executeTakeFirst();
  return Number(r.numDeletedRows);
}

function replay(reply: FastifyReply, status: number, body: string) {
  reply.header('idempotent-replayed', 'true');
  reply.code(status);
  if (body === '') return reply.send();
  return reply
    .type('application/json; charset=utf-8')
    .serializer((p: unknown) => p as string)
    .send(body);
}

async function deleteIf(db: Db, scope: { workspace_id: string; env: string; key: string }, createdAt: string) {
  await db
    .deleteFrom('idempotency_keys')
    .where('workspace_id', '=', scope.workspace_id)
    .where('env', '=', scope.env as 'live')
    .where('key', '=', scope.key)
    .where('created_at', '=', createdAt)
    .execute();
}
