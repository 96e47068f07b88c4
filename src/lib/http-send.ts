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
  /** The response's Retry-After header, when it had one (integrations honour it on a 429). */
  retryAfter?: string | null;
}

export type Send = (url: string, headers: Record<string, string>, body: string) => Promise<SendResult>;

const BODY_KEPT = 1024;

// The API process may have accepted an http:// URL under WEBHOOK_ALLOW_INSECURE_URLS while the process that
// delivers runs without it: the attempt's error says which setting, on which process.
const NOT_HTTPS =
  'url is not https://: http:// is delivered only when the process that delivers (`wsvc worker`, or `wsvc serve` ' +
  'without --api-only) has WEBHOOK_ALLOW_INSECURE_URLS=true, for local development only';

/**
 * How long a kept-alive socket may sit idle in the pool before the sender closes it: below the 5 s
 * keep-alive of Node's HTTP server (and the longer ones of most others), so the sender seldom
 * writes to a socket the receiver is closing at that moment.
 */
export const IDLE_SOCKET_MS = 4000;

/**
 * The HTTP client of the delivery worker: POST, no redirects followed, the whole exchange bounded
 * by `timeoutMs`, and the webhook URL check on the address actually dialled (literal hosts checked before, names
 * through a guarded DNS lookup, so rebinding cannot reach private space): https:// and public addresses only, or with
 * `allowInsecure` (WEBHOOK_ALLOW_INSECURE_URLS) http:// and any address but link-local and cloud metadata ones.
 *
 * Sockets are kept alive between attempts and closed after `idleSocketMs` idle (IDLE_SOCKET_MS). A
 * receiver may still close an idle socket just as a request is written to it; that request fails
 * with ECONNRESET or EPIPE before any response, without the receiver having handled it. Such a
 * failure on a reused socket is retried once, at once, on a fresh connection, within the same
 * attempt and time bound (the race described for `request.reusedSocket` in Node's documentation).
 * On a fresh socket the same error is the receiver's doing and fails the attempt.
 */
export function createSender(opts: {
  timeoutMs: number;
  allowInsecure: boolean;
  maxSockets?: number;
  idleSocketMs?: number;
}): Send {
  const agentOpts = {
    keepAlive: true,
    maxSockets: opts.maxSockets ?? 64,
    scheduling: 'lifo' as const,
    // Set on each socket when it is created and again whenever it returns to the pool; the agent destroys an idle
    // (free) socket when it fires. On a socket in use it only emits 'timeout', which the attempt's own timer ignores.
    timeout: opts.idleSocketMs ?? IDLE_SOCKET_MS,
  };
  const agents = { 'http:': new http.Agent(agentOpts), 'https:': new https.Agent(agentOpts) };
  const lookup = guardedLookup(opts.allowInsecure);

  return (target, headers, body) => {
    const started = performance.now();
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({
      ...r,
      durationMs: Math.round(performance.now() - started),
    });
    let url: URL;
    try {
      url = new URL(target);
      if (!opts.allowInsecure && url.protocol !== 'https:') {
        throw Object.assign(new Error(NOT_HTTPS), { code: 'EINSECURE' });
      }
      assertDialableHost(url, opts.allowInsecure);
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
      let current: http.ClientRequest | undefined;
      const timer = setTimeout(() => {
        finish({
          ok: false,
          status: null,
          body: null,
          error: `timeout: no complete response within ${opts.timeoutMs} ms`,
        });
        current?.destroy();
      }, opts.timeoutMs);
      /** One request; `retry`: the second try after a reset on a reused socket, on a connection of its own. */
      const exchange = (retry: boolean) => {
        const req = client.request(url, {
          method: 'POST',
          // No agent: a new connection, never another pooled socket that may be just as stale.
          agent: retry ? false : agents[url.protocol as 'http:' | 'https:'],
          headers: { ...headers, 'content-length': String(payload.length) },
          lookup,
        });
        current = req;
        let responded = false;
        req.on('error', (err) => {
          const code = (err as { code?: string }).code;
          if (!retry && !settled && !responded && req.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE')) {
            exchange(true);
            return;
          }
          finish({ ok: false, status: null, body: null, error: describe(err) });
        });
        req.on('response', (res) => {
          responded = true;
          respond(res);
        });
        req.end(payload);
      };
      const respond = (res: http.IncomingMessage) => {
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
          const retryAfter = res.headers['retry-after'] ?? null;
          finish({ ok, status, body: text, error: ok ? null : statusError(status), retryAfter });
        });
      };
      exchange(false);
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
  if (e?.code === 'EINSECURE') return `refused: ${e.message}`;
  if (e?.code) return `connection error: ${e.code}${e.message ? ` (${e.message})` : ''}`;
  return `error: ${e?.message ?? String(err)}`;
}
