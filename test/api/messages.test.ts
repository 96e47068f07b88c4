import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConfigError, loadConfig } from '../../src/config.js';
import { EVENT_TYPES } from '../../src/kernel/event-types.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { expectValidation } from '../helpers/expect.js';
import { startWsvc, stopProcess } from '../helpers/processes.js';

// Backends: sqlite — validation and settings messages, decided before anything is read or written
// Tier: full — starts a wsvc process for each settings message it checks
// Errors that name the fix (docs/api.md#validation): allowed values listed, forms said in words,
// settings named with the value given, and the setting that allows local webhook URLs mentioned.

let t: TestApp;
let ws: TestWorkspace;
beforeAll(async () => {
  t = await startTestApp({ resolveHost: async (host) => (host === 'localhost' ? ['127.0.0.1'] : ['93.184.216.34']) });
  ws = await newWorkspace(t);
});
afterAll(() => t.close());

// The catalogue in its order (resource types, then the platform's).
const EVENTS = EVENT_TYPES.join(', ');
// Event filters also accept the test event (POST /webhooks/{id}/test); subscriptions do not.
const EVENT_FILTERS = `${EVENTS}, webhook.test`;

describe('validation messages list the allowed values', () => {
  const cases: [string, string, unknown, string, string][] = [
    ['POST', '/v1/resources', { name: 'a', type: 'big' }, 'type', 'type must be one of: standard, premium, custom.'],
    ['GET', '/v1/resources?status=gone', undefined, 'status', 'status must be one of: active, archived.'],
    ['GET', '/v1/resources?type=x', undefined, 'type', 'type must be one of: standard, premium, custom.'],
    ['GET', '/v1/events?event=resource.moved', undefined, 'event', `event must be one of: ${EVENT_FILTERS}.`],
    [
      'POST',
      '/v1/webhooks',
      { url: 'https://hooks.example.com/in', events: ['resource.moved'] },
      'events.0',
      `events.0 must be one of: ${EVENTS}, *.`,
    ],
    ['GET', '/v1/resources?limit=0', undefined, 'limit', 'limit must be >= 1.'],
    ['POST', '/v1/resources', { name: 5, type: 'standard' }, 'name', 'name must be a string.'],
    ['PATCH', '/v1/users/me', { name: 5 }, 'name', 'name must be a string.'],
  ];
  for (const [method, url, body, field, message] of cases) {
    it(`${method} ${url} ${body ? JSON.stringify(body) : ''} → "${message}"`, async () => {
      const before = json(await t.request({ method: 'GET', url: '/v1/resources?limit=100', key: ws.live })).meta.total;
      const res = await t.request({ method: method as 'GET', url, key: ws.live, body });
      const err = expectValidation(res, { field });
      expect(err.details?.find((d) => d.field === field)?.message).toBe(message);
      expect(json(await t.request({ method: 'GET', url: '/v1/resources?limit=100', key: ws.live })).meta.total).toBe(
        before,
      );
    });
  }

  it('delivery log ?status= lists the delivery states', async () => {
    const hook = json(
      await t.request({
        method: 'POST',
        url: '/v1/webhooks',
        key: ws.live,
        body: { url: 'https://hooks.example.com/in', events: ['*'] },
      }),
    ).data;
    const res = await t.request({ method: 'GET', url: `/v1/webhooks/${hook.id}/deliveries?status=done`, key: ws.live });
    const err = expectValidation(res, { field: 'status', issue: 'invalid_value' });
    expect(err.details?.[0]?.message).toBe('status must be one of: pending, succeeded, failed, cancelled.');
  });
});

describe('a refused webhook URL', () => {
  for (const url of ['http://hooks.example.com/in', 'https://127.0.0.1/in', 'https://localhost/in']) {
    it(`${url} names the setting that allows it for local development, and creates nothing`, async () => {
      const res = await t.request({ method: 'POST', url: '/v1/webhooks', key: ws.test, body: { url, events: ['*'] } });
      const err = expectValidation(res, { field: 'url' });
      expect(err.message).toMatch(/WEBHOOK_ALLOW_INSECURE_URLS=true/);
      expect(err.message).toMatch(/local development/);
      expect(err.message).not.toMatch(/D\d+/);
      const list = json(await t.request({ method: 'GET', url: '/v1/webhooks', key: ws.test }));
      expect(list.data).toEqual([]);
    });
  }
});

describe('settings', () => {
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (err) {
      return (err as ConfigError).problems;
    }
    return [];
  };

  it('name the setting, the allowed values and the value given', () => {
    expect(problems({ LOG_LEVEL: 'loud' })).toEqual([
      'LOG_LEVEL must be one of: fatal, error, warn, info, debug, trace, silent; got "loud"',
    ]);
    expect(problems({ DATABASE_URL: 'mysql://x' })).toEqual([
      'DATABASE_URL must be sqlite:<file path> (such as sqlite:./data/workspace.db) or postgres://user@host:5432/database; got "mysql://x"',
    ]);
    expect(problems({ PUBLIC_URL: 'foo' })).toEqual([
      'PUBLIC_URL must be the http:// or https:// address people open the console at, such as https://console.example.com; got "foo"',
    ]);
    expect(problems({ PORT: 'abc', WEBHOOK_ALLOW_INSECURE_URLS: 'maybe', REDIS_URL: 'http://x' })).toEqual([
      'PORT must be a whole number from 0 to 65535; got "abc"',
      'REDIS_URL must be redis://host:6379[/db] or rediss://… (TLS); got "http://x"',
      'WEBHOOK_ALLOW_INSECURE_URLS must be true or false; got "maybe"',
    ]);
  });

  it('refuse an operator webhook address without its secret, and a secret without an address', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const url = 'https://ops.example.com/hooks';
    expect(problems({ OPERATOR_WEBHOOK_URL: url })).toEqual([
      'OPERATOR_WEBHOOK_SECRET is required with OPERATOR_WEBHOOK_URL: the secret that signs operator events',
    ]);
    expect(problems({ OPERATOR_WEBHOOK_SECRET: secret })).toEqual([
      'OPERATOR_WEBHOOK_URL is required with OPERATOR_WEBHOOK_SECRET: where operator events are sent',
    ]);
    expect(problems({ OPERATOR_WEBHOOK_URL: url, OPERATOR_WEBHOOK_SECRET: secret })).toEqual([]);
    expect(problems({})).toEqual([]);
    // A bad secret is described, never echoed.
    const bad = problems({ OPERATOR_WEBHOOK_URL: url, OPERATOR_WEBHOOK_SECRET: 'hunter2hunter2' });
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatch(/^OPERATOR_WEBHOOK_SECRET must be whsec_ .*; got a value of 14 characters \(not shown\)$/);
  });

  it('the CLI says a bad email in words, and a bad setting by name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wsvc-msg-'));
    const run = (args: string[], env: Record<string, string> = {}) =>
      spawnSync(process.execPath, ['bin/wsvc.js', ...args], {
        env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, LOG_LEVEL: 'silent', ...env },
        encoding: 'utf8',
      });
    const email = run(['workspaces', 'create', '--name', 'x', '--admin-email', 'notanemail']);
    expect(email.status).toBe(1);
    expect(email.stderr.trim()).toBe(
      'error: validation_error: adminEmail must be an email address such as name@example.com; got "notanemail"',
    );
    const level = run(['migrate'], { LOG_LEVEL: 'loud' });
    expect(level.status).toBe(1);
    expect(level.stderr).toContain(
      'LOG_LEVEL must be one of: fatal, error, warn, info, debug, trace, silent; got "loud"',
    );
  });

  // Two real server processes start and stop here (over a second of CPU each, more on a loaded machine).
  it('the server warns at start-up while WEBHOOK_ALLOW_INSECURE_URLS is on', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wsvc-warn-'));
    const env = { DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, PORT: '0' };
    const on = await startWsvc(['serve', '--api-only'], { ...env, WEBHOOK_ALLOW_INSECURE_URLS: 'true' });
    await stopProcess(on.child);
    expect(on.output()).toMatch(/"level":40.*WEBHOOK_ALLOW_INSECURE_URLS is on/);
    const off = await startWsvc(['serve', '--api-only'], env);
    await stopProcess(off.child);
    expect(off.output()).not.toMatch(/WEBHOOK_ALLOW_INSECURE_URLS/);
  });
});
