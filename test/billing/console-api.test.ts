import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleClient, ORIGIN, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';

// Backends: both — plan changes are stored and read back through the console API
// Tier: full — console sign-ins over HTTP (each a password hash: scrypt, at the suite's lower cost of vitest.config.ts), for the billing pages' admin and member
// The console's billing API (docs/console.md#billing): the subscription and invoices through the
// /v1 mirror (admins), the plans and "Change plan" as console routes (admins change; CSRF). The
// default plans (docs/billing.md#plans); time is the injected clock.

// Console sign-ins and password changes hash with scrypt (at the suite's lower cost, vitest.config.ts; several per test here): on a loaded 2-core machine that outgrows the default 30 s.
vi.setConfig({ testTimeout: 120_000 });

const T = (iso: string) => Date.parse(iso);
let now = T('2028-02-10T00:00:00.000Z');
const clock = { now: () => now };
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ clock, config: { PUBLIC_URL: ORIGIN, WEBHOOK_ALLOW_INSECURE_URLS: true } });
});
afterAll(async () => {
  await t?.close();
});

async function session(userId: string): Promise<ConsoleClient> {
  const email = (await t.services.users.row(t.storage.db, userId))?.email ?? '';
  const link = await t.services.consoleAuth.makeLink(t.services.uow.as(systemActor('cli')), 'set_password', email, {});
  return signInWithLink(t, link.url);
}

describe('console billing API', () => {
  it('admins read and change the plan; members and viewers get 403 and change nothing', async () => {
    now = T('2028-02-10T00:00:00.000Z');
    const ws = await newWorkspace(t);
    let admin = await session(ws.adminId);
    const member = await session((await ws.member('member')).userId);
    const viewer = await session((await ws.member('viewer')).userId);
    const sub = (c: ConsoleClient) => c.call({ method: 'GET', url: '/console/api/v1/billing/subscription', ws: ws.id });
    const change = (c: ConsoleClient, body: unknown, headers?: Record<string, string>) =>
      c.call({ method: 'POST', url: '/console/api/billing/plan', ws: ws.id, body, headers });

    expect(json(await sub(admin)).data.plan.id).toBe('free');
    expectError(await sub(member), 403, 'insufficient_scope');
    expectError(await sub(viewer), 403, 'insufficient_scope');
    const plans = await member.call({ method: 'GET', url: '/console/api/billing/plans', ws: ws.id });
    expect(json(plans).data.map((p: { id: string }) => p.id)).toEqual(['free', 'pro', 'scale']);

    expectError(await change(member, { plan: 'pro' }), 403, 'insufficient_scope');
    expectError(await change(viewer, { plan: 'pro' }), 403, 'insufficient_scope');
    expectError(await change(admin, { plan: 'gold' }), 400, 'validation_error');
    expectError(await change(admin, { plan: 'pro', extra: 1 }), 400, 'validation_error');
    expectError(await change(admin, {}), 400, 'validation_error');
    expectError(await change(admin, { plan: 'pro' }, { 'x-csrf-token': 'wrong' }), 403, 'csrf_failed');
    expect(json(await sub(admin)).data.plan.id).toBe('free');

    // Upgrade 2028-02-20 00:00 of the period 02-10 → 03-10 (29 days, leap February): 19 days left.
    now = T('2028-02-20T00:00:00.000Z');
    admin = await session(ws.adminId); // the earlier session is idle past its limit
    const up = await change(admin, { plan: 'pro' });
    expect(up.statusCode, up.body).toBe(200);
    // (4900 − 0) × 19 / 29 = 3210.34… → 3210 cents.
    expect(json(up).data).toEqual({
      change: 'upgraded',
      from: 'free',
      to: 'pro',
      proration_cents: 3210,
      effective_at: null,
    });
    const after = json(await sub(admin)).data;
    expect(after.plan.id).toBe('pro');
    expect(after.upcoming_invoice.lines).toContainEqual(
      expect.objectContaining({ kind: 'proration', amount_cents: 3210 }),
    );

    // A downgrade waits for the period's end.
    const down = await change(admin, { plan: 'free' });
    expect(json(down).data).toEqual({
      change: 'downgrade_scheduled',
      from: 'pro',
      to: 'free',
      proration_cents: null,
      effective_at: '2028-03-10T00:00:00.000Z',
    });
    expect(json(await sub(admin)).data.pending_change).toEqual({
      plan: 'free',
      effective_at: '2028-03-10T00:00:00.000Z',
    });
    expect(json(await change(admin, { plan: 'pro' })).data.change).toBe('downgrade_cancelled');
  });

  it('a downgrade over the lower plan limits is 409 downgrade_blocked naming them', async () => {
    now = T('2028-02-10T00:00:00.000Z');
    const ws = await newWorkspace(t);
    const admin = await session(ws.adminId);
    await t.services.billing.setPlan(t.services.uow.as(systemActor('cli')), ws.id, 'pro');
    for (let i = 0; i < 3; i++) {
      const res = await t.request({
        method: 'POST',
        url: '/v1/webhooks',
        key: ws.live,
        body: { url: `http://127.0.0.1:9/h${i}`, events: ['*'] },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    const err = expectError(
      await admin.call({ method: 'POST', url: '/console/api/billing/plan', ws: ws.id, body: { plan: 'free' } }),
      409,
      'downgrade_blocked',
    );
    expect(err.message).toBe(
      'Cannot move to Free: webhooks: 3 in the live environment, Free allows 2. Delete the excess first.',
    );
  });
});
