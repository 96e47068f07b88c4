import type { LookupAddress, LookupOptions } from 'node:dns';
import http from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { assertDialableHost, checkWebhookUrl, guardedLookup, isPublicAddress } from './url-guard.js';

// Backends: sqlite — URL and address rules with an injected resolver, no storage
// Tier: quick
// A refused URL names the setting that allows it in local development (docs/api.md#webhook-urls).
const HINT =
  'For local development, the server setting WEBHOOK_ALLOW_INSECURE_URLS=true allows http:// and loopback or private addresses.';

// A resolver that fails the test if called: IP literals must be checked without DNS.
const noDns = (host: string): Promise<string[]> => Promise.reject(new Error(`unexpected DNS lookup of ${host}`));
const resolvesTo =
  (...addresses: string[]) =>
  async (_host: string) =>
    addresses;
const strict = { allowInsecure: false, resolve: noDns };

// Every spelling the WHATWG parser turns into a non-public literal, with the address it becomes.
const forbiddenLiterals: [string, string][] = [
  ['127.0.0.1', '127.0.0.1'],
  ['2130706433', '127.0.0.1'],
  ['0x7f000001', '127.0.0.1'],
  ['0177.0.0.1', '127.0.0.1'],
  ['127.1', '127.0.0.1'],
  ['0x7f.1', '127.0.0.1'],
  ['017700000001', '127.0.0.1'],
  ['127.0.0.1.', '127.0.0.1'],
  ['%31%32%37.0.0.1', '127.0.0.1'],
  ['１２７.０.０.１', '127.0.0.1'],
  ['[::1]', '::1'],
  ['[::ffff:127.0.0.1]', '::ffff:7f00:1'],
  ['[::ffff:7f00:1]', '::ffff:7f00:1'],
  ['[0:0:0:0:0:ffff:7f00:1]', '::ffff:7f00:1'],
  ['[::127.0.0.1]', '::7f00:1'],
  ['0.0.0.0', '0.0.0.0'],
  ['10.1.2.3', '10.1.2.3'],
  ['172.16.0.1', '172.16.0.1'],
  ['172.31.255.255', '172.31.255.255'],
  ['192.168.1.1', '192.168.1.1'],
  ['[fc00::1]', 'fc00::1'],
  ['[fd00::1]', 'fd00::1'],
  ['[fec0::1]', 'fec0::1'],
  ['100.64.0.1', '100.64.0.1'],
  ['224.0.0.1', '224.0.0.1'],
  ['[ff02::1]', 'ff02::1'],
  ['255.255.255.255', '255.255.255.255'],
  ['192.0.2.1', '192.0.2.1'],
  ['198.51.100.7', '198.51.100.7'],
  ['203.0.113.9', '203.0.113.9'],
  ['198.18.0.1', '198.18.0.1'],
  ['240.0.0.1', '240.0.0.1'],
  ['[::]', '::'],
  ['[64:ff9b::a00:1]', '64:ff9b::a00:1'],
  ['[2002:7f00:1::]', '2002:7f00:1::'],
  ['[2001:db8::1]', '2001:db8::1'],
  ['[100::1]', '100::1'],
];

// A link-local or cloud metadata address is refused whatever the setting, with a message that says so.
const LINK_LOCAL =
  'a link-local or cloud metadata address, refused whatever the settings (WEBHOOK_ALLOW_INSECURE_URLS=true does not allow it)';

// Link-local (169.254.0.0/16, where cloud metadata services answer, and fe80::/10) and the other metadata
// addresses, in every spelling the WHATWG parser accepts, with the address it becomes.
const linkLocalLiterals: [string, string][] = [
  ['169.254.169.254', '169.254.169.254'],
  ['2852039166', '169.254.169.254'],
  ['0xa9fea9fe', '169.254.169.254'],
  ['0xA9FEA9FE', '169.254.169.254'],
  ['025177524776', '169.254.169.254'],
  ['0251.0376.0251.0376', '169.254.169.254'],
  ['0xa9.0xfe.0xa9.0xfe', '169.254.169.254'],
  ['169.254.43518', '169.254.169.254'],
  ['169.16689662', '169.254.169.254'],
  ['169.254.169.254.', '169.254.169.254'],
  ['%31%36%39.254.169.254', '169.254.169.254'],
  ['１６９.２５４.１６９.２５４', '169.254.169.254'],
  ['169.254.0.1', '169.254.0.1'],
  ['169.254.255.255', '169.254.255.255'],
  ['100.100.100.200', '100.100.100.200'],
  ['[::ffff:169.254.169.254]', '::ffff:a9fe:a9fe'],
  ['[::ffff:a9fe:a9fe]', '::ffff:a9fe:a9fe'],
  ['[0:0:0:0:0:ffff:a9fe:a9fe]', '::ffff:a9fe:a9fe'],
  ['[::169.254.169.254]', '::a9fe:a9fe'],
  ['[::ffff:0:a9fe:a9fe]', '::ffff:0:a9fe:a9fe'],
  ['[64:ff9b::a9fe:a9fe]', '64:ff9b::a9fe:a9fe'],
  ['[64:ff9b:1::a9fe:a9fe]', '64:ff9b:1::a9fe:a9fe'],
  ['[2002:a9fe:a9fe::1]', '2002:a9fe:a9fe::1'],
  ['[2001:0:a9fe:a9fe::fefe:fefe]', '2001:0:a9fe:a9fe::fefe:fefe'], // Teredo, server 169.254.169.254
  ['[2001:0:808:808::5601:5601]', '2001:0:808:808::5601:5601'], // Teredo, client 169.254.169.254
  ['[::ffff:100.100.100.200]', '::ffff:6464:64c8'],
  ['[fd00:ec2::254]', 'fd00:ec2::254'],
  ['[FD00:EC2:0:0:0:0:0:254]', 'fd00:ec2::254'],
  ['[fe80::1]', 'fe80::1'],
  ['[fe80::a9fe:a9fe]', 'fe80::a9fe:a9fe'],
  ['[febf:ffff::1]', 'febf:ffff::1'],
];

describe('checkWebhookUrl: link-local and cloud metadata addresses, in every spelling, whatever the setting', () => {
  it.each(linkLocalLiterals)('refuses https:// and http://%s/ as %s without DNS', async (host, normalised) => {
    for (const [scheme, allowInsecure] of [
      ['https', false],
      ['https', true],
      ['http', true],
    ] as const) {
      expect(await checkWebhookUrl(`${scheme}://${host}/latest`, { allowInsecure, resolve: noDns })).toEqual({
        ok: false,
        issue: 'forbidden_address',
        message: `url points to ${normalised}, ${LINK_LOCAL}.`,
      });
    }
  });

  it.each([['169.254.169.254'], ['::ffff:169.254.169.254'], ['fe80::1'], ['fd00:ec2::254'], ['64:ff9b::a9fe:a9fe']])(
    'refuses a host name resolving to %s, with the setting on',
    async (address) => {
      for (const allowInsecure of [false, true]) {
        const resolve = resolvesTo('127.0.0.1', address);
        expect(await checkWebhookUrl('http://metadata.google.internal/x', { allowInsecure, resolve })).toEqual(
          allowInsecure
            ? { ok: false, issue: 'forbidden_address', message: `url resolves to ${address}, ${LINK_LOCAL}.` }
            : { ok: false, issue: 'insecure_scheme', message: `url must use https://. ${HINT}` },
        );
      }
      expect(
        await checkWebhookUrl('https://metadata.google.internal/x', {
          allowInsecure: false,
          resolve: resolvesTo(address),
        }),
      ).toEqual({ ok: false, issue: 'forbidden_address', message: `url resolves to ${address}, ${LINK_LOCAL}.` });
    },
  );
});

describe('checkWebhookUrl: non-public IP literals, in every spelling', () => {
  it.each(forbiddenLiterals)('refuses https://%s/ as %s without DNS', async (host, normalised) => {
    const result = await checkWebhookUrl(`https://${host}/hook`, strict);
    expect(result).toEqual({
      ok: false,
      issue: 'forbidden_address',
      message: `url points to ${normalised}, which is not a public address. ${HINT}`,
    });
  });
});

describe('checkWebhookUrl: resolved host names', () => {
  it('refuses localhost, resolved by the real DNS to loopback', async () => {
    const result = await checkWebhookUrl('https://localhost/hook', { allowInsecure: false });
    expect(result).toMatchObject({ ok: false, issue: 'forbidden_address' });
    expect(!result.ok && result.message).toMatch(/^url resolves to (127\.0\.0\.1|::1), which is not a public/);
  });

  it.each([
    [['93.184.216.34', '10.0.0.5'], '10.0.0.5'],
    [['fd12::1', '2606:2800:220:1:248:1893:25c8:1946'], 'fd12::1'],
    [['::ffff:10.0.0.1'], '::ffff:10.0.0.1'],
  ])('refuses a host when any resolved address is not public (%j)', async (addresses, bad) => {
    const result = await checkWebhookUrl('https://hooks.example.com/x', {
      allowInsecure: false,
      resolve: resolvesTo(...addresses),
    });
    expect(result).toEqual({
      ok: false,
      issue: 'forbidden_address',
      message: `url resolves to ${bad}, which is not a public address. ${HINT}`,
    });
  });

  it.each([['93.184.216.34'], ['2606:2800:220:1:248:1893:25c8:1946']])(
    'accepts a host resolving to public %s, asking DNS for the bare host name',
    async (address) => {
      const resolve = vi.fn(resolvesTo(address));
      const result = await checkWebhookUrl('https://Hooks.Example.com:8443/in?x=1', { allowInsecure: false, resolve });
      expect(resolve).toHaveBeenCalledWith('hooks.example.com');
      expect(result.ok && result.url.href).toBe('https://hooks.example.com:8443/in?x=1');
    },
  );

  it.each([
    ['throws', () => Promise.reject(Object.assign(new Error('nope'), { code: 'ENOTFOUND' }))],
    ['finds nothing', resolvesTo()],
  ])('reports unresolvable_host when the resolver %s', async (_what, resolve) => {
    const result = await checkWebhookUrl('https://nowhere.example/x', { allowInsecure: false, resolve });
    expect(result).toEqual({
      ok: false,
      issue: 'unresolvable_host',
      message: 'url host nowhere.example could not be resolved',
    });
  });
});

describe('checkWebhookUrl: public literals', () => {
  it.each([
    ['https://8.8.8.8/hook', 'https://8.8.8.8/hook'],
    ['https://134744072/hook', 'https://8.8.8.8/hook'],
    ['https://[2606:4700:4700::1111]/hook', 'https://[2606:4700:4700::1111]/hook'],
    ['https://[::ffff:8.8.8.8]/hook', 'https://[::ffff:808:808]/hook'],
  ])('accepts %s without DNS', async (input, href) => {
    const result = await checkWebhookUrl(input, strict);
    expect(result.ok && result.url.href).toBe(href);
  });
});

describe('checkWebhookUrl: scheme, length, credentials, shape', () => {
  it('refuses http:// unless insecure URLs are allowed', async () => {
    for (const url of ['http://8.8.8.8/hook', 'http://hooks.example.com/hook']) {
      expect(await checkWebhookUrl(url, strict)).toEqual({
        ok: false,
        issue: 'insecure_scheme',
        message: `url must use https://. ${HINT}`,
      });
    }
  });

  it('with allowInsecure accepts http:// and loopback and private addresses, in any spelling', async () => {
    for (const [host] of forbiddenLiterals) {
      for (const scheme of ['http', 'https']) {
        const result = await checkWebhookUrl(`${scheme}://${host}:1234/x`, { allowInsecure: true, resolve: noDns });
        expect(result.ok, `${scheme}://${host}`).toBe(true);
      }
    }
  });

  it('with allowInsecure accepts names resolving to loopback or private addresses, and names not resolved yet', async () => {
    const cases: [string, (host: string) => Promise<string[]>][] = [
      ['http://localhost:1234/x', resolvesTo('127.0.0.1', '::1')],
      ['http://receiver.internal:3000/x', resolvesTo('10.0.0.7', 'fd12::7')],
      ['http://not-up-yet.internal/x', noDns], // dialled through the guarded lookup at each attempt
    ];
    for (const [url, resolve] of cases) {
      const result = await checkWebhookUrl(url, { allowInsecure: true, resolve });
      expect(result.ok && result.url.href).toBe(url);
    }
  });

  it('refuses a URL longer than 2048 characters, even with allowInsecure', async () => {
    const base = 'https://hooks.example.com/';
    const atLimit = base + 'a'.repeat(2048 - base.length);
    const public1 = { allowInsecure: false, resolve: resolvesTo('93.184.216.34') };
    expect((await checkWebhookUrl(atLimit, public1)).ok).toBe(true);
    for (const allowInsecure of [false, true]) {
      expect(await checkWebhookUrl(`${atLimit}a`, { allowInsecure, resolve: noDns })).toEqual({
        ok: false,
        issue: 'too_long',
        message: 'url must be at most 2048 characters',
      });
    }
  });

  it.each([
    'https://user:pass@hooks.example.com/x',
    'https://user@hooks.example.com/x',
    'https://:pass@hooks.example.com/x',
    'http://user:pass@127.0.0.1/x',
  ])('refuses credentials in %s, even with allowInsecure', async (url) => {
    for (const allowInsecure of [false, true]) {
      expect(await checkWebhookUrl(url, { allowInsecure, resolve: noDns })).toEqual({
        ok: false,
        issue: 'credentials_not_allowed',
        message: 'url must not contain a user name or password',
      });
    }
  });

  it.each([
    'not a url',
    '/relative/hook',
    'hooks.example.com/x',
    'https://',
    'https://1.2.3.4.5/',
    'https://[::1/',
    'ftp://hooks.example.com/x',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'gopher://127.0.0.1:6379/_',
  ])('refuses %j as invalid_url', async (url) => {
    for (const allowInsecure of [false, true]) {
      expect(await checkWebhookUrl(url, { allowInsecure, resolve: noDns })).toEqual({
        ok: false,
        issue: 'invalid_url',
        message: 'url must be an absolute http:// or https:// URL',
      });
    }
  });
});

describe('isPublicAddress', () => {
  it.each([
    '8.8.8.8',
    '93.184.216.34',
    '11.0.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '223.255.255.255',
    '2606:2800:220:1:248:1893:25c8:1946',
    '2a00:1450:4001:82a::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '2001:0:808:808::fefe:fefe', // Teredo: server 8.8.8.8, client 1.1.1.1
  ])('%s is public', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
  });

  it.each([
    ['::7f00:1', 'IPv4-compatible (deprecated)'],
    ['::808:808', 'IPv4-compatible, even with a public IPv4'],
    ['::ffff:0:7f00:1', 'IPv4-translated loopback'],
    ['64:ff9b:1::808:808', 'local-use NAT64'],
    ['2002:a00:1::1', '6to4 of 10.0.0.1'],
    ['2001:0:808:808::f5ff:fffe', 'Teredo whose client is 10.0.0.1'],
    ['2001:0:a00:1::fefe:fefe', 'Teredo whose server is 10.0.0.1'],
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'ORCHID'],
    ['3fff::1', 'documentation'],
    ['5f00::1', 'segment routing'],
    ['4000::1', 'unallocated'],
    ['fe80::1%eth0', 'link-local with zone'],
    ['192.0.0.9', 'IETF protocol assignments'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['0x7f000001', 'a non-canonical spelling'],
    ['0x08080808', 'a non-canonical spelling of a public address'],
    ['8.8.2056', 'a short spelling of a public address'],
    ['08.8.8.8', 'a leading zero'],
    ['hooks.example.com', 'a host name'],
    ['', 'empty'],
  ])('%s is not public (%s)', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });
});

type LookupOutcome = { err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };

function runLookup(lookup: LookupFunction, host: string, options: LookupOptions): Promise<LookupOutcome> {
  return new Promise((resolve) => lookup(host, options, (err, address, family) => resolve({ err, address, family })));
}

describe('guardedLookup', () => {
  it.each([{ all: false }, { all: true }, {}])('blocks localhost with EBLOCKEDADDRESS (%j)', async (options) => {
    const { err } = await runLookup(guardedLookup(), 'localhost', options);
    expect(err?.code).toBe('EBLOCKEDADDRESS');
    expect(err?.message).toMatch(/^refusing to connect to (127\.0\.0\.1|::1) \(localhost\): not a public address/);
  });

  it('passes a public address through in the single-address shape', async () => {
    expect(await runLookup(guardedLookup(), '8.8.8.8', { all: false })).toEqual({
      err: null,
      address: '8.8.8.8',
      family: 4,
    });
  });

  it.each(['169.254.169.254', '::ffff:169.254.169.254', 'fe80::1', 'fd00:ec2::254'])(
    'with allowInsecure blocks %s, and passes loopback through',
    async (address) => {
      for (const options of [{ all: false }, { all: true }]) {
        const { err } = await runLookup(guardedLookup(true), address, options);
        expect(err?.code).toBe('EBLOCKEDADDRESS');
        expect(err?.message).toMatch(/link-local or cloud metadata address/);
      }
      expect(await runLookup(guardedLookup(true), '127.0.0.1', { all: false })).toEqual({
        err: null,
        address: '127.0.0.1',
        family: 4,
      });
    },
  );

  it('passes public addresses through in the all: true shape', async () => {
    const { err, address } = await runLookup(guardedLookup(), '2606:4700:4700::1111', { all: true });
    expect(err).toBeNull();
    expect(address).toEqual([{ address: '2606:4700:4700::1111', family: 6 }]);
  });
});

describe('guardedLookup on a real http.get', () => {
  let server: http.Server;
  let port: number;
  let connections = 0;

  beforeAll(async () => {
    server = http.createServer((_req, res) => res.end('reached'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  // agent: false so no pooled socket from another request can bypass the lookup.
  function get(extra: http.RequestOptions): Promise<{ status?: number; err?: NodeJS.ErrnoException }> {
    return new Promise((resolve) => {
      const req = http.get({ host: 'localhost', port, path: '/', agent: false, family: 4, ...extra }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode }));
      });
      req.on('error', (err) => resolve({ err }));
    });
  }

  it('control: without the guard the same request reaches the server', async () => {
    const before = connections;
    expect(await get({})).toEqual({ status: 200 });
    expect(connections).toBe(before + 1);
  });

  it.each([
    ['single-address lookup (family: 4)', { family: 4 }, false],
    ['autoSelectFamily lookup (all: true)', { family: undefined, autoSelectFamily: true }, true],
  ])('blocks the connection before dialling: %s', async (_name, extra, expectAll) => {
    const before = connections;
    const seen: (boolean | undefined)[] = [];
    const guarded = guardedLookup();
    const lookup: LookupFunction = (host, options, cb) => {
      seen.push(options.all);
      guarded(host, options, cb);
    };
    const { err, status } = await get({ ...extra, lookup });
    expect(status).toBeUndefined();
    expect(err?.code).toBe('EBLOCKEDADDRESS');
    expect(seen.map(Boolean)).toEqual([expectAll]);
    expect(connections).toBe(before);
  });
});

describe('assertDialableHost', () => {
  it.each(forbiddenLiterals)(
    'throws EBLOCKEDADDRESS for https://%s/, and lets it through with allowInsecure',
    (host) => {
      expect(() => assertDialableHost(new URL(`https://${host}/`))).toThrow(
        expect.objectContaining({
          code: 'EBLOCKEDADDRESS',
          message: expect.stringMatching(/WEBHOOK_ALLOW_INSECURE_URLS=true on the process that delivers/),
        }),
      );
      expect(() => assertDialableHost(new URL(`http://${host}/`), true)).not.toThrow();
    },
  );

  it.each(linkLocalLiterals)('throws EBLOCKEDADDRESS for http://%s/, even with allowInsecure', (host, normalised) => {
    for (const allowInsecure of [false, true]) {
      expect(() => assertDialableHost(new URL(`http://${host}/latest`), allowInsecure)).toThrow(
        expect.objectContaining({
          code: 'EBLOCKEDADDRESS',
          message: `refusing to connect to ${normalised}: ${LINK_LOCAL}`,
        }),
      );
    }
  });

  it.each([
    'https://8.8.8.8/',
    'https://[2606:4700:4700::1111]/',
    'https://hooks.example.com/',
    'https://localhost/', // a name: guardedLookup checks it when dialling
  ])('lets %s through', (url) => {
    expect(() => assertDialableHost(new URL(url))).not.toThrow();
  });
});
