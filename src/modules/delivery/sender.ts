import http from 'node:http';
import https from 'node:https';
import { assertDialableHost, guardedLookup } from './url-guard.js';

/** What one attempt produced; `ok` is a 2xx within the timeout (docs/api.md#webhook-deliveries). */
export interface SendResult {
  ok: boolean;
  status: number | null;
  /** First 1 KiB of the response body. */
  body: string | null;
  error: string | null;
  durationMs: number;
}

export type Send = (url: string, headers: Record<string, string>, body: string) => Promise<SendResult>;

const BODY_KEPT = 1024;

/**
 * The HTTP client of the delivery worker: POST, no redirects followed, the whole exchange bounded
 * by `timeoutMs`, and unless `allowInsecure`, the webhook URL check on the address actually dialled (literal hosts
 * checked before, names through a guarded DNS lookup, so rebinding cannot reach private space).
 */
export function createSender(opts: { timeoutMs: number; allowInsecure: boolean; maxSockets?: number }): Send {
  const agentOpts = { keepAlive: true, maxSockets: opts.maxSockets ?? 64, scheduling: 'lifo' as const };
  const agents = { 'http:': new http.Agent(agentOpts), 'https:': new https.Agent(agentOpts) };
  const lookup = opts.allowInsecure ? undefined : guardedLookup();

  return (target, headers, body) => {
    const started = performance.now();
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({
      ...r,
      durationMs: Math.round(performance.now() - started),
    });
    let url: URL;
    try {
      url = new URL(target);
      if (!opts.allowInsecure) {
        if (url.protocol !== 'https:') throw Object.assign(new Error('url is not https://'), { code: 'EINSECURE' });
        assertDialableHost(url);
      }
    } catch (err) {
      return Promise.resolve(done({ ok: false, status: null, body: null, error: describe(err) }));
    }
    const client = url.protocol === 'https:' ? https : http;
    const payload = Buffer.from(body, 'utf8');
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const finish = (r: Omit<SendResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(done(r));
      };
      const req = client.request(url, {
        method: 'POST',
        agent: agents[url.protocol as 'http:' | 'https:'],
        headers: { ...headers, 'content-length': String(payload.length) },
        lookup,
      });
      const timer = setTimeout(() => {
        finish({
          ok: false,
          status: null,
          body: null,
          error: `timeout: no complete response within ${opts.timeoutMs} ms`,
        });
        req.destroy();
      }, opts.timeoutMs);
      req.on('error', (err) => finish({ ok: false, status: null, body: null, error: describe(err) }));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (c: Buffer) => {
          if (kept < BODY_KEPT) {
            chunks.push(c.subarray(0, BODY_KEPT - kept));
            kept += Math.min(c.length, BODY_KEPT - kept);
          }
        });
        res.on('error', (err) =>
          finish({ ok: false, status: res.statusCode ?? null, body: null, error: describe(err) }),
        );
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          const ok = status >= 200 && status < 300;
          finish({ ok, status, body: text, error: ok ? null : statusError(status) });
        });
      });
      req.end(payload);
    });
  };
}

function statusError(status: number): string {
  if (status >= 300 && status < 400) return `HTTP ${status}: redirects are not followed`;
  return `HTTP ${status}`;
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string; address?: string };
  if (e?.code === 'EBLOCKEDADDRESS') return `blocked: ${e.message ?? 'address is not public'}`;
  if (e?.code) return `connection error: ${e.code}${e.message ? ` (${e.message})` : ''}`;
  return `error: ${e?.message ?? String(err)}`;
}
