// Backends: both — secrets are sealed in the database's rows: the SQLite file and its WAL, or pg_dump's output
// Tier: quick
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig, secretsKeys } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { systemActor } from '../../src/kernel/principal.js';
import { createSender, type Send } from '../../src/lib/http-send.js';
import { createSealer, isSealed, newSecretsKey, SecretsKeyError } from '../../src/lib/sealed.js';
import { totpCode } from '../../src/modules/mfa/totp.js';
import { secretAt } from '../../src/modules/webhooks/secret-at.js';
import { sealColumns } from '../../src/platform/sealed-columns.js';
import { createServices } from '../../src/services.js';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleClient, ORIGIN, signInWithLink } from '../helpers/console.js';
import { followToRedirect, type OidcProvider, startOidcProvider } from '../helpers/oidc-provider.js';
import { type Received, type Receiver, startReceiver } from '../helpers/receiver.js';
import { clientOf, enrolTotp, manualClock, postPassword, postSecondFactor } from '../helpers/two-factor.js';
import { testWorker } from '../helpers/worker.js';

// Secrets at rest (docs/settings.md#secrets-at-rest): every secret the service reads back is stored sealed
// (AES-256-GCM, src/lib/sealed.ts); a copy of the database file or a dump holds none of them, and each
// still does its work: a delivery is signed, a TOTP code checked, an SSO sign-in completed, a chat message sent.

vi.setConfig({ testTimeout: 120_000 });

const REDIRECT = `${ORIGIN}/console/sso/callback`;
const SSO_SECRET = 'sso-client-secret-sealed-0123456789abcdef';
const SLACK = 'https://hooks.slack.com/services/T0SEAL/B0SEAL/slackclearsecret42';
const DISCORD = 'https://discord.com/api/webhooks/424242/discordcleartoken42';
const dns: Record<string, string[]> = { 'hooks.slack.com': ['3.120.10.10'], 'discord.com': ['162.159.135.232'] };
const clock = manualClock(Date.now());

let t: TestApp;
let rx: Receiver;
let idp: OidcProvider;
let admin: ConsoleClient;
let adminEmail: string;
let ws: string;
let liveKey: string;

beforeAll(async () => {
  rx = await startReceiver();
  idp = await startOidcProvider({
    clients: [{ client_id: 'wsvc', client_secret: SSO_SECRET, redirect_uris: [REDIRECT] }],
  });
  const real = createSender({ timeoutMs: 5000, allowInsecure: true });
  // Slack and Discord are the receiver, reached under their real URLs' paths.
  const integrationSend: Send = (url, headers, body) => real(`${rx.url('')}${new URL(url).pathname}`, headers, body);
  t = await startTestApp({
    clock,
    config: { PUBLIC_URL: ORIGIN, SSO_ALLOW_HTTP_ISSUER: true, WEBHOOK_ALLOW_INSECURE_URLS: true },
    resolveHost: async (host) => dns[host] ?? ['127.0.0.1'],
    integrationSend,
  });
  adminEmail = `sealed-${Date.now()}@example.test`;
  const out = await t.services.workspaces.create(asCli(t.services), { name: 'Sealed', adminEmail });
  ws = out.workspace.id;
  liveKey = out.keys.live.key;
  admin = await signInWithLink(t, out.set_password_url);
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
  await idp?.close();
});

/** Every byte the database holds: the SQLite file and its WAL, or pg_dump of this file's schema. */
function databaseBytes(): string {
  const url = t.config.DATABASE_URL;
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    return ['', '-wal']
      .filter((s) => existsSync(path + s))
      .map((s) => readFileSync(path + s).toString('latin1'))
      .join('\n');
  }
  const u = new URL(url);
  const schema = (t.storage as unknown as { schema: string }).schema;
  const args = ['-h', u.hostname, '-p', u.port || '5432', '-U', decodeURIComponent(u.username) || 'postgres'];
  return execFileSync('pg_dump', [...args, '-n', schema, u.pathname.slice(1)], {
    env: { ...process.env, PGPASSWORD: decodeURIComponent(u.password) },
    maxBuffer: 256 * 1024 * 1024,
  }).toString('utf8');
}

const api = (method: 'POST' | 'GET', url: string, body?: unknown) =>
  t.request({ method, url, key: liveKey, ...(body === undefined ? {} : { body }) });

describe('secrets at rest (docs/settings.md#secrets-at-rest)', () => {
  it('every kind of secret is stored sealed: none is in the database file or dump, and each still does its work', async () => {
    // A webhook, its secret rotated with an overlap: the current and the previous secret are both stored.
    const hook = await api('POST', '/v1/webhooks', { url: rx.url('/sealed-hook'), events: ['*'] });
    expect(hook.statusCode, hook.body).toBe(201);
    const { id: hookId, secret: oldSecret } = json(hook).data as { id: string; secret: string };
    const rotated = await api('POST', `/v1/webhooks/${hookId}/rotate-secret`, { expire_old_in_s: 3600 });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const newSecret = json(rotated).data.secret as string;
    // A TOTP seed, the SSO client secret, a Slack and a Discord URL.
    const { secret: totpSecret } = await enrolTotp(admin, clock.now());
    const sso = await admin.call({
      method: 'PUT',
      url: '/console/api/sso',
      ws,
      body: {
        issuer: idp.issuer,
        client_id: 'wsvc',
        client_secret: SSO_SECRET,
        allowed_domains: ['corp.test'],
        default_role: 'member',
        required: false,
      },
    });
    expect(sso.statusCode, sso.body).toBe(200);
    const chat: Record<string, string> = {};
    for (const [kind, url] of [
      ['slack', SLACK],
      ['discord', DISCORD],
    ] as const) {
      const res = await admin.call({
        method: 'POST',
        url: '/console/api/integrations',
        ws,
        body: { kind, url, env: 'live', events: ['*'], categories: [] },
      });
      expect(res.statusCode, res.body).toBe(201);
      chat[kind] = json(res).data.id;
      // The hint (host and last 4 characters) is made from the opened URL.
      expect(json(res).data.url_hint).toBe(`${new URL(url).hostname} …${url.slice(-4)}`);
    }

    // Stored: each column holds a sealed value.
    const db = t.storage.db;
    const hookRow = await db.selectFrom('webhooks').selectAll().where('id', '=', hookId).executeTakeFirstOrThrow();
    const mfaRow = await db
      .selectFrom('console_mfa')
      .selectAll()
      .where('email', '=', adminEmail)
      .executeTakeFirstOrThrow();
    const ssoRow = await db
      .selectFrom('workspace_sso')
      .selectAll()
      .where('workspace_id', '=', ws)
      .executeTakeFirstOrThrow();
    const chatRows = await db.selectFrom('integrations').select('url').where('workspace_id', '=', ws).execute();
    const stored = [
      hookRow.secret,
      hookRow.previous_secret,
      mfaRow.totp_secret,
      ssoRow.client_secret,
      ...chatRows.map((r) => r.url),
    ];
    expect(stored).toHaveLength(6);
    for (const s of stored) expect(isSealed(String(s)), String(s)).toBe(true);

    // Nowhere in the file (and its WAL) or the dump: neither a secret whole nor its distinctive part.
    const bytes = databaseBytes();
    expect(bytes).toContain(hookId); // the grep does see the rows
    const clear = [
      oldSecret,
      oldSecret.slice('whsec_'.length),
      newSecret,
      newSecret.slice('whsec_'.length),
      totpSecret,
      SSO_SECRET,
      SLACK,
      'slackclearsecret42',
      DISCORD,
      'discordcleartoken42',
    ];
    for (const c of clear) expect(bytes.includes(c), `${c} found in the database`).toBe(false);

    // A delivery signed from the sealed secrets: both during the overlap.
    const worker = testWorker(t, { clock, listen: false });
    const made = await api('POST', '/v1/resources', { name: 'sealed', type: 'standard' });
    expect(made.statusCode, made.body).toBe(201);
    await worker.runOnce();
    const got = rx.to('/sealed-hook').at(-1) as Received;
    expect(got).toBeDefined();
    const headers = {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    };
    for (const s of [newSecret, oldSecret]) {
      expect(new Webhook(s.slice('whsec_'.length)).verify(got.body, headers)).toMatchObject({
        event: 'resource.created',
      });
    }

    // A TOTP code checked against the sealed seed, at the next sign-in.
    clock.advance(30_000);
    const pending = await postPassword(t, adminEmail);
    expect(pending.statusCode, pending.body).toBe(202);
    const second = await postSecondFactor(t, {
      token: json(pending).data.token,
      code: totpCode(totpSecret, clock.now()),
    });
    expect(clientOf(t, second).session).toMatchObject({ method: 'password+totp' });

    // An SSO sign-in: the token exchange authenticates with the sealed client secret.
    const start = await t.request({
      method: 'POST',
      url: '/console/api/sso/start',
      body: { workspace_id: ws, email: 'ada@corp.test' },
      headers: { origin: ORIGIN },
    });
    expect(start.statusCode, start.body).toBe(200);
    const query = await followToRedirect(json(start).data.authorization_url, REDIRECT);
    const signedIn = await t.request({
      method: 'POST',
      url: '/console/api/sso/callback',
      body: { query },
      headers: { origin: ORIGIN, cookie: String(start.headers['set-cookie']).split(';')[0] as string },
    });
    expect(clientOf(t, signedIn).session).toMatchObject({ email: 'ada@corp.test', method: 'sso' });

    // Chat messages sent to the sealed Slack and Discord URLs.
    for (const id of Object.values(chat)) {
      const res = await admin.call({ method: 'POST', url: `/console/api/integrations/${id}/test`, ws });
      expect(res.statusCode, res.body).toBe(202);
    }
    const sent = await t.services.integrations.sendDue(t.services.uow.as(systemActor('scheduler:integrations')));
    expect(sent).toBeGreaterThanOrEqual(2);
    expect(rx.to(new URL(SLACK).pathname).length).toBeGreaterThanOrEqual(1);
    expect(rx.to(new URL(DISCORD).pathname).length).toBeGreaterThanOrEqual(1);
  });

  it('a sealed value moved to another row, or to another workspace, does not open', async () => {
    const a = json(await api('POST', '/v1/webhooks', { url: rx.url('/a'), events: ['*'] })).data as { id: string };
    const b = json(await api('POST', '/v1/webhooks', { url: rx.url('/b'), events: ['*'] })).data as { id: string };
    const other = await t.services.workspaces.create(asCli(t.services), {
      name: 'Other',
      adminEmail: `other-${Date.now()}@example.test`,
    });
    const c = json(
      await t.request({
        method: 'POST',
        url: '/v1/webhooks',
        key: other.keys.live.key,
        body: { url: rx.url('/c'), events: ['*'] },
      }),
    ).data as { id: string };
    const row = (id: string) =>
      t.storage.db
        .selectFrom('webhooks')
        .select(['secret', 'workspace_id'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
    const stolen = (await row(a.id)).secret;
    // A sealer of the same key with nothing cached: what another process (or a restart) would do.
    const fresh = createServices({ storage: t.storage, clock: systemClock, config: t.config }).secrets.sealer;
    expect(fresh.open(stolen, secretAt(ws, a.id, 'secret'))).toMatch(/^whsec_/);
    expect(() => fresh.open(stolen, secretAt(ws, b.id, 'secret'))).toThrow(SecretsKeyError);
    expect(() => fresh.open(stolen, secretAt(other.workspace.id, c.id, 'secret'))).toThrow(SecretsKeyError);
    expect(() => fresh.open(stolen, secretAt(ws, a.id, 'previous_secret'))).toThrow(SecretsKeyError);
    // Copied into B's row, B's rotation (which opens its secret to keep it as the previous one) refuses.
    await t.storage.db.updateTable('webhooks').set({ secret: stolen }).where('id', '=', b.id).execute();
    const res = await api('POST', `/v1/webhooks/${b.id}/rotate-secret`, { expire_old_in_s: 60 });
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toContain('whsec_');
  });

  it('secrets stored clear (by an earlier version) are sealed at start-up, in batches a stop interrupts and a restart finishes', async () => {
    const ids: string[] = [];
    const clearSecrets: string[] = [];
    for (let i = 0; i < 5; i++) {
      const h = json(await api('POST', '/v1/webhooks', { url: rx.url(`/clear-${i}`), events: ['*'] })).data as {
        id: string;
      };
      const clear = `whsec_${Buffer.alloc(32, 65 + i).toString('base64')}`;
      await t.storage.db.updateTable('webhooks').set({ secret: clear }).where('id', '=', h.id).execute();
      ids.push(h.id);
      clearSecrets.push(clear);
    }
    const secrets = t.services.secrets;
    // A run stopped after its first batch of 2: those 2 are sealed, the others still clear.
    await expect(
      sealColumns(
        t.services.uow.as(systemActor('scheduler:seal-secrets')),
        t.storage.db,
        secrets.sealer,
        secrets.sealedColumns,
        {
          kid: null,
          batch: 2,
          onBatch: () => {
            throw new Error('stopped');
          },
        },
      ),
    ).rejects.toThrow('stopped');
    const storedNow = async () =>
      (
        await t.storage.db
          .selectFrom('webhooks')
          .select(['id', 'secret'])
          .where('id', 'in', ids)
          .orderBy('id')
          .execute()
      ).map((r) => r.secret);
    expect((await storedNow()).filter((s) => isSealed(s))).toHaveLength(2);
    // The next start seals the rest; each opens to the secret it was.
    expect(await secrets.prepare()).toBe(3);
    const after = await t.storage.db.selectFrom('webhooks').select(['id', 'secret']).where('id', 'in', ids).execute();
    for (const r of after) {
      expect(isSealed(r.secret)).toBe(true);
      expect(secrets.sealer.open(r.secret, secretAt(ws, r.id, 'secret'))).toBe(clearSecrets[ids.indexOf(r.id)]);
    }
    expect(await secrets.prepare()).toBe(0);
  });

  it('start-up with sealed secrets and another key, or none on PostgreSQL, refuses naming SECRETS_KEY', async () => {
    const wrong = loadConfig(
      {},
      { DATABASE_URL: t.config.DATABASE_URL, LOG_LEVEL: 'silent', SECRETS_KEY: newSecretsKey() },
    );
    const services = createServices({ storage: t.storage, clock: systemClock, config: wrong });
    await expect(services.secrets.prepare()).rejects.toThrow(
      /sealed with key [\w-]{12}, which SECRETS_KEY does not hold/,
    );
    // With the old key beside the new one (the old still opens), start-up goes on.
    const both = createSealer([Buffer.from(newSecretsKey(), 'base64'), ...secretsKeys(t.config).keys]);
    await expect(
      createServices({ storage: t.storage, clock: systemClock, config: wrong, sealer: both }).secrets.prepare(),
    ).resolves.toBe(0);
    if (!t.config.DATABASE_URL.startsWith('sqlite:')) {
      const none = loadConfig({}, { DATABASE_URL: t.config.DATABASE_URL, LOG_LEVEL: 'silent' });
      expect(() => createServices({ storage: t.storage, clock: systemClock, config: none })).toThrow(
        /SECRETS_KEY is required with PostgreSQL/,
      );
    }
  });
});
