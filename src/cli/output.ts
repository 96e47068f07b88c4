import { escapeControl } from '../kernel/text.js';

/** Prints the result of a command: exactly one JSON object with --json, else readable text. */
export function print(json: boolean, value: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

/** A usage error found while running (exit code 2, like a missing required option): `main` prints `error: <message>`. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Rows as aligned text columns under a header, control characters escaped; '' when there are no rows. */
export function table(header: string[], cells: string[][]): string {
  if (cells.length === 0) return '';
  // A name stored before names refused control characters stays on its line (docs/api.md#names).
  const rows = cells.map((r) => r.map(escapeControl));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => [...(r[i] ?? '')].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat((widths[i] ?? 0) - [...c].length))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}
