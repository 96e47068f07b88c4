// Backends: both — operator events are written in the causing change's transaction and claimed by the worker's SQL
// Tier: full — `wsvc` child processes (over a second of CPU each to start)
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Value } from '@sinclair/typebox/value';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OperatorEventType } from '../../src/kernel/event-types.js';
import { systemActor } from '../../src/kernel/principal.js';
import { OperatorEventSchema } from '../../src/modules/operator-events/operator-events.schemas.js';
import type { OperatorDelivery } from '../../src/modules/operator-events/operator-events.service.js';
import { asCli, otherProcess, startTestApp, type TestApp } from '../helpers/app.js';
import { type Received, type Receiver, startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';
import { CARDS, type StripeStandin, startStripeStandin } from '../helpers/stripe-standin.js';
import { testWorker } from '../helpers/worker.js';

// docs/api.md#operator-events: with OPERATOR_WEBHOOK_URL and OPERATOR_WEBHOOK_SECRET, the instance-wide events reach
// the operator's receiver through the delivery engine, signed (checked with the published `standardwebhooks`
// verifier), retried with back-off on the injected clock, and sent again by `wsvc operator retry`; without the
// settings nothing is written. `workspace.created` comes through its real door (`wsvc workspaces create`);
// `workspace.deleted`, `invoice.payment_failed` and `subscription.unpaid` first as their domain events through the unit
// of work, then (the last test) from their real producers: the payments job charging a declining card at the Stripe
// stand-in through the dunning schedule to unpaid, and the workspace-deletions job after the grace period, on the
// injected clock.
const exec = promisify(execFile);
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const STRIPE_SECRET = 'sk_test_standin0123456789';
const STRIPE_WHSEC = 'whsec_standin0123456789';
const DAY = 86_400_000;
/** The app's clock: the real time, but where the last test pins it (in the past, so what it writes is due now). */
let pinned: number | null = null;
const clock = { now: () => pinned ?? Date.now() };

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let t: TestApp;
let rx: Receiver;
let stripe: StripeStandin;
let databaseUrl: string;
let cliEnv: NodeJS.ProcessEnv;
beforeAll(async () => {
  rx = await startReceiver();
  storage = await openTestStorage();
  stripe = await startStripeStandin({ secretKey: STRIPE_SECRET, webhookSecret: STRIPE_WHSEC, now: clock.now });
  t = await startTestApp({
    storage,
    clock,
    config: {
      WEBHOOK_ALLOW_INSECURE_URLS: true,
      WEBHOOK_MAX_RETRIES: 1,
      WEBHOOK_RETRY_BASE_MS: 60_000,
      OPERATOR_WEBHOOK_URL: rx.url('/ops'),
      OPERATOR_WEBHOOK_SECRET: SECRET,
      // Payments with Stripe on, against the stand-in; a charge retried 1 and 3 days after the first failure.
      STRIPE_SECRET_KEY: STRIPE_SECRET,
      STRIPE_WEBHOOK_SECRET: STRIPE_WHSEC,
      STRIPE_API_BASE: stripe.base,
      DUNNING_SCHEDULE: '1,3',
      WORKSPACE_DELETION_GRACE_DAYS: 2,
    },
  });
  const schema = storage.schema;
  databaseUrl = schema ? `${storage.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}` : storage.url;
  cliEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'silent',
    OPERATOR_WEBHOOK_URL: rx.url('/ops'),
    OPERATOR_WEBHOOK_SECRET: SECRET,
  };
});
afterAll(async () => {
  await rx?.close();
  await t?.close();
  await stripe?.close();
  await storage?.close();
});

const wsvc = async (...args: string[]) =>
  (await exec(process.execPath, ['bin/wsvc.js', ...args], { env: cliEnv })).stdout;

/** Each request at the operator's receiver (from the `from`th on), verified as a Standard Webhooks receiver does. */
const verified = (from = 0) =>
  rx
    .to('/ops')
    .slice(from)
    .map((r: Received) => {
      const body = new Webhook(SECRET).verify(r.body, r.headers as Record<string, string>) as {
        id: string;
        event: OperatorEventType;
        created_at: string;
        data: Record<string, unknown>;
      };
      expect(Value.Errors(OperatorEventSchema, body).First(), body.event).toBeUndefined();
      expect(r.headers['webhook-id']).toBe(body.id);
      return body;
    });

/** A manual clock for the worker: retries fall due when the test moves it. */
function manualClock() {
  let now = Date.now();
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

async function drain(worker: ReturnType<typeof testWorker>) {
  while ((await worker.runOnce()) > 0) {}
}

const rowCount = async () =>
  Number(
    (
      await storage.db
        .selectFrom('operator_deliveries')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('operator events', { timeout: 180_000 }, () => {
  it('each instance-wide event reaches the operator once, signed with OPERATOR_WEBHOOK_SECRET', async () => {
    const worker = testWorker(t, { listen: false });
    // The real door of a workspace's creation: the `wsvc` command, in a child process.
    const created = JSON.parse(
      await wsvc('--json', 'workspaces', 'create', '--name', 'Ops Corp', '--admin-email', 'ops@example.test'),
    ) as { workspace: { id: string } };
    const ws = created.workspace.id;
    await drain(worker);
    expect(verified().map((e) => [e.event, e.data])).toEqual([
      ['workspace.created', { workspace_id: ws, name: 'Ops Corp' }],
    ]);

    // The other three: their domain events, through the unit of work, as their producers emit them.
    const at = new Date().toISOString();
    const invoice = {
      invoice_id: 'inv_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
      number: 'INV-7',
      plan: 'pro',
      total_cents: 4900,
      currency: 'usd',
      period_start: '2026-10-01T00:00:00.000Z',
      period_end: '2026-11-01T00:00:00.000Z',
    };
    await asCli(t.services).run(async (c) => {
      await c.emit({ type: 'invoice.payment_failed', workspaceId: ws, data: { ...invoice, at } });
      await c.emit({ type: 'subscription.unpaid', workspaceId: ws, invoiceId: invoice.invoice_id, at });
    });
    await asCli(t.services).run((c) => c.emit({ type: 'workspace.deleted', workspaceId: ws, at }));
    await drain(worker);
    await drain(worker);
    const events = verified();
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(events.map((e) => e.event)).toEqual([
      'workspace.created',
      'invoice.payment_failed',
      'subscription.unpaid',
      'workspace.deleted',
    ]);
    expect(events[1]?.data).toEqual({ workspace_id: ws, ...invoice, failed_at: at });
    expect(events[2]?.data).toEqual({ workspace_id: ws, invoice_id: invoice.invoice_id });
    expect(events[3]?.data).toEqual({ workspace_id: ws });
    const listed = JSON.parse(await wsvc('--json', 'operator', 'deliveries')) as { deliveries: OperatorDelivery[] };
    expect(listed.deliveries.map((d) => [d.event, d.status, d.attempt_count, d.last_response_status])).toEqual([
      ['workspace.deleted', 'succeeded', 1, 200],
      ['subscription.unpaid', 'succeeded', 1, 200],
      ['invoice.payment_failed', 'succeeded', 1, 200],
      ['workspace.created', 'succeeded', 1, 200],
    ]);
  });

  it('a failing receiver gets its retries on the clock; `wsvc operator retry` sends once more', async () => {
    const clock = manualClock();
    const worker = testWorker(t, { listen: false, clock, random: () => 0.5 });
    rx.plan('/ops', [{ status: 500 }, { status: 503 }, { status: 200 }]);
    const before = rx.to('/ops').length;
    const at = new Date(clock.now()).toISOString();
    await asCli(t.services).run((c) =>
      c.emit({ type: 'subscription.unpaid', workspaceId: 'ws_gone', invoiceId: 'inv_unpaid', at }),
    );
    await drain(worker);
    expect(rx.to('/ops').length - before).toBe(1);
    // Not due before WEBHOOK_RETRY_BASE_MS (jitter 0 with random 0.5): nothing is sent.
    clock.advance(59_000);
    await drain(worker);
    expect(rx.to('/ops').length - before).toBe(1);
    clock.advance(1_000);
    await drain(worker);
    expect(rx.to('/ops').length - before).toBe(2);
    // WEBHOOK_MAX_RETRIES=1: given up.
    clock.advance(3_600_000);
    await drain(worker);
    expect(rx.to('/ops').length - before).toBe(2);
    const list = JSON.parse(await wsvc('--json', 'operator', 'deliveries', '--limit', '1')) as {
      deliveries: OperatorDelivery[];
    };
    const failed = list.deliveries[0] as OperatorDelivery;
    expect(failed).toMatchObject({
      event: 'subscription.unpaid',
      status: 'failed',
      attempt_count: 2,
      last_response_status: 503,
      next_attempt_at: null,
    });
    const text = await wsvc('operator', 'deliveries', '--limit', '1');
    expect(text).toMatch(/^ID\s+EVENT\s+STATUS\s+ATTEMPTS\s+LAST STATUS\s+NEXT ATTEMPT\n/);
    expect(text).toContain(`${failed.id}  subscription.unpaid  failed  2         503`);

    const retried = JSON.parse(await wsvc('--json', 'operator', 'retry', failed.id)) as { delivery: OperatorDelivery };
    expect(retried.delivery.status).toBe('pending');
    // A queued one is refused.
    await expect(wsvc('operator', 'retry', failed.id)).rejects.toMatchObject({
      stderr: expect.stringContaining('delivery_pending'),
    });
    await drain(worker);
    const sent = rx.to('/ops').slice(before);
    expect(sent).toHaveLength(3);
    // The same event, with the same id and body, on every attempt.
    expect(new Set(sent.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(sent.map((r) => r.body)).size).toBe(1);
    const after = (await t.services.operatorEvents.list(1))[0];
    expect(after).toMatchObject({ id: failed.id, status: 'succeeded', attempt_count: 3, last_response_status: 200 });
  });

  it('the purge-operator-deliveries job deletes those older than EVENT_RETENTION_DAYS (30), and only those', async () => {
    const old = new Date(Date.now() - 31 * 86_400_000).toISOString();
    await asCli(t.services).run((c) =>
      c.emit({ type: 'subscription.unpaid', workspaceId: 'ws_old', invoiceId: 'inv_old', at: old }),
    );
    const before = await rowCount();
    const job = t.services.jobs.find((j) => j.id === 'purge-operator-deliveries');
    expect(await job?.run()).toBe(1);
    expect(await rowCount()).toBe(before - 1);
    const left = await storage.db.selectFrom('operator_deliveries').select('workspace_id').execute();
    expect(left.map((r) => r.workspace_id)).not.toContain('ws_old');
  });

  it('without the settings, nothing is written', async () => {
    const before = await rowCount();
    // Another process on the same database, started without OPERATOR_WEBHOOK_URL and OPERATOR_WEBHOOK_SECRET.
    const other = otherProcess(t);
    try {
      const out = await other.services.workspaces.create(asCli(other.services), {
        name: 'Quiet',
        adminEmail: 'quiet@example.test',
      });
      const ws = out.workspace.id;
      const at = new Date().toISOString();
      await asCli(other.services).run(async (c) => {
        await c.emit({ type: 'subscription.unpaid', workspaceId: ws, invoiceId: 'inv_x', at });
        await c.emit({ type: 'workspace.deleted', workspaceId: ws, at });
      });
    } finally {
      await other.storage.close();
    }
    expect(await rowCount()).toBe(before);
  });

  it('from their producers: the payments job declines through dunning to unpaid, the deletion job after the grace period', async () => {
    const worker = testWorker(t, { listen: false });
    const job = (id: string) => t.services.uow.as(systemActor(`scheduler:${id}`));
    // The requests before (the retries of the test above were signed on its clock, an hour ahead: not verified here).
    const before = rx.to('/ops').length;
    // Everything below happens on the app's clock from 40 days ago to a few days ago: its operator deliveries are due
    // at the worker's (real) time, which also signs them, as the verifier checks.
    pinned = Date.now() - 40 * DAY;
    try {
      const out = await t.services.workspaces.create(asCli(t.services), {
        name: 'Dunning Corp',
        adminEmail: 'dunning@example.test',
      });
      const ws = out.workspace.id;
      // On pro from its start, with a card that Stripe declines, saved before there is anything to charge.
      const customer = (await t.services.billing.ensureCustomer(asCli(t.services), ws)) as string;
      const session = stripe.addCard(customer, CARDS.declined).sessionId;
      expect(await t.services.billing.saveCard(asCli(t.services), ws, session)).toBe(true);
      // A paid plan needs a card: the card first.
      expect(await t.services.billing.setPlan(asCli(t.services), ws, 'pro')).toMatchObject({ change: 'upgraded' });

      // An hour after the first period ends: the invoice job, then the payments job as the scheduler runs them.
      const periodEnd = Date.parse((await t.services.billing.subscriptionOf(ws)).current_period.end);
      const first = periodEnd + 3_600_000;
      pinned = first;
      expect(await t.services.billing.finalizeDue(job('billing-invoices'))).toBe(1);
      const invoice = await storage.db
        .selectFrom('invoices')
        .selectAll()
        .where('workspace_id', '=', ws)
        .executeTakeFirstOrThrow();
      expect(Number(invoice.total_cents)).toBeGreaterThan(0);
      const failedAt: string[] = [];
      for (const day of [0, 1, 3]) {
        pinned = first + day * DAY;
        expect(await t.services.billing.chargeDue(job('billing-payments'))).toBe(1);
        failedAt.push(new Date(pinned).toISOString());
        // Not again before the next retry is due.
        expect(await t.services.billing.chargeDue(job('billing-payments'))).toBe(0);
      }
      const unpaid = await storage.db
        .selectFrom('subscriptions')
        .select('payment_state')
        .where('workspace_id', '=', ws)
        .executeTakeFirstOrThrow();
      expect(unpaid.payment_state).toBe('unpaid');
      expect(stripe.requests.filter((r) => r.path === '/v1/payment_intents').map((r) => r.idempotencyKey)).toEqual([
        `${invoice.id}-attempt-1`,
        `${invoice.id}-attempt-2`,
        `${invoice.id}-attempt-3`,
      ]);

      // Its deletion scheduled (as `wsvc workspaces delete` does), then the job: not before the grace period ends.
      const scheduled = await t.services.workspaceDeletion.schedule(asCli(t.services), ws, { confirm: 'Dunning Corp' });
      const deleteAt = Date.parse(scheduled.delete_at as string);
      expect(deleteAt).toBe(pinned + 2 * DAY);
      pinned = deleteAt - 1;
      expect(await t.services.workspaceDeletion.runDue(job('workspace-deletions'))).toBe(0);
      pinned = deleteAt;
      expect(await t.services.workspaceDeletion.runDue(job('workspace-deletions'))).toBeGreaterThan(0);
      const deletedAt = new Date(pinned).toISOString();
      expect(pinned).toBeLessThan(Date.now());

      pinned = null;
      await drain(worker);
      await drain(worker);
      // In the order they happened (the worker may send a few at once): by time, then cause before effect.
      const rank: OperatorEventType[] = [
        'workspace.created',
        'invoice.payment_failed',
        'subscription.unpaid',
        'workspace.deleted',
      ];
      const events = verified(before).sort(
        (a, b) => a.created_at.localeCompare(b.created_at) || rank.indexOf(a.event) - rank.indexOf(b.event),
      );
      expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
      const money = {
        invoice_id: invoice.id,
        number: `INV-${invoice.number}`,
        plan: 'pro',
        total_cents: Number(invoice.total_cents),
        currency: 'usd',
        period_start: new Date(invoice.period_start).toISOString(),
        period_end: new Date(invoice.period_end).toISOString(),
      };
      expect(events.map((e) => [e.event, e.created_at, e.data])).toEqual([
        ['workspace.created', expect.any(String), { workspace_id: ws, name: 'Dunning Corp' }],
        ...failedAt.map((at) => ['invoice.payment_failed', at, { workspace_id: ws, ...money, failed_at: at }]),
        ['subscription.unpaid', failedAt[2], { workspace_id: ws, invoice_id: invoice.id }],
        ['workspace.deleted', deletedAt, { workspace_id: ws }],
      ]);
    } finally {
      pinned = null;
    }
  });
});
