import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type Config, publicUrl } from '../config.js';

// `wsvc serve` records the URL it answers on beside its SQLite database, and the other `wsvc`
// commands (run from another shell, often without the server's PORT or PUBLIC_URL) build their
// links from it: `PORT=18080 npm start`, then `npx wsvc workspaces create` prints a link on 18080.
// PostgreSQL deployments set PUBLIC_URL for every process instead (README "The console").

/** The record's path: `<database file>.server-url`; none for PostgreSQL or an in-memory database. */
export function serverUrlFile(config: Config): string | null {
  const url = config.DATABASE_URL;
  if (!url.startsWith('sqlite:')) return null;
  const path = url.slice('sqlite:'.length);
  return path === '' || path === ':memory:' ? null : `${path}.server-url`;
}

/** Records the running server's public URL (PUBLIC_URL, or 127.0.0.1 and the port it listens on). */
export function recordServerUrl(config: Config, port: number): void {
  const file = serverUrlFile(config);
  if (!file) return;
  try {
    writeFileSync(file, `${publicUrl({ ...config, PORT: port })}\n`);
  } catch {
    // A read-only directory: links fall back to the CLI's own settings.
  }
}

/** Removes the record when the server stops. */
export function forgetServerUrl(config: Config): void {
  const file = serverUrlFile(config);
  if (file) rmSync(file, { force: true });
}

/**
 * The CLI's settings with the running server's URL as PUBLIC_URL, unless PUBLIC_URL or PORT is
 * set for the command itself (those always win).
 */
export function withServerUrl(config: Config, env: NodeJS.ProcessEnv = process.env): Config {
  if (env.PUBLIC_URL || env.PORT) return config;
  const file = serverUrlFile(config);
  if (!file) return config;
  let recorded: string;
  try {
    recorded = readFileSync(file, 'utf8').trim();
  } catch {
    return config;
  }
  return /^https?:\/\/\S+$/.test(recorded) ? Object.freeze({ ...config, PUBLIC_URL: recorded }) : config;
}
