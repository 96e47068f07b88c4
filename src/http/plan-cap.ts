import type { FastifyInstance } from 'fastify';
import type { Clock } from '../lib/clock.js';
import { AppError } from '../lib/errors.js';
import type { BillingService } from '../modules/billing/billing.service.js';
import type { UsageMeter } from '../modules/usage/meter.js';

interface CapEntry {
  limit: number | null;
  periodStart: number;
  periodEnd: number;
  /** Billable requests in the database when read. */
  base: number;
  /** The meter's generation when the read began: the base is current while it has not moved. */
  generation: number;
  readAt: number;
}

/**
 * The free plan's hard cap (docs/billing.md#the-free-cap): a live request to a workspace whose
 * billable requests this period have reached its plan's cap is answered 429 quota_exceeded with
 * Retry-After to the period's end. No write on the request path: the count is what the database
 * held at the last read (re-read after each flush of this process's meter, and at least every
 * `refreshMs` to see other processes' flushes) plus what this process's meter has not written yet.
 */
export function installPlanCap(
  app: FastifyInstance,
  deps: { billing: Pick<BillingService, 'capOf'>; meter: UsageMeter; clock: Clock; refreshMs: number },
): void {
  const cache = new Map<string, CapEntry>();
  const reading = new Map<string, Promise<CapEntry | null>>();

  const read = (workspaceId: string, now: number): Promise<CapEntry | null> => {
    let p = reading.get(workspaceId);
    if (p) return p;
    const generation = deps.meter.generation();
    p = deps.billing
      .capOf(workspaceId, now)
      .then((c) => {
        if (!c) return null;
        const entry: CapEntry = { ...c, base: c.billable, generation, readAt: now };
        cache.set(workspaceId, entry);
        return entry;
      })
      .finally(() => reading.delete(workspaceId));
    reading.set(workspaceId, p);
    return p;
  };

  app.addHook('preHandler', async (request) => {
    const p = request.principal;
    if (p?.kind !== 'api_key' || p.env !== 'live') return;
    const now = deps.clock.now();
    let entry = cache.get(p.workspaceId);
    if (
      !entry ||
      now >= entry.periodEnd ||
      entry.generation !== deps.meter.generation() ||
      now - entry.readAt >= deps.refreshMs
    ) {
      entry = (await read(p.workspaceId, now)) ?? undefined;
    }
    if (!entry || entry.limit === null) return;
    const used = entry.base + deps.meter.unflushedBillable(p.workspaceId, entry.periodStart);
    if (used >= entry.limit) {
      const retryAfter = Math.max(1, Math.ceil((entry.periodEnd - now) / 1000));
      throw new AppError(
        429,
        'quota_exceeded',
        `This workspace has used the ${entry.limit} live requests its plan allows this period; the period ends at ${new Date(entry.periodEnd).toISOString()}. Move to a larger plan to continue.`,
        undefined,
        { 'retry-after': String(retryAfter) },
      );
    }
  });
}
