import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type Config, publicUrl } from '../config.js';

// `wsvc serve` records the URL it answers on beside its SQLite database, and the other `wsvc`
// commands (run from another shell, often without the server's PORT or PUBLIC_URL) build their
// links from it: `PORT=18080 npm start`, then `npx wsvc workspaces create` prints a link on 18080.
// Each server owns its own record, `<database file>.server-url.<pid>`, written when it listens and
// removed when it stops, so two servers on one database never overwrite or remove each other's
// (docs/operations.md#first-run-links). PostgreSQL deployments set PUBLIC_URL for every process
// instead (docs/console.md, the first sign-in).

/** The records' common prefix: `<database file>.server-url`; none for PostgreSQL or an in-memory database. */
export function serverUrlFile(config: Config): string | null {
  const url = config.DATABASE_URL;
  if (!url.startsWith('sqlite:')) return null;
  const path = url.slice('sqlite:'.length);
  return path === '' || path === ':memory:' ? null : `${path}.server-url`;
}

/** Records this server's public URL (PUBLIC_URL, or 127.0.0.1 and the port it listens on). */
export function recordServerUrl(config: Config, port: number, pid = process.pid): void {
  const file = serverUrlFile(config);
  if (!file) return;
  try {
    writeFileSync(`${file}.${pid}`, `${publicUrl({ ...config, PORT: port })}\n`);
  } catch {
    // A read-only directory: links fall back to the CLI's own settings.
  }
}

/** Removes this server's record when it stops (the other servers' stay). */
export function forgetServerUrl(config: Config, pid = process.pid): void {
  const file = serverUrlFile(config);
  if (file) rmSync(`${file}.${pid}`, { force: true });
}

/** Whether a process with this id runs (one of another user counts: signalling it is only refused). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The URL of the server started last among those still running on this database, or undefined.
 * A record whose process is gone (a server killed without its shutdown) is ignored and removed.
 */
export function runningServerUrl(config: Config): string | undefined {
  const file = serverUrlFile(config);
  if (!file) return undefined;
  const dir = dirname(file);
  const prefix = `${basename(file)}.`;
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.startsWith(prefix) && /^[0-9]+$/.test(n.slice(prefix.length)));
  } catch {
    return undefined;
  }
  let newest: { url: string; at: number } | undefined;
  for (const name of names) {
    const path = join(dir, name);
    try {
      if (!alive(Number(name.slice(prefix.length)))) {
        rmSync(path, { force: true });
        continue;
      }
      const url = readFileSync(path, 'utf8').trim();
      const at = statSync(path).mtimeMs;
      if (/^https?:\/\/\S+$/.test(url) && (!newest || at > newest.at)) newest = { url, at };
    } catch {
      // Removed meanwhile (its server stopped): skipped.
    }
  }
  return newest?.url;
}

/**
 * The CLI's settings with the running server's URL as PUBLIC_URL, unless PUBLIC_URL or PORT is
 * set for the command itself (those always win).
 */
export function withServerUrl(config: Config, env: NodeJS.ProcessEnv = process.env): Config {
  if (env.PUBLIC_URL || env.PORT) return config;
  const recorded = runningServerUrl(config);
  return recorded ? Object.freeze({ ...config, PUBLIC_URL: recorded }) : config;
}
