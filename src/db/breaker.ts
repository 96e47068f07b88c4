/** Where the database breaker reports outages (the app's logger). */
export interface BreakerLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface DatabaseBreaker {
  /** Whether requests should be answered 503 at once (the database stopped answering and no probe has since). */
  isOpen(): boolean;
  /** Reports an error of a request: one that means the database is unreachable (`Dialect.isUnreachable`) opens it. */
  failed(err: unknown): void;
  close(): void;
}

/**
 * A circuit breaker in front of the database (docs/operations.md#metrics), like the Redis
 * one (src/db/redis.ts): the first request that finds the database unreachable (refused, or no answer
 * within the query or connect timeout) opens it; from then on requests are answered 503 at once
 * instead of each waiting out the timeout, while a probe on a fresh connection every `probeMs`
 * checks whether the database answers again. A probe that hangs is abandoned after `probeMs`, so
 * the breaker closes within about `probeMs` of the database answering.
 */
export function createDatabaseBreaker(deps: {
  /** A round trip on a fresh connection (not the pool's, which may hold dead ones); rejects on no answer. */
  probe: (timeoutMs: number) => Promise<void>;
  isUnreachable: (err: unknown) => boolean;
  log: BreakerLog;
  probeMs?: number;
}): DatabaseBreaker {
  const probeMs = deps.probeMs ?? 250;
  let openSince: number | null = null;
  let timer: NodeJS.Timeout | undefined;

  // Not one at a time: a probe stuck on a partition must not hold back the next one.
  function probe(): void {
    deps.probe(probeMs * 4).then(
      () => {
        if (openSince === null) return;
        const downMs = Date.now() - openSince;
        openSince = null;
        clearInterval(timer);
        deps.log.info({ downMs }, 'database reachable again: requests served again');
      },
      () => {},
    );
  }

  return {
    isOpen: () => openSince !== null,
    failed(err) {
      if (openSince !== null || !deps.isUnreachable(err)) return;
      openSince = Date.now();
      const reason = err instanceof Error ? err.message : String(err);
      deps.log.warn({ err: reason }, 'database unreachable: answering 503 at once until a probe succeeds');
      timer = setInterval(probe, probeMs);
      timer.unref();
    },
    close() {
      clearInterval(timer);
    },
  };
}
