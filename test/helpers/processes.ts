import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';

/** A `wsvc` child process, with everything it printed so far. */
export interface WsvcProcess {
  child: ChildProcess;
  /** The URL it listens on (`serve` only). */
  url: string;
  output(): string;
}

/**
 * Starts a real `wsvc <args>` child process (LOG_LEVEL=info) and resolves once it logged that it
 * is ready: `listening` for `serve` (with the URL), `delivery worker started` for `worker`.
 */
export function startWsvc(args: string[], env: NodeJS.ProcessEnv): Promise<WsvcProcess> {
  const child = spawn(process.execPath, ['bin/wsvc.js', ...args], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const serving = args[0] === 'serve';
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    // Starting costs over a second of CPU (loading the app, migrating a fresh database): on a
    // loaded 2-core machine it took more than 20 s (test/api/messages.test.ts, three workers at load
    // average 12). A server that never gets ready still fails here, with everything it printed.
    // A child that never got ready is killed: left running, it would hold its port and database past the test.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`wsvc ${args.join(' ')} not ready: ${out}${err}`));
    }, 60_000);
    child.stderr?.on('data', (d) => {
      err += d;
    });
    const ready = () => {
      const listening = /"url":"(http:\/\/[^"]+)".*"msg":"listening"/.exec(out);
      const working = /"msg":"delivery worker started"/.test(out);
      if (serving && listening?.[1] && (args.includes('--api-only') || working)) return listening[1];
      if (!serving && working) return '';
      return null;
    };
    child.stdout?.on('data', (d) => {
      out += d;
      const url = ready();
      if (url !== null) {
        clearTimeout(timer);
        resolve({ child, url, output: () => out + err });
      }
    });
    child.on('exit', (code) => reject(new Error(`wsvc exited ${code}: ${err}`)));
  });
}

/** Starts a real `wsvc serve --api-only` child process and resolves with the URL it logs once listening. */
export function startApi(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> {
  return startWsvc(['serve', '--api-only'], env);
}

/** The DATABASE_URL that points a child process at a test storage (its own PostgreSQL schema, or SQLite file). */
export function databaseUrlOf(storage: { url: string; schema?: string }): string {
  return storage.schema
    ? `${storage.url}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`
    : storage.url;
}

/**
 * The environment that makes a `wsvc` child hold the write transaction creating the resource named `name` open at its
 * COMMIT, forever, after printing `{"msg":"paused before commit",…}` (test/helpers/pause-before-commit.mjs, a preload
 * that wraps the database drivers): a test kills it there.
 */
export function pauseBeforeCommitEnv(name: string): NodeJS.ProcessEnv {
  const preload = new URL('./pause-before-commit.mjs', import.meta.url).href;
  return {
    WSVC_TEST_PAUSE_BEFORE_COMMIT: name,
    NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${preload}`].filter(Boolean).join(' '),
  };
}

/** Runs one `wsvc <args>` command to its end against `databaseUrl` (LOG_LEVEL=silent): its exit code and output. */
export function runWsvc(
  databaseUrl: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, ['bin/wsvc.js', ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}

/** Sends `signal` to a child process and resolves once it has exited (at once if it already has). */
export function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}
