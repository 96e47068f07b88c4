import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogArgs = Parameters<FastifyBaseLogger['info']>;
type LevelAware = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };

/**
 * Performance (docs/performance.md): Fastify gives every request a child logger bound to its request id (`reqId`). Building a
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
