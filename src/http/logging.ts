import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogArgs = Parameters<FastifyBaseLogger['info']>;
type LevelAware = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };

/**
 * Performance (docs/performance.md#request-ids-and-loggers): Fastify gives every request a child logger bound to its request id (`reqId`). Building a
 * pino child costs about as much as the whole request-id and key-cache work together, and at the
 * levels a busy server runs (`warn`, `error`) almost no request ever logs. This child is created on
 * the first line a request actually logs, with the same bindings, so every line is what pino's own
 * child would have written.
 */
class LazyChild {
  readonly #parent: LevelAware;
  readonly #bindings: Bindings;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: LevelAware, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  get level(): string {
    return this.#child?.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#real().level = level;
  }

  #real(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings);
    return this.#child;
  }

  #log(level: Level, args: LogArgs): void {
    if (!this.#child && this.#parent.isLevelEnabled && !this.#parent.isLevelEnabled(level)) return;
    (this.#real()[level] as (...a: LogArgs) => void)(...args);
  }

  fatal(...args: LogArgs): void {
    this.#log('fatal', args);
  }
  error(...args: LogArgs): void {
    this.#log('error', args);
  }
  warn(...args: LogArgs): void {
    this.#log('warn', args);
  }
  info(...args: LogArgs): void {
    this.#log('info', args);
  }
  debug(...args: LogArgs): void {
    this.#log('debug', args);
  }
  trace(...args: LogArgs): void {
    this.#log('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: a request's logger, built only when the request logs (see LazyChild). */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  opts: ChildLoggerOptions,
): FastifyBaseLogger {
  // A route with its own log level needs a real child at once (its level differs from the parent's).
  if (opts.level !== undefined) return logger.child(bindings, opts);
  return new LazyChild(logger as LevelAware, bindings) as unknown as FastifyBaseLogger;
}

/** Paths whose query string is a credential (single-use links): logged as `path?[redacted]`. */
const LINK_ROUTES = new Set(['/console/set-password']);
const R = '[redacted]';

interface LoggedRequest {
  method: string;
  url: string;
  headers?: Record<string, string | string[] | undefined>;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** Fastify's request serializer with link routes' query strings cut (`/console/set-password?[redacted]`). */
export function requestSerializer(req: LoggedRequest) {
  const q = req.url.indexOf('?');
  const path = q === -1 ? req.url : req.url.slice(0, q);
  const url = q !== -1 && LINK_ROUTES.has(path.replace(/\/+$/, '')) ? `${path}?${R}` : req.url;
  return {
    method: req.method,
    url,
    version: [req.headers?.['accept-version']].flat()[0],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/** Credential patterns, each replaced wherever it appears in a line (values, messages, URLs, errors). */
const PATTERNS: [RegExp, string][] = [
  // API keys (svc_live_…, svc_test_…, and the older wsk_ form) and webhook signing secrets.
  [/\b(svc|wsk)_(live|test)_[0-9A-Za-z]{8,}/g, `$1_$2_${R}`],
  [/\bwhsec_(?:[A-Za-z0-9+/=]|%[0-9A-Fa-f]{2})+/g, `whsec_${R}`],
  // Query parameters that carry a credential, in any URL.
  [/([?&](?:token|key|api_key|secret|password|csrf|csrf_token|code|signature)=)[^&"\s\\#]*/gi, `$1${R}`],
  // Fields named like a credential: their whole string value.
  [
    /"([^"\\]*(?:token|secret|password|passwd|cookie|authorization|csrf|api[_-]?key)[^"\\]*)":"(?:[^"\\]|\\.)*"/gi,
    `"$1":"${R}"`,
  ],
  [/\b(Bearer|Basic)\s+[^"\s\\]+/gi, `$1 ${R}`],
  [/\b(wsvc_session=)[^;"\s\\]*/g, `$1${R}`],
];
/** A line none of PATTERNS can match fails this one test (performance: most lines skip the six replaces). */
const MAY_HOLD_CREDENTIAL =
  /token|secret|passw|cookie|authoriz|csrf|api[_-]?key|[?&](?:key|code|signature)=|bearer|basic|svc_|wsk_|whsec_|wsvc_session/i;

/** Session, CSRF and link tokens: 43 base64url characters (256 bits) standing alone. */
const TOKEN = /(^|[^A-Za-z0-9_-])[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g;
const BASE64URL = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-') BASE64URL[c.charCodeAt(0)] = 1;

/** Whether a run of exactly 43 base64url characters stands in `s` (a loop: half the cost of the regex). */
function holdsToken(s: string): boolean {
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 128 && BASE64URL[c] === 1) run++;
    else if (run === 43) return true;
    else run = 0;
  }
  return run === 43;
}

/** Redacts every credential pattern in one serialized log line (pino's `streamWrite` hook: every level, every field). */
export function redactLine(line: string): string {
  let out = line;
  if (MAY_HOLD_CREDENTIAL.test(out)) for (const [re, by] of PATTERNS) out = out.replace(re, by);
  if (holdsToken(out)) out = out.replace(TOKEN, `$1${R}`);
  return out;
}

/** The pino options of every process's logger: request serializer and line redaction (docs/operations.md#logs). */
export function loggerOptions(level: string) {
  return { level, serializers: { req: requestSerializer }, hooks: { streamWrite: redactLine } };
}
