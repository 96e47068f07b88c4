/** Prints the result of a command: exactly one JSON object with --json, else readable text. */
export function print(json: boolean, value: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}
