import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/kernel/event-types.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { expectNoChange } from '../helpers/snapshot.js';

// Backends: both — endpoints and their per-environment limits are stored and counted
// Tier: quick
// Webhook endpoints (docs/api.md#webhooks) and the webhook URL check at creation, with the guard ON (the default) and a
// DNS stand-in: names ending in .public.test resolve to a public address, others fail.
const resolveHost = async (host: string) => {
  if (host.endsWith('.public.test')) return ['93.184.216.34'];
  if (host === 'mixed.test') return ['93.184.216.34', '10.0.0.7'];
  throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
};

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ resolveHost });
});
afterAll(() => t.close());

const create = (key: string, body: unknown) => t.request({ method: 'POST', url: '/v1/webhooks', key, body });

describe('POST /v1/webhooks (docs/api.md#webhooks)', () => {
  it('creates an enabled webhook and returns its secret once', async () => {
    const ws = await newWorkspace(t);
    const res = await create(ws.live, {
      url: 'https://hooks.public.test/in',
      events: ['resource.created'],
      label: 'CRM',
    });
    expect(res.statusCode, res.body).toBe(201);
    const hook = json(res).data;
    expect(Object.keys(hook).sort()).toEqual(
      [
        'created_at',
        'disabled_reason',
        'events',
        'failing_since',
        'id',
        'label',
        'previous_secret_expires_at',
        'secret',
        'status',
        'updated_at',
        'url',
        'workspace_id',
      ].sort(),
    );
    expect(hook).toMatchObject({
      url: 'https://hooks.public.test/in',
      events: ['resource.created'],
      label: 'CRM',
      status: 'enabled',
      disabled_reason: null,
      failing_since: null,
      previous_secret_expires_at: null,
      workspace_id: ws.id,
    });
    expect(hook.id).toMatch(/^wh_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(hook.secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    expect(hook.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const got = json(await t.request({ method: 'GET', url: `/v1/webhooks/${hook.id}`, key: ws.live })).data;
    const { secret: _secret, ...withoutSecret } = hook;
    expect(got).toEqual(withoutSecret);
    const list = json(await t.request({ method: 'GET', url: '/v1/webhooks', key: ws.live }));
    expect(list.data).toEqual([withoutSecret]);
    expect(list.meta).toEqual({ total: 1, limit: 20, offset: 0, next_cursor: null });
    expect(JSON.stringify(list)).not.toContain('whsec_');
  });

  it('label is optional (null), and "*" subscribes to everything', async () => {
    const ws = await newWorkspace(t);
    const res = await create(ws.live, { url: 'https://hooks.public.test/all', events: ['*'] });
    expect(res.statusCode, res.body).toBe(201);
    expect(json(res).data).toMatchObject({ label: null, events: ['*'] });
  });

  const bad: [string, unknown, { field: string; issue?: string }][] = [
    ['no url', { events: ['*'] }, { field: 'url' }],
    ['no events', { url: 'https://hooks.public.test/x' }, { field: 'events' }],
    ['empty events', { url: 'https://hooks.public.test/x', events: [] }, { field: 'events' }],
    [
      'unknown event type',
      { url: 'https://hooks.public.test/x', events: ['resource.exploded'] },
      { field: 'events.0' },
    ],
    ['duplicate events', { url: 'https://hooks.public.test/x', events: ['*', '*'] }, { field: 'events' }],
    ['events not an array', { url: 'https://hooks.public.test/x', events: '*' }, { field: 'events' }],
    ['url not a string', { url: 42, events: ['*'] }, { field: 'url' }],
    [
      'label too long',
      { url: 'https://hooks.public.test/x', events: ['*'], label: 'x'.repeat(256) },
      { field: 'label' },
    ],
    ['unknown field', { url: 'https://hooks.public.test/x', events: ['*'], secret: 'mine' }, { field: 'secret' }],
    ['read-only field', { url: 'https://hooks.public.test/x', events: ['*'], status: 'enabled' }, { field: 'status' }],
    ['url too long', { url: `https://hooks.public.test/${'a'.repeat(2048)}`, events: ['*'] }, { field: 'url' }],
  ];
  for (const [name, body, problem] of bad) {
    it(`${name}: 400 validation_error, nothing written`, async () => {
      const ws = await newWorkspace(t);
      const res = await expectNoChange(t, () => create(ws.live, body));
      expectValidation(res, problem);
    });
  }

  it('at most 16 per workspace and environment (docs/api.md#webhooks); the other environment has its own 16', async () => {
    const ws = await newWorkspace(t);
    for (let i = 0; i < 16; i++) {
      expect((await create(ws.live, { url: `https://hooks.public.test/${i}`, events: ['*'] })).statusCode).toBe(201);
    }
    const res = await expectNoChange(t, () => create(ws.live, { url: 'https://hooks.public.test/17', events: ['*'] }));
    expectValidation(res, { field: 'url', issue: 'limit_reached' });
    expect((await create(ws.test, { url: 'https://hooks.public.test/t', events: ['*'] })).statusCode).toBe(201);
  });

  it('live and test webhooks are separate worlds (docs/api.md#environments)', async () => {
    const ws = await newWorkspace(t);
    const live = json(await create(ws.live, { url: 'https://hooks.public.test/l', events: ['*'] })).data;
    const test = json(await create(ws.test, { url: 'https://hooks.public.test/t', events: ['*'] })).data;
    const liveList = json(await t.request({ method: 'GET', url: '/v1/webhooks', key: ws.live })).data;
    const testList = json(await t.request({ method: 'GET', url: '/v1/webhooks', key: ws.test })).data;
    expect(liveList.map((h: { id: string }) => h.id)).toEqual([live.id]);
    expect(testList.map((h: { id: string }) => h.id)).toEqual([test.id]);
    expectError(await t.request({ method: 'GET', url: `/v1/webhooks/${live.id}`, key: ws.test }), 404, 'not_found');
    expectError(await t.request({ method: 'DELETE', url: `/v1/webhooks/${test.id}`, key: ws.live }), 404, 'not_found');
  });
});

describe('webhook URL rules at creation (docs/api.md#webhook-urls): https only, public addresses only', () => {
  const refusedUrls: [string, string][] = [
    ['http://hooks.public.test/x', 'insecure_scheme'],
    ['https://127.0.0.1/x', 'forbidden_address'],
    ['https://2130706433/x', 'forbidden_address'],
    ['https://0x7f000001/x', 'forbidden_address'],
    ['https://0177.0.0.1/x', 'forbidden_address'],
    ['https://127.1/x', 'forbidden_address'],
    ['https://[::1]/x', 'forbidden_address'],
    ['https://[::ffff:127.0.0.1]/x', 'forbidden_address'],
    ['https://[::ffff:a9fe:a9fe]/x', 'forbidden_address'],
    ['https://169.254.169.254/latest/meta-data', 'forbidden_address'],
    ['https://10.1.2.3/x', 'forbidden_address'],
    ['https://172.16.0.1/x', 'forbidden_address'],
    ['https://192.168.1.1/x', 'forbidden_address'],
    ['https://100.64.0.1/x', 'forbidden_address'],
    ['https://224.0.0.1/x', 'forbidden_address'],
    ['https://0.0.0.0/x', 'forbidden_address'],
    ['https://[fe80::1]/x', 'forbidden_address'],
    ['https://[fc00::1]/x', 'forbidden_address'],
    ['https://mixed.test/x', 'forbidden_address'],
    ['https://nowhere.invalid/x', 'unresolvable_host'],
    ['https://user:pass@hooks.public.test/x', 'credentials_not_allowed'],
    ['ftp://hooks.public.test/x', 'invalid_url'],
    ['not a url', 'invalid_url'],
  ];
  for (const [url, issue] of refusedUrls) {
    it(`${url}: 400 ${issue}`, async () => {
      const ws = await newWorkspace(t);
      const res = await expectNoChange(t, () => create(ws.live, { url, events: ['*'] }));
      const err = expectValidation(res, { field: 'url', issue });
      expect(err.message).toMatch(/url/);
    });
  }

  it('a public address literal and a name resolving to public addresses are accepted', async () => {
    const ws = await newWorkspace(t);
    for (const url of ['https://93.184.216.34/x', 'https://[2606:4700:4700::1111]/x', 'https://a.public.test:8443/x']) {
      const res = await create(ws.live, { url, events: ['*'] });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
    }
  });

  it('WEBHOOK_ALLOW_INSECURE_URLS=true allows http:// and loopback and private addresses, never link-local or metadata ones', async () => {
    const dev = await startTestApp({
      config: { WEBHOOK_ALLOW_INSECURE_URLS: true },
      resolveHost: async (host) => (host === 'metadata.google.internal' ? ['169.254.169.254'] : ['10.0.0.7']),
    });
    try {
      const ws = await newWorkspace(dev);
      const post = (url: string) =>
        dev.request({ method: 'POST', url: '/v1/webhooks', key: ws.live, body: { url, events: ['*'] } });
      for (const url of ['http://127.0.0.1:9/x', 'http://10.1.2.3/x', 'http://[fc00::1]/x', 'http://receiver.lan/x']) {
        const res = await post(url);
        expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
      }
      for (const url of [
        'http://169.254.169.254/latest',
        'https://169.254.169.254/latest',
        'http://2852039166/latest',
        'http://[::ffff:169.254.169.254]/latest',
        'http://[fd00:ec2::254]/latest',
        'http://[fe80::1]/x',
        'http://metadata.google.internal/computeMetadata/v1/',
      ]) {
        const res = await expectNoChange(dev, () => post(url));
        const err = expectValidation(res, { field: 'url', issue: 'forbidden_address' });
        expect(err.message, url).toMatch(/link-local or cloud metadata address, refused whatever the settings/);
      }
      const hook = json(await post('http://127.0.0.1:9/y')).data;
      const moved = await expectNoChange(dev, () =>
        dev.request({
          method: 'PATCH',
          url: `/v1/webhooks/${hook.id}`,
          key: ws.live,
          body: { url: 'http://169.254.169.254/latest' },
        }),
      );
      expectValidation(moved, { field: 'url', issue: 'forbidden_address' });
    } finally {
      await dev.close();
    }
  });
});

describe('DELETE /v1/webhooks/{id}', () => {
  it('answers 204 with an empty body; then the webhook is gone (404)', async () => {
    const ws = await newWorkspace(t);
    const hook = json(await create(ws.live, { url: 'https://hooks.public.test/d', events: ['*'] })).data;
    const res = await t.request({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, key: ws.live });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expectError(await t.request({ method: 'GET', url: `/v1/webhooks/${hook.id}`, key: ws.live }), 404, 'not_found');
    expectError(await t.request({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, key: ws.live }), 404, 'not_found');
  });

  it('malformed and unknown ids are 404', async () => {
    const ws = await newWorkspace(t);
    for (const id of ['nope', 'wh_', 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R', 'wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R']) {
      expectError(await t.request({ method: 'GET', url: `/v1/webhooks/${id}`, key: ws.live }), 404, 'not_found');
    }
  });
});

describe('OpenAPI (docs/api.md#versioning)', () => {
  it('documents the webhook and event routes, the event catalogue and the delivery request', async () => {
    const doc = json(await t.request({ method: 'GET', url: '/v1/openapi.json' }));
    for (const path of [
      '/v1/webhooks',
      '/v1/webhooks/{id}',
      '/v1/webhooks/{id}/deliveries/{delivery_id}/retry',
      '/v1/events/{id}',
    ]) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    expect(doc.paths['/v1/webhooks'].post.responses['201']).toBeDefined();
    const event = doc.components.schemas.Event;
    // A union discriminated by `event`: one member per type of the catalogue and the test event, each its own data.
    const members = event.anyOf as { properties: { event: { enum?: string[]; const?: string }; data: unknown } }[];
    expect(members.map((m) => m.properties.event.enum?.[0] ?? m.properties.event.const)).toEqual([
      ...EVENT_TYPES,
      'webhook.test',
    ]);
    expect(members.map((m) => m.properties.data)).toEqual(
      members.map(() => expect.objectContaining({ type: 'object' })),
    );
    expect(EVENT_TYPES).toEqual(expect.arrayContaining(['key.revoked', 'member.joined', 'delivery.exhausted']));
    expect(event.examples.map((e: { event: string }) => e.event)).toContain('resource.status_changed');
    const delivery = doc.webhooks.event.post;
    expect(delivery.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Event' });
    expect(delivery.parameters.map((p: { name: string }) => p.name)).toEqual([
      'X-Service-Signature',
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
    ]);
  });
});
