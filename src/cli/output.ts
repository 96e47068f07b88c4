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
