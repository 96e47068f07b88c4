import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, secretsKeys, settingWarnings, trustProxy } from './config.js';

// Backends: sqlite — parsing and checking of settings, no storage
// Tier: quick

const load = (env: Record<string, string>) => loadConfig({ DATABASE_URL: 'sqlite::memory:', ...env });

describe('PLAN_LIMITS (docs/billing.md#plan-limits)', () => {
  it('is on by default; operators can turn it off', () => {
    expect(load({}).PLAN_LIMITS).toBe('on');
    expect(load({ PLAN_LIMITS: 'off' }).PLAN_LIMITS).toBe('off');
    expect(() => load({ PLAN_LIMITS: 'maybe' })).toThrow(ConfigError);
  });
});

describe('TRUST_PROXY', () => {
  it('is off by default', () => {
    expect(trustProxy(load({}))).toBe(false);
    expect(trustProxy(load({ TRUST_PROXY: 'off' }))).toBe(false);
    expect(trustProxy(load({ TRUST_PROXY: '0' }))).toBe(false);
  });

  it('takes a hop count or a list of addresses and CIDR ranges', () => {
    expect(trustProxy(load({ TRUST_PROXY: '1' }))).toBe(1);
    expect(trustProxy(load({ TRUST_PROXY: '10.0.0.5, 10.1.0.0/16,::1,loopback' }))).toEqual([
      '10.0.0.5',
      '10.1.0.0/16',
      '::1',
      'loopback',
    ]);
  });

  it('refuses anything else, naming the bad entry', () => {
    for (const bad of ['true', '10.0.0.300', 'proxy.example.com', '10.0.0.0/99', '1;2']) {
      expect(() => load({ TRUST_PROXY: bad }), bad).toThrow(ConfigError);
    }
    expect(() => load({ TRUST_PROXY: '10.0.0.5,nope' })).toThrow(/"nope"/);
  });

  it('warns when PUBLIC_URL is https and TRUST_PROXY is off', () => {
    const https = { PUBLIC_URL: 'https://console.example.com' };
    expect(settingWarnings(load(https)).join()).toMatch(/TRUST_PROXY is off/);
    expect(settingWarnings(load({ ...https, TRUST_PROXY: '1' })).join()).not.toMatch(/TRUST_PROXY/);
    expect(settingWarnings(load({})).join()).not.toMatch(/TRUST_PROXY/);
  });

  it('warns while WEBHOOK_ALLOW_INSECURE_URLS is on, saying what it allows and what stays refused', () => {
    expect(settingWarnings(load({ WEBHOOK_ALLOW_INSECURE_URLS: 'true' }))).toContain(
      'WEBHOOK_ALLOW_INSECURE_URLS is on: webhooks may use http:// and reach loopback and private addresses ' +
        '(link-local and cloud metadata addresses, such as 169.254.169.254, stay refused). ' +
        'For local development and tests only; turn it off in production (docs/api.md#webhook-urls).',
    );
    expect(settingWarnings(load({})).join()).not.toMatch(/WEBHOOK_ALLOW_INSECURE_URLS/);
  });
});

describe('console session lifetimes', () => {
  it('default to ASVS level 2: 30 minutes idle, 12 hours in all; both can be set', () => {
    expect(load({})).toMatchObject({ CONSOLE_SESSION_IDLE_MIN: 30, CONSOLE_SESSION_MAX_H: 12 });
    expect(load({ CONSOLE_SESSION_IDLE_MIN: '15', CONSOLE_SESSION_MAX_H: '8' })).toMatchObject({
      CONSOLE_SESSION_IDLE_MIN: 15,
      CONSOLE_SESSION_MAX_H: 8,
    });
    expect(() => load({ CONSOLE_SESSION_IDLE_MIN: '0' })).toThrow(/CONSOLE_SESSION_IDLE_MIN/);
  });
});

describe('PLANS_FILE', () => {
  it('a bad plans file stops start-up naming the plan and the field; a good one loads', async () => {
    const { writeFileSync } = await import('node:fs');
    const dir = mkdtempSync(join(tmpdir(), 'plans-'));
    const file = join(dir, 'plans.json');
    const free = {
      id: 'free',
      name: 'Free',
      base_price_cents: 0,
      included_requests: 100,
      hard_cap: true,
      overage_unit_requests: null,
      overage_unit_price_cents: null,
      max_resources: 5,
      max_webhooks: 1,
    };
    writeFileSync(file, JSON.stringify({ plans: [free, { ...free, id: 'gold', name: 'Gold', hard_cap: 'yes' }] }));
    let caught: unknown;
    try {
      load({ PLANS_FILE: file });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).message).toContain('plan "gold" field "hard_cap" must be true or false; got "yes"');
    expect(() => load({ PLANS_FILE: join(dir, 'missing.json') })).toThrow(/cannot be read \(ENOENT\)/);
    writeFileSync(file, JSON.stringify({ plans: [free] }));
    expect(load({ PLANS_FILE: file }).PLANS_FILE).toBe(file);
  });
});

describe('SECRETS_KEY (docs/settings.md#secrets-at-rest)', () => {
  it('on SQLite unset: the first start makes the key file beside the database, mode 0600; later starts read it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wsvc-key-'));
    try {
      const config = load({ DATABASE_URL: `sqlite:${join(dir, 'workspace.db')}` });
      const first = secretsKeys(config);
      expect(first.createdFile).toBe(join(dir, 'workspace.db.key'));
      expect(statSync(join(dir, 'workspace.db.key')).mode & 0o777).toBe(0o600);
      const again = secretsKeys(config);
      expect(again.createdFile).toBeUndefined();
      expect(again.keys[0]?.equals(first.keys[0] as Buffer)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is required with PostgreSQL; a bad one is named, never echoed', () => {
    const pg = load({ DATABASE_URL: 'postgres://u@h/d' });
    expect(() => secretsKeys(pg)).toThrow(/SECRETS_KEY is required with PostgreSQL/);
    const key = Buffer.alloc(32, 7).toString('base64');
    expect(secretsKeys(load({ DATABASE_URL: 'postgres://u@h/d', SECRETS_KEY: key })).source).toBe('SECRETS_KEY');
    const short = Buffer.alloc(16, 7).toString('base64');
    try {
      load({ SECRETS_KEY: short });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as Error).message).toMatch(/SECRETS_KEY's key 1 is not 32 bytes/);
      expect((e as Error).message).not.toContain(short);
    }
  });
});
