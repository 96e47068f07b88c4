import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlOf, startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';
import { eventually, type Received, type Receiver, startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: postgres — the recipe of docs/operations.md is for PostgreSQL and Redis
// Tier: full — four `wsvc` child processes and two commands, PostgreSQL/Redis only
// docs/operations.md "Running N API processes and M workers", run as written: the ```sh block of that
// section is read from the doc and each of its lines run in order, with the environment its `export`
// lines build. What the test changes, and why: DATABASE_URL points at this file's own PostgreSQL
// schema and REDIS_URL at the suite's Redis (with a key prefix of its own), the doc's ports are mapped
// to free ones (the same mapping in PUBLIC_URL), and `createdb` is skipped (the schema stands in for
// the database). A line of any other shape fails the test, so the doc cannot gain a step this test
// does not run. Then it does what the README's first webhook does: an endpoint on a loopback receiver
// through the first API process, a resource, and the delivery arriving from a worker.
const pgUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;
const exec = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const SECTION = '## Running N API processes and M workers';

/** The first ```sh block after the section's heading, as command lines without comments. */
function recipe(): string[] {
  const doc = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const from = doc.indexOf(SECTION);
  expect(from, SECTION).toBeGreaterThan(0);
  const block = /```sh\n([\s\S]*?)```/.exec(doc.slice(from))?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/(^|\s)#.*$/, '').trim())
    .filter((l) => l !== '');
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe.skipIf(!pgUrl || !redisUrl)('docs/operations.md: N API processes and M workers, as written', () => {
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let rx: Receiver;
  const started: { args: string[]; env: NodeJS.ProcessEnv; proc: WsvcProcess }[] = [];
  const printed: string[] = [];
  const ports = new Map<string, string>();
  const env: NodeJS.ProcessEnv = {};

  /** A value of the doc with its ports mapped to this run's, and the database and Redis to the suite's. */
  const ours = async (name: string, value: string): Promise<string> => {
    if (name === 'DATABASE_URL') return databaseUrlOf(storage);
    if (name === 'REDIS_URL') return redisUrl as string;
    let out = value;
    for (const m of value.matchAll(/(?<=:|^)(80\d\d)\b/g)) {
      const doc = m[1] as string;
      if (!ports.has(doc)) ports.set(doc, String(await freePort()));
      out = out.replaceAll(doc, ports.get(doc) as string);
    }
    return out;
  };

  beforeAll(async () => {
    storage = await openTestStorage({ migrate: false }); // the recipe's `migrate` line migrates it
    rx = await startReceiver();
    const base = { REDIS_KEY_PREFIX: `wsvc-test:${randomBytes(6).toString('hex')}:`, DATABASE_POOL_SIZE: '3' };
    for (const line of recipe()) {
      if (line.startsWith('openssl rand ')) continue; // the key file: the next line's key is made here
      if (line.startsWith('export SECRETS_KEY=')) {
        env.SECRETS_KEY = randomBytes(32).toString('base64');
        continue;
      }
      const exported = /^export (\w+)=(\S+)$/.exec(line);
      if (exported) {
        env[exported[1] as string] = await ours(exported[1] as string, exported[2] as string);
        continue;
      }
      if (line.startsWith('createdb ')) continue;
      const cmd = /^((?:\w+=\S+ )*)node bin\/wsvc\.js ([^&]+?)( &)?$/.exec(line);
      if (!cmd) throw new Error(`docs/operations.md: a recipe line this test does not know how to run: ${line}`);
      const own: NodeJS.ProcessEnv = {};
      for (const pair of (cmd[1] ?? '').trim().split(' ').filter(Boolean)) {
        const [k, v] = pair.split('=') as [string, string];
        own[k] = await ours(k, v);
      }
      const args = (cmd[2] as string).trim().split(/\s+/);
      const procEnv = { ...base, ...env, ...own };
      if (cmd[3]) {
        started.push({ args, env: procEnv, proc: await startWsvc(args, procEnv) });
      } else {
        const { stdout } = await exec(process.execPath, ['bin/wsvc.js', ...args], {
          cwd: ROOT,
          env: { ...process.env, LOG_LEVEL: 'silent', ...procEnv },
        });
        printed.push(stdout);
      }
    }
  }, 240_000);
  afterAll(async () => {
    await Promise.all(started.map(({ proc }) => stopProcess(proc.child)));
    await rx?.close();
    await storage?.close();
  });

  it('starts two API processes and two workers, and the console link of `workspaces create` is on the first', () => {
    expect(started.map((s) => s.args.join(' '))).toEqual(['serve --api-only', 'serve --api-only', 'worker', 'worker']);
    const first = started[0]?.proc.url;
    expect(first).toBe(`http://127.0.0.1:${ports.get('8081')}`);
    const out = printed.at(-1) ?? '';
    expect(out).toMatch(/^live key {2}svc_live_/m);
    expect(out).toMatch(new RegExp(`^console {3}${first}/console/set-password\\?token=`, 'm'));
  });

  it("delivers a webhook to a receiver on loopback (the README's first webhook), from a worker", {
    timeout: 60_000,
  }, async () => {
    const key = /^live key {2}(\S+)$/m.exec(printed.at(-1) ?? '')?.[1];
    const api = started[0]?.proc.url;
    const call = (path: string, body: unknown) =>
      fetch(`${api}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const hook = await call('/v1/webhooks', { url: rx.url('/'), events: ['*'] });
    expect(hook.status, await hook.clone().text()).toBe(201);
    const made = await call('/v1/resources', { name: 'First resource', type: 'standard' });
    expect(made.status).toBe(201);
    const created = (x: Received) => x.path === '/' && JSON.parse(x.body).event === 'resource.created';
    await rx.until((r) => r.some(created), 20_000);
    const got = rx.received.find(created);
    expect(got?.headers['webhook-signature']).toMatch(/^v1,/);
  });

  it('a worker started without WEBHOOK_ALLOW_INSECURE_URLS names the setting in the attempt it refuses', {
    timeout: 90_000,
  }, async () => {
    // The mistake the recipe's `export` prevents: the setting on the API processes only.
    for (const s of started.filter((x) => x.args[0] === 'worker')) await stopProcess(s.proc.child);
    const { WEBHOOK_ALLOW_INSECURE_URLS: _, ...without } = started[2]?.env ?? {};
    const strict = await startWsvc(['worker'], without);
    started.push({ args: ['worker'], env: without, proc: strict });
    const key = /^live key {2}(\S+)$/m.exec(printed.at(-1) ?? '')?.[1];
    const api = started[0]?.proc.url;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const hook = await (
      await fetch(`${api}/v1/webhooks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ url: rx.url('/strict'), events: ['resource.created'] }),
      })
    ).json();
    await fetch(`${api}/v1/resources`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Second resource', type: 'standard' }),
    });
    const error = await eventually(async () => {
      const list = await (await fetch(`${api}/v1/webhooks/${hook.data.id}/deliveries`, { headers })).json();
      const error: unknown = list.data[0]?.last_error;
      return typeof error === 'string' ? error : undefined;
    }, 20_000);
    expect(error).toBe(
      'refused: url is not https://: http:// is delivered only when the process that delivers (`wsvc worker`, or ' +
        '`wsvc serve` without --api-only) has WEBHOOK_ALLOW_INSECURE_URLS=true, for local development only',
    );
    expect(rx.to('/strict')).toEqual([]);
  });
});
