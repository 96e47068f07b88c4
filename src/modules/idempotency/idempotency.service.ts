import { createHash } from 'node:crypto';
import type { Db, Dialect } from '../../db/dialect.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { ConflictError, SessionEndedError, StoredResponse, UnauthorizedError } from '../../kernel/errors.js';
import type { Actor, SystemActor, Tenant } from '../../kernel/principal.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { purgeInBatches } from '../../platform/batched-purge.js';
import type { Unit, WriteHooks } from '../../platform/unit-of-work.js';
import { type IdempotencyRecord, idempotencyRepository as repo } from './idempotency.repository.js';

/** A stored answer is replayed for this long (docs/api.md, "Idempotency"). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

/** One request that carries an `Idempotency-Key`. */
export interface IdempotentRequest {
  tenant: Tenant;
  /** Who sent it: an answer given without a write is stored as them (`remember`). */
  actor: Actor;
  key: string;
  /** hashRequest of method, path and body. */
  hash: string;
  /** The key's record now holds this request's answer, or belongs to another request: store nothing more. */
  settled: boolean;
  /** Registered as running in this process (see IdempotencyService.check). */
  running?: boolean;
}

const inUse = () =>
  new ConflictError(
    'idempotency_key_in_use',
    'A request with this Idempotency-Key is still being processed; retry when it has finished.',
  );

const reused = () =>
  new ConflictError(
    'idempotency_key_reused',
    'This Idempotency-Key was already used with a different request (method, path or body).',
  );

/**
 * Idempotency-Key (docs/api.md#idempotency). A write stores its answer in its own transaction (`hooks`): the record is
 * claimed first thing in the transaction and finished with the response just before the commit, so a
 * crash leaves either the write with its answer or neither, never the write without its answer. No
 * claim is ever committed on its own, so there is no claim of a dead process to wait for. A request
 * that runs while another with the same key does is 409 idempotency_key_in_use: seen in this process
 * (`running`) or through a lock that only a live transaction holds (`Dialect.tryHoldExclusive`).
 */
export function createIdempotencyService(deps: { db: Db; dialect: Dialect; clock: Clock }) {
  const { db, dialect, clock } = deps;
  /** Keys of requests running in this process (a duplicate is 409 in_use before it does any work). */
  const running = new Set<string>();
  const idOf = (req: IdempotentRequest) => `${req.tenant.workspaceId}/${req.tenant.env}/${req.key}`;

  const record = (req: IdempotentRequest, now: number, status: number | null, body: string | null) =>
    ({
      workspace_id: req.tenant.workspaceId,
      env: req.tenant.env,
      key: req.key,
      request_hash: req.hash,
      state: status === null ? 'processing' : 'done',
      status_code: status,
      response_body: body,
      // No claim outlives its transaction any more; kept for the column (and older servers' rows).
      locked_until: isoAt(now),
      expires_at: isoAt(now + IDEMPOTENCY_RETENTION_MS),
      created_at: isoAt(now),
    }) satisfies IdempotencyRecord;

  /**
   * Throws what an existing record answers: StoredResponse (replay) for the same request, 409
   * idempotency_key_reused for another one. Returns when the request is to run: no record, an
   * expired one, or a `processing` row committed by an older version that crashed mid-request.
   */
  function judge(req: IdempotentRequest, existing: IdempotencyRecord | undefined, now: number): void {
    if (!existing || existing.expires_at <= isoAt(now)) return;
    if (existing.request_hash !== req.hash) {
      req.settled = true;
      throw reused();
    }
    if (existing.state === 'done') {
      req.settled = true;
      throw new StoredResponse(existing.status_code ?? 200, existing.response_body ?? '');
    }
  }

  /**
   * Before a request runs: replays or refuses (throws) when its key already has an answer, 409
   * idempotency_key_in_use while another request with it runs in this process. Call `done` after.
   */
  async function check(req: IdempotentRequest): Promise<void> {
    judge(req, await repo.find(db, req.tenant, req.key), clock.now());
    if (running.has(idOf(req))) {
      req.settled = true;
      throw inUse();
    }
    running.add(idOf(req));
    req.running = true;
  }

  /** The request has been answered: its key is free for the next one. */
  function done(req: IdempotentRequest): void {
    if (req.running) running.delete(idOf(req));
    req.running = false;
  }

  /** The hooks that store the answer `serialize(result)` with `status` in the write's own transaction. */
  function hooks<T>(req: IdempotentRequest, status: number, serialize: (result: T) => string): WriteHooks<T> {
    return {
      async before(trx) {
        // Another process's transaction with this key is running (the lock dies with its process).
        if (!(await dialect.tryHoldExclusive(trx, `idempotency:${idOf(req)}`))) {
          req.settled = true;
          throw inUse();
        }
        const now = clock.now();
        const row = record(req, now, null, null);
        if (await repo.insertIfAbsent(trx, row)) return;
        // Another request with the key committed first (an insert waits for a concurrent one of the same key): its answer wins.
        judge(req, await repo.find(trx, req.tenant, req.key), now);
        await repo.replace(trx, row);
      },
      async after(trx, result) {
        await repo.finish(trx, req.tenant, req.key, status, serialize(result));
        req.settled = true;
      },
    };
  }

  /**
   * Stores an answer given without a write of its own (a 4xx such as 404, or a route that passed no
   * hooks), as the request's actor (`u`): kept unless another answer got there first. When the actor's credential
   * ended while the request ran, nothing is stored, as for a 401: the key stays free for a retry.
   */
  async function remember(u: Unit, req: IdempotentRequest, status: number, body: string): Promise<void> {
    if (req.settled) return;
    req.settled = true;
    try {
      await u.run(({ trx }) => repo.insertIfAbsent(trx, record(req, clock.now(), status, body)));
    } catch (err) {
      if (!(err instanceof UnauthorizedError || err instanceof SessionEndedError)) throw err;
    }
  }

  /**
   * Deletes records past their 24 h retention in batches, as the unit's actor (the scheduler), with one
   * `idempotency.purged` entry per workspace (docs/settings.md#retention); returns how many.
   */
  function purgeExpired(u: Unit<SystemActor>): Promise<number> {
    const at = isoAt(clock.now());
    return purgeInBatches(u, {
      action: 'idempotency.purged',
      target: 'idempotency_keys',
      steps: [{ name: 'records', run: (trx, limit) => repo.purgeBefore(trx, at, limit) }],
    });
  }

  return { check, done, hooks, remember, purgeExpired };
}
export type IdempotencyService = ReturnType<typeof createIdempotencyService>;

/**
 * What makes two requests "the same" for docs/api.md#idempotency: method, path and the parsed body (keys sorted,
 * so whitespace and key order do not matter; values and types do).
 */
export function hashRequest(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body ?? null)}`)
    .digest('hex');
}
