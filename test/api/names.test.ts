// Backends: both — names are validated before anything is written, and older rows are read back from storage
// Tier: quick
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/kernel/errors.js';
import { asCli, json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { expectValidation } from '../helpers/expect.js';

// docs/api.md#names: single-line names (resource, user, key and workspace names, webhook labels)
// refuse control characters (U+0000–U+001F, U+007F–U+009F) with a 400 naming the field, and change
// nothing; metadata values keep any character.
let t: TestApp;
let ws: TestWorkspace;
beforeAll(async () => {
  t = await startTestApp({ resolveHost: async () => ['93.184.216.34'] });
  ws = await newWorkspace(t);
});
afterAll(() => t?.close());

const BAD = [
  'ci\r\nBcc: x@evil.test',
  'tab\there',
  'bell\u0007',
  'esc\u001b[31mred',
  'del\u007f',
  'nel\u0085',
  'c1\u009f',
];

/** Counts of what a refused request must not change. */
async function counts() {
  const db = t.storage.db;
  const n = async (table: 'resources' | 'api_keys' | 'webhooks' | 'workspaces') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const me = json(await t.request({ method: 'GET', url: '/v1/users/me', key: ws.live })).data;
  return { resources: await n('resources'), keys: await n('api_keys'), webhooks: await n('webhooks'), me };
}

describe('single-line names refuse control characters (docs/api.md#names)', () => {
  it('over HTTP: each field named, issue control_character, nothing changed', async () => {
    const resource = json(
      await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: 'R', type: 'standard' } }),
    ).data;
    const hook = json(
      await t.request({
        method: 'POST',
        url: '/v1/webhooks',
        key: ws.live,
        body: { url: 'https://hooks.example.com/in', events: ['*'], label: 'ok' },
      }),
    ).data;
    const before = await counts();
    for (const bad of BAD) {
      const cases: [method: 'POST' | 'PUT' | 'PATCH', url: string, body: object, field: string][] = [
        ['POST', '/v1/resources', { name: bad, type: 'standard' }, 'name'],
        ['PUT', `/v1/resources/${resource.id}`, { name: bad }, 'name'],
        ['PATCH', '/v1/users/me', { name: bad }, 'name'],
        ['POST', '/v1/keys', { name: bad, env: 'live' }, 'name'],
        ['POST', '/v1/webhooks', { url: 'https://hooks.example.com/in', events: ['*'], label: bad }, 'label'],
        ['PATCH', `/v1/webhooks/${hook.id}`, { label: bad }, 'label'],
      ];
      for (const [method, url, body, field] of cases) {
        const res = await t.request({ method, url, key: ws.live, body });
        const err = expectValidation(res, { field, issue: 'control_character' });
        expect(err.details?.[0]?.message, `${method} ${url} ${JSON.stringify(bad)}`).toBe(
          `${field} must be a single line of text, without control characters such as line breaks or tabs.`,
        );
      }
    }
    expect(await counts()).toEqual(before);
    expect(json(await t.request({ method: 'GET', url: `/v1/resources/${resource.id}`, key: ws.live })).data.name).toBe(
      'R',
    );
  });

  it('through the services the CLI and the console call: workspace, admin, member and key names', async () => {
    const bad = 'Acme\r\nBcc: x@evil.test';
    const refused = async (fn: () => Promise<unknown>, field: string) => {
      const err = await fn().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).details).toContainEqual(
        expect.objectContaining({ field, issue: 'control_character' }),
      );
      expect((err as ValidationError).message).toContain('single line of text');
    };
    const workspaces = async () =>
      Number(
        (
          await t.storage.db
            .selectFrom('workspaces')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await workspaces();
    await refused(
      () => t.services.workspaces.create(asCli(t.services), { name: bad, adminEmail: 'a1@example.test' }),
      'name',
    );
    await refused(
      () =>
        t.services.workspaces.create(asCli(t.services), {
          name: 'Acme',
          adminEmail: 'a2@example.test',
          adminName: 'Ada\nB',
        }),
      'adminName',
    );
    await refused(
      () =>
        t.services.users.create(asCli(t.services), {
          workspaceId: ws.id,
          email: 'u1@example.test',
          role: 'member',
          name: 'x\ty',
        }),
      'name',
    );
    await refused(
      () => t.services.keyRegistry.create(asCli(t.services), { userId: ws.adminId, env: 'live', name: bad }),
      'name',
    );
    expect(await workspaces()).toBe(before);
  });

  it('what stays allowed: metadata values with any character, empty labels, other Unicode', async () => {
    const ok = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: 'Café ☕ — “quoted” \u00a0 𝔘𝔫𝔦', type: 'standard', metadata: { note: 'line 1\r\nline 2\ttab' } },
    });
    expect(ok.statusCode, ok.body).toBe(201);
    expect(json(ok).data.metadata.note).toBe('line 1\r\nline 2\ttab');
    const hook = await t.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: ws.live,
      body: { url: 'https://hooks.example.com/in', events: ['*'], label: '' },
    });
    expect(hook.statusCode, hook.body).toBe(201);
  });
});
