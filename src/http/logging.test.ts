import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { lazyChildLogger, loggerOptions, redactLine, requestSerializer } from './logging.js';

// Backends: sqlite — log redaction and the lazy child logger in a bare Fastify app
// Tier: quick

/** A Fastify app logging JSON lines into an array, with or without the lazy child logger. */
async function appLogging(level: string, lazy: boolean) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  let n = 0;
  const app = Fastify({
    logger: { level, stream },
    genReqId: () => `req_${++n}`,
    ...(lazy ? { childLoggerFactory: lazyChildLogger } : {}),
  });
  app.get('/quiet', async () => ({ ok: true }));
  app.get('/warns', async (req) => {
    req.log.warn({ detail: 1 }, 'something odd');
    return { ok: true };
  });
  app.get('/fails', async () => {
    throw new Error('boom');
  });
  app.get('/child', async (req) => {
    req.log.child({ part: 'x' }).error('from a grandchild');
    return { ok: true };
  });
  await app.ready();
  return { app, lines };
}

/** The log lines without their time and response times (which differ between runs). */
function comparable(lines: Record<string, unknown>[]) {
  return lines.map(({ time: _t, responseTime: _r, pid: _p, hostname: _h, ...rest }) => rest);
}

describe('lazyChildLogger', () => {
  for (const level of ['warn', 'info']) {
    it(`writes exactly the lines pino's own request child writes (level ${level})`, async () => {
      const out: ReturnType<typeof comparable>[] = [];
      for (const lazy of [false, true]) {
        const { app, lines } = await appLogging(level, lazy);
        for (const url of ['/quiet', '/warns', '/fails', '/child']) await app.inject({ method: 'GET', url });
        await app.close();
        out.push(comparable(lines));
      }
      expect(out[1]).toEqual(out[0]);
      const warned = out[1]?.find((l) => l.msg === 'something odd');
      expect(warned).toMatchObject({ reqId: 'req_2', detail: 1, level: 40 });
      expect(out[1]?.find((l) => l.msg === 'from a grandchild')).toMatchObject({ reqId: 'req_4', part: 'x' });
      expect(out[1]?.some((l) => l.msg === 'request completed')).toBe(level === 'info');
    });
  }

  it('a quiet request at warn builds no child logger', async () => {
    const parent = Fastify({ logger: { level: 'warn' } }).log;
    let children = 0;
    const counting = Object.assign(Object.create(parent), {
      child: (...a: Parameters<typeof parent.child>) => {
        children++;
        return parent.child(...a);
      },
    });
    const log = lazyChildLogger(counting, { reqId: 'req_1' }, {});
    log.info('not written at warn');
    log.debug('nor this');
    expect(children).toBe(0);
    log.warn('written');
    log.error('written too');
    expect(children).toBe(1);
  });
});

describe('log redaction', () => {
  const token = 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde';
  const key = 'svc_live_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefg';

  it('cuts the query string of link routes, keeps other URLs', () => {
    expect(requestSerializer({ method: 'GET', url: `/console/set-password?token=${token}` }).url).toBe(
      '/console/set-password?[redacted]',
    );
    expect(requestSerializer({ method: 'GET', url: `/console/set-password/?token=${token}` }).url).toBe(
      '/console/set-password/?[redacted]',
    );
    expect(requestSerializer({ method: 'GET', url: '/v1/resources?limit=5' }).url).toBe('/v1/resources?limit=5');
  });

  it('redacts every credential pattern, wherever it stands in a line', () => {
    const cases: [string, string][] = [
      [`{"reset_url":"https://x/console/set-password?token=${token}"}`, token],
      [`{"msg":"key ${key} used"}`, key],
      ['{"msg":"wsk_test_abcdefgh12345678"}', 'abcdefgh12345678'],
      ['{"secret":"whsec_dGhpcyBpcyBhIHNlY3JldA=="}', 'dGhpcyBpcyBhIHNlY3JldA'],
      ['{"url":"/v1/webhooks/whsec_dGhp%2BcyBp%2FcyBh"}', 'cyBh'],
      ['{"headers":{"authorization":"Bearer abc.def"}}', 'abc.def'],
      ['{"headers":{"cookie":"wsvc_session=hunter2"}}', 'hunter2'],
      ['{"x-csrf-token":"short-csrf"}', 'short-csrf'],
      ['{"password":"correct horse battery"}', 'correct horse'],
      [`{"msg":"opened ${token} today"}`, token],
      ['{"url":"/x?a=1&api_key=k3y&b=2"}', 'k3y'],
    ];
    for (const [line, secret] of cases) {
      const out = redactLine(line);
      expect(out, line).not.toContain(secret);
      expect(out).toContain('[redacted]');
      expect(() => JSON.parse(out)).not.toThrow();
    }
    const plain = '{"level":30,"reqId":"req_01JABCDEFGHJKMNPQRSTVWXYZ0","msg":"request completed","responseTime":1.2}';
    expect(redactLine(plain)).toBe(plain);
  });

  it('applies to a Fastify app at debug level, request lines and handler lines alike', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const app = Fastify({ logger: { ...loggerOptions('debug'), stream } });
    app.get('/console/set-password', async (req) => {
      req.log.debug({ cookie: req.headers.cookie, key }, 'debugging');
      return { ok: true };
    });
    await app.inject({ method: 'GET', url: `/console/set-password?token=${token}`, headers: { cookie: 'a=b' } });
    await app.close();
    const all = lines.join('');
    expect(all).toContain('/console/set-password?[redacted]');
    expect(all).toContain('debugging');
    expect(all).not.toContain(token);
    expect(all).not.toContain(key);
  });
});
