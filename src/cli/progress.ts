/** Where progress goes: a terminal stream (process.stderr) or a stand-in in tests. */
export interface ProgressStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

const fmt = new Intl.NumberFormat('en-US');

/** `1m 05s`, `12s`, `1h 02m`: a short duration for "time left". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** One progress line: rows done of total, percentage, rate, and time left at that rate. */
export function progressLine(copied: number, total: number, elapsedMs: number): string {
  const pct = total === 0 ? 100 : Math.floor((copied / total) * 100);
  const rate = elapsedMs > 0 ? (copied / elapsedMs) * 1000 : 0;
  const left = rate > 0 ? formatDuration(((total - copied) / rate) * 1000) : '?';
  return `${fmt.format(copied)} / ${fmt.format(total)} rows (${pct}%), ${fmt.format(Math.round(rate))} rows/s, ${left} left`;
}

/**
 * A progress line redrawn in place on a terminal (at most every `intervalMs`), and nothing at all
 * when the stream is not a terminal (a pipe, a log file, --json): scripts see only the summary.
 */
export function createProgress(stream: ProgressStream, now: () => number = Date.now, intervalMs = 200) {
  const startedAt = now();
  let lastDraw = Number.NEGATIVE_INFINITY;
  let drawn = false;
  const active = stream.isTTY === true;
  return {
    update(copied: number, total: number): void {
      if (!active) return;
      const t = now();
      if (t - lastDraw < intervalMs && copied < total) return;
      lastDraw = t;
      drawn = true;
      stream.write(`\r\x1b[2K${progressLine(copied, total, t - startedAt)}`);
    },
    /** Clears the line, so the summary starts on a clean one. */
    finish(): void {
      if (active && drawn) stream.write('\r\x1b[2K');
      drawn = false;
    },
    elapsedMs: () => now() - startedAt,
  };
}
