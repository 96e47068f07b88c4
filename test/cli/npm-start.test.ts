import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/receiver.js';

// Backends: sqlite — the process tree of `npm start` and its signals, not storage
// Tier: full — npm, a server process and a kill -TERM
// A process supervisor (systemd, a container runtime, `kill -TERM`) signals the process it
// started. When that is `npm start`, the signal must reach the node server: npm forwards it to
// its script's shell, and only because the script `exec`s node is that shell the server itself
// (a plain `sh -c "node …"` dies alone and leaves the server orphaned and still answering).
// SQLite only: what is tested is the process tree, not the storage.

const dir = mkdtempSync(join(tmpdir(), 'wsvc-npm-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.runIf(process.env.WSVC_TEST_PROJECT !== 'postgres')('npm start', () => {
  it('serves from dist/, and kill -TERM of the npm process stops the server', async () => {
    const npm = spawn('npm', ['start', '--silent'], {
      env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'w.db')}`, PORT: '0', LOG_LEVEL: 'info', REDIS_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    npm.stdout.on('data', (d) => {
      out += d;
    });
    npm.stderr.on('data', (d) => {
      out += d;
    });
    const npmExit = new Promise<number | null>((r) => npm.once('exit', (code) => r(code)));
    try {
      const listening = await eventually(
        async () => /"pid":(\d+).*"url":"(http:\/\/[^"]+)".*"msg":"listening"/.exec(out) ?? undefined,
        30_000,
      );
      const [serverPid, url] = [Number(listening[1]), listening[2] as string];
      expect(serverPid).not.toBe(npm.pid);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);

      npm.kill('SIGTERM');
      await npmExit;
      await eventually(async () => !alive(serverPid), 15_000);
      expect(out).toMatch(/"msg":"SIGTERM received: finishing in-flight work"/);
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    } finally {
      npm.kill('SIGKILL');
      const pid = /"pid":(\d+)/.exec(out)?.[1];
      if (pid && alive(Number(pid))) process.kill(Number(pid), 'SIGKILL');
    }
  }, 60_000);
});
