// Backends: both — the entries are rows written in the transaction of each change, on either database
// Tier: full — console sign-ins hash passwords with scrypt at OWASP's cost (about a second of CPU each)
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf, onlyEntry, type StoredEntry, storedEntries } from '../helpers/audit-entries.js';
import { type ConsoleClient, ORIGIN } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { adminOf } from '../helpers/two-factor.js';

// An admin's workspace settings through their real doors, one entry each with the admin as actor: single sign-on (the
// client secret only as "[redacted]"), Slack and Discord integrations (their webhook URLs, which are secrets, the same),
// plan changes; and the invoicing job's invoices as its system actor. A refused change leaves no entry.
vi.setConfig({ testTimeout: 120_000 });

const T = (iso: string) => Date.parse(iso);
let now = T('2028-02-10T00:00:00.000Z');
const clock = { now: () => now };
const UA = 'audit-admin-test/1.0';
const SSO_SECRET = 'sso-client-secret-0123456789abcdef';
const SSO_SECRET_2 = 'sso-client-secret-second-0123456789';
const SLACK = 'https://hooks.slack.com/services/T000/B000/slacksecret1234';
const DISCORD = 'https://discord.com/api/webhooks/123456/discordtoken9876';
const dns: Record<string, string[]> = { 'hooks.slack.com': ['3.120.10.10'], 'discord.com': ['162.159.135.232'] };
let t: TestApp;
let a: { ws: string; userId: string; email: string; client: ConsoleClient };
beforeAll(async () => {
  t = await startTestApp({
    clock,
    config: {
      PUBLIC_URL: ORIGIN,
      SSO_ALLOW_HTTP_ISSUER: true,
      CONSOLE_SESSION_IDLE_MIN: 24 * 60,
      CONSOLE_SESSION_MAX_H: 30 * 24,
    },
    resolveHost: async (host) => dns[host] ?? [],
  });
  a = await adminOf(t, 'Admin doors');
});
afterAll(() => t?.close());

function call(opts: Parameters<ConsoleClient['call']>[0]) {
  return a.client.call({ ws: a.ws, ...opts, headers: { 'user-agent': UA, ...opts.headers } });
}

function expectAdmin(e: StoredEntry, res: LightMyRequestResponse) {
  expect({ type: e.actor_type, id: e.actor_id }).toEqual({ type: 'user', id: a.userId });
  expect({ request_id: e.request_id, ip: e.ip, user_agent: e.user_agent }).toEqual({
    request_id: res.headers['x-request-id'],
    ip: '127.0.0.1',
    user_agent: UA,
  });
}

describe('single sign-on settings', () => {
  const settings = (secret?: string) => ({
    issuer: 'http://idp.example.test',
    client_id: 'wsvc',
    ...(secret ? { client_secret: secret } : {}),
    allowed_domains: ['example.test'],
    default_role: 'member',
    required: false,
  });

  it('configured, changed and removed: sso.configured each time, the client secret only as "[redacted]"', async () => {
    let res!: LightMyRequestResponse;
    const first = await entriesOf(t, a.ws, async () => {
      res = await call({ method: 'PUT', url: '/console/api/sso', body: settings(SSO_SECRET) });
    });
    expect(res.statusCode, res.body).toBe(200);
    const e = onlyEntry(first, 'sso.configured');
    expectAdmin(e, res);
    expect({ type: e.target_type, id: e.target_id, env: e.env }).toEqual({ type: 'sso', id: a.ws, env: null });
    expect(e.changes).toMatchObject({
      issuer: { before: null, after: 'http://idp.example.test' },
      client_id: { before: null, after: 'wsvc' },
      client_secret: { before: null, after: '[redacted]' },
      default_role: { before: null, after: 'member' },
    });

    // A new secret and role: those two fields only.
    const second = await entriesOf(t, a.ws, async () => {
      res = await call({
        method: 'PUT',
        url: '/console/api/sso',
        body: { ...settings(SSO_SECRET_2), default_role: 'viewer' },
      });
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(onlyEntry(second, 'sso.configured').changes).toEqual({
      client_secret: { before: '[redacted]', after: '[redacted]' },
      default_role: { before: 'member', after: 'viewer' },
    });

    // The same settings again (the secret kept): nothing changed, no entry.
    expect(
      await entriesOf(t, a.ws, async () => {
        res = await call({ method: 'PUT', url: '/console/api/sso', body: { ...settings(), default_role: 'viewer' } });
        expect(res.statusCode, res.body).toBe(200);
      }),
    ).toEqual([]);
    // Refused settings: no entry.
    expect(
      await entriesOf(t, a.ws, async () => {
        expectError(
          await call({ method: 'PUT', url: '/console/api/sso', body: { ...settings(), issuer: 'ftp://x' } }),
          400,
          'validation_error',
        );
      }),
    ).toEqual([]);

    const removed = await entriesOf(t, a.ws, async () => {
      res = await call({ method: 'DELETE', url: '/console/api/sso' });
    });
    expect(res.statusCode).toBe(204);
    const r = onlyEntry(removed, 'sso.configured');
    expect(r.changes).toMatchObject({
      issuer: { before: 'http://idp.example.test', after: null },
      client_secret: { before: '[redacted]', after: null },
    });
  });
});

describe('integrations', () => {
  it('created, updated and deleted: one entry each in its environment, the webhook URL only as "[redacted]"', async () => {
    let res!: LightMyRequestResponse;
    const created = await entriesOf(t, a.ws, async () => {
      res = await call({
        method: 'POST',
        url: '/console/api/integrations',
        body: { kind: 'slack', url: SLACK, env: 'live', events: ['resource.created'], categories: [] },
      });
    });
    expect(res.statusCode, res.body).toBe(201);
    const id = json(res).data.id as string;
    const c = onlyEntry(created, 'integration.created');
    expectAdmin(c, res);
    expect({ type: c.target_type, id: c.target_id, env: c.env }).toEqual({ type: 'integration', id, env: 'live' });
    expect(c.changes).toMatchObject({
      kind: { before: null, after: 'slack' },
      url: { before: null, after: '[redacted]' },
      events: { before: null, after: ['resource.created'] },
    });

    const updated = await entriesOf(t, a.ws, async () => {
      res = await call({ method: 'PATCH', url: `/console/api/integrations/${id}`, body: { status: 'disabled' } });
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(onlyEntry(updated, 'integration.updated').changes).toEqual({
      status: { before: 'enabled', after: 'disabled' },
    });

    const deleted = await entriesOf(t, a.ws, async () => {
      res = await call({ method: 'DELETE', url: `/console/api/integrations/${id}` });
    });
    expect(res.statusCode).toBe(204);
    const d = onlyEntry(deleted, 'integration.deleted');
    expect(d.changes).toMatchObject({
      url: { before: '[redacted]', after: null },
      kind: { before: 'slack', after: null },
    });

    // A Discord one in test; a refused one (not the platform's URL) and a second delete leave none.
    const discord = await entriesOf(t, a.ws, async () => {
      res = await call({
        method: 'POST',
        url: '/console/api/integrations',
        body: { kind: 'discord', url: DISCORD, env: 'test', events: [], categories: ['security'] },
      });
    });
    expect(onlyEntry(discord, 'integration.created').env).toBe('test');
    expect(
      await entriesOf(t, a.ws, async () => {
        expectError(
          await call({
            method: 'POST',
            url: '/console/api/integrations',
            body: { kind: 'slack', url: DISCORD, env: 'live', events: ['*'], categories: [] },
          }),
          400,
          'validation_error',
        );
        expectError(await call({ method: 'DELETE', url: `/console/api/integrations/${id}` }), 404, 'not_found');
      }),
    ).toEqual([]);
  });
});

describe('billing', () => {
  it("an admin's plan changes (plan.changed), and the invoicing job's invoice as its system actor", async () => {
    let res!: LightMyRequestResponse;
    const up = await entriesOf(t, a.ws, async () => {
      res = await call({ method: 'POST', url: '/console/api/billing/plan', body: { plan: 'pro' } });
    });
    expect(res.statusCode, res.body).toBe(200);
    const u = onlyEntry(up, 'plan.changed');
    expectAdmin(u, res);
    expect({ type: u.target_type, id: u.target_id, env: u.env }).toEqual({ type: 'subscription', id: a.ws, env: null });
    expect(u.changes).toEqual({ plan: { before: 'free', after: 'pro' } });
    // The same plan again changes nothing; an unknown plan is refused: no entries.
    expect(
      await entriesOf(t, a.ws, async () => {
        expect(
          json(await call({ method: 'POST', url: '/console/api/billing/plan', body: { plan: 'pro' } })).data.change,
        ).toBe('unchanged');
        expectError(
          await call({ method: 'POST', url: '/console/api/billing/plan', body: { plan: 'gold' } }),
          400,
          'validation_error',
        );
      }),
    ).toEqual([]);
    const down = await entriesOf(t, a.ws, async () => {
      res = await call({ method: 'POST', url: '/console/api/billing/plan', body: { plan: 'free' } });
    });
    expect(onlyEntry(down, 'plan.changed').changes).toMatchObject({
      pending_plan: { before: null, after: 'free' },
    });

    // The job (as `scheduler:billing-invoices`) finalizes the period's invoice an hour after it ends, and the
    // scheduled downgrade takes effect with it: two entries, both the job's.
    now = T('2028-03-10T01:00:00.000Z');
    const job = await entriesOf(t, a.ws, () =>
      t.services.billing.finalizeDue(t.services.uow.as(systemActor('scheduler:billing-invoices'))),
    );
    expect(job.map((e) => e.action)).toEqual(['invoice.finalized', 'plan.changed']);
    for (const e of job) {
      expect({ type: e.actor_type, id: e.actor_id, ip: e.ip, request_id: e.request_id }).toEqual({
        type: 'system',
        id: 'scheduler:billing-invoices',
        ip: null,
        request_id: null,
      });
    }
    const inv = job[0] as StoredEntry;
    expect(inv.target_type).toBe('invoice');
    expect(inv.changes).toMatchObject({ status: { before: null, after: 'open' } });
    expect(job[1]?.changes).toMatchObject({
      plan: { before: 'pro', after: 'free' },
      pending_plan: { before: 'free', after: null },
    });
    // A run with nothing due records nothing.
    expect(
      await entriesOf(t, null, () =>
        t.services.billing.finalizeDue(t.services.uow.as(systemActor('scheduler:billing-invoices'))),
      ),
    ).toEqual([]);
  });
});

describe('no secret in any entry', () => {
  it('no client secret and no Slack or Discord webhook URL (nor their secret parts) in any entry', async () => {
    const text = JSON.stringify(await storedEntries(t));
    for (const s of [SSO_SECRET, SSO_SECRET_2, SLACK, DISCORD, 'slacksecret1234', 'discordtoken9876']) {
      expect(text.includes(s), s).toBe(false);
    }
  });
});
