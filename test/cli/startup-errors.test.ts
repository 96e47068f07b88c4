// Backends: both — each project starts wsvc against its own kind of database (a SQLite path, the suite's PostgreSQL server)
// Tier: full — spawns a dozen wsvc processes
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// docs/operations.md#start-up-errors: a newcomer's mistakes stop `wsvc` with exit code 1 and
// messages that name the setting and a fix; several invalid settings are listed one per line, as
// the server lists them; no message repeats a password or a secret setting.
const dir = mkdtempSync(join(tmpdir(), 'wsvc-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const pg = process.env.WSVC_TEST_PROJECT === 'postgres' ? process.env.TEST_DATABASE_URL : undefined;

/** Runs `wsvc <args>` with exactly these settings (nothing inherited but PATH), bounded to 30 s. */
function wsvc(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bin/wsvc.js', ...args], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', PLAN_LIMITS: 'off', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    // A guard against a process that never exits, within the tests' 120 s: CI once killed a `serve` that was
    // still migrating its fresh SQLite file (fsync per migration) at 30 s, under a load average of 20.
    const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, stdout });
    });
  });
}

describe('settings errors (docs/operations.md#start-up-errors)', { timeout: 120_000 }, () => {
  const sqlite = { DATABASE_URL: `sqlite:${join(dir, 'w.db')}` };

  it('an invalid URL setting is shown without its password, a secret setting without its value', async () => {
    for (const [name, value, shown] of [
      ['DATABASE_URL', 'postgress://postgres:s3cretpw@db.example.com/x', '"postgress://postgres:***@db.example.com/x"'],
      ['SMTP_URL', 'smtp:/mailer:s3cretpw@mail.example.com:587', '"smtp:/mailer:***@mail.example.com:587"'],
      ['REDIS_URL', 'http://:s3cretpw@cache.example.com:6379', '"http://:***@cache.example.com:6379"'],
      ['METRICS_TOKEN', 's3cretpw', 'a value of 8 characters (not shown)'],
    ]) {
      for (const cmd of [['serve'], ['workspaces', 'list']]) {
        const r = await wsvc(cmd, { ...sqlite, [name as string]: value as string });
        expect(r.code, `${cmd.join(' ')} ${name}`).toBe(1);
        expect(r.stderr).not.toContain('s3cretpw');
        expect(r.stderr).toContain(`${name} must be`);
        expect(r.stderr).toContain(`got ${shown}`);
      }
    }
  });

  it('the CLI lists several invalid settings one per line, as the server does', async () => {
    const env = { ...sqlite, PORT: 'abc', LOG_LEVEL: 'loud', WEBHOOK_ALLOW_INSECURE_URLS: 'maybe' };
    const expected = [
      'error: Invalid settings:',
      '  - PORT must be a whole number from 0 to 65535; got "abc"',
      '  - LOG_LEVEL must be one of: fatal, error, warn, info, debug, trace, silent; got "loud"',
      '  - WEBHOOK_ALLOW_INSECURE_URLS must be true or false; got "maybe"',
    ];
    for (const cmd of [['workspaces', 'list'], ['serve']]) {
      const r = await wsvc(cmd, env);
      expect(r.code).toBe(1);
      expect(r.stderr.trimEnd().split('\n')).toEqual(expected);
    }
  });

  it('a PLANS_FILE plan without a field names the field to add, not "got undefined"', async () => {
    const file = join(dir, 'plans.json');
    const plan = {
      id: 'free',
      name: 'Free',
      base_price_cents: 0,
      included_requests: 10_000,
      hard_cap: true,
      overage_unit_requests: null,
      overage_unit_price_cents: null,
      max_resources: 100,
    };
    writeFileSync(file, JSON.stringify({ plans: [plan] }));
    const r = await wsvc(['workspaces', 'list'], { ...sqlite, PLANS_FILE: file });
    expect(r.code).toBe(1);
    expect(r.stderr).not.toContain('undefined');
    expect(r.stderr).toContain(
      `PLANS_FILE "${file}": plan "free" has no field "max_webhooks"; add it: a non-negative integer or null`,
    );
  });
});

describe.runIf(!pg)('SQLite and the port (docs/operations.md#start-up-errors)', { timeout: 120_000 }, () => {
  it('DATABASE_URL naming a directory says so and suggests a file in it', async () => {
    for (const cmd of [['workspaces', 'list'], ['serve']]) {
      const r = await wsvc(cmd, { DATABASE_URL: `sqlite:${dir}` });
      expect(r.code).toBe(1);
      expect(r.stderr.trimEnd()).toBe(
        `error: DATABASE_URL=sqlite:${dir}: cannot open ${dir} as a SQLite database file: ${dir} is a directory. ` +
          `Name a file in a folder you can write, such as DATABASE_URL=sqlite:${dir}/workspace.db.`,
      );
    }
  });

  it('a port in use names PORT and another port to use', async () => {
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const r = await wsvc(['serve', '--api-only'], {
        DATABASE_URL: `sqlite:${join(dir, 'port.db')}`,
        PORT: String(port),
      });
      expect(r.code).toBe(1);
      expect(r.stderr.trimEnd()).toBe(
        `error: PORT ${port} is already in use on 127.0.0.1 (another wsvc serve, or another program). ` +
          `Stop that process, or choose another port: PORT=${port + 1} wsvc serve (PORT=0 picks a free one).`,
      );
    } finally {
      taken.close();
    }
  });
});

describe.runIf(pg)('PostgreSQL (docs/operations.md#start-up-errors)', { timeout: 120_000 }, () => {
  const server = new URL(pg ?? 'postgres://postgres@127.0.0.1:5432/test');
  const host = server.hostname;
  const port = server.port || '5432';
  const url = (user: string, database: string, p = port) => `postgres://${user}@${host}:${p}/${database}`;

  it('nothing listening: names DATABASE_URL, the address and what to do', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const free = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const r = await wsvc(['workspaces', 'list'], {
      DATABASE_URL: `postgres://postgres:s3cretpw@127.0.0.1:${free}/test`,
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd()).toBe(
      `error: DATABASE_URL: cannot connect to PostgreSQL at 127.0.0.1:${free}: nothing accepts connections there (connection refused). ` +
        'Start PostgreSQL there, or set DATABASE_URL to where it runs (postgres://user@host:5432/database).',
    );
  });

  it('a database that does not exist: the createdb command that makes it', async () => {
    const r = await wsvc(['serve'], { DATABASE_URL: url(server.username || 'postgres', 'wsvc_not_created') });
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd()).toBe(
      `error: DATABASE_URL names the database "wsvc_not_created", which does not exist on ${host}:${port}. ` +
        `Create it (createdb -h ${host} -p ${port} -U postgres wsvc_not_created) or name an existing database in DATABASE_URL (postgres://user@host:5432/database).`,
    );
  });

  it('a role that does not exist: the createuser command, or the user to put in DATABASE_URL', async () => {
    const r = await wsvc(['workspaces', 'list'], { DATABASE_URL: url('nobody_wsvc', 'test') });
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd()).toBe(
      `error: DATABASE_URL connects as "nobody_wsvc", a role that does not exist on ${host}:${port}. ` +
        `Create it (createuser -h ${host} -p ${port} -U postgres nobody_wsvc) or put an existing user in DATABASE_URL (postgres://user@host:5432/database).`,
    );
  });
});
