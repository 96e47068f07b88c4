import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { lazyChildLogger } from './logging.js';

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
