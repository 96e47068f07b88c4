import { type ChildProcess, spawn } from 'node:child_process';

/** Starts a real `wsvc serve --api-only` child process (LOG_LEVEL=info) and resolves with the URL it logs once listening. */
export function startApi(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['bin/wsvc.js', 'serve', '--api-only'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no 'listening' line: ${out}${err}`)), 20_000);
    child.stderr?.on('data', (d) => {
      err += d;
    });
    child.stdout?.on('data', (d) => {
      out += d;
      const m = /"url":"(http:\/\/[^"]+)".*"msg":"listening"/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: m[1] });
      }
    });
    child.on('exit', (code) => reject(new Error(`wsvc exited ${code}: ${err}`)));
  });
}

/** Sends `signal` to a child process and resolves once it has exited (at once if it already has). */
export function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}
