// Backends: sqlite — the examples of docs/using.md as one session on a fresh SQLite database; the answers do not depend on the backend.
// Tier: quick — in-process `wsvc` commands and requests through the real app, a second or two.
// Every ```console block of docs/using.md is run, in order, as one session: `$ npx wsvc …` lines by the
// real CLI (in this process, on the test database), `$ curl …` lines as requests to the real app (with
// the delivery worker and a real receiver standing in for the one on 127.0.0.1:3000). The lines after a
// command are its expected output: ids, keys, secrets and cursors may differ from the doc's, but
// consistently (an id the doc prints twice must be the same id twice, and an id the doc uses in a later
// command is replaced by the real one), times are any ISO time, `…` stands for any text, and table
// columns may be wider or narrower. Anything else
// that differs (a message, a status, a field) fails with the doc's line number. The ```json block under
// "What a receiver gets" must match a body the receiver really got. ```sh blocks are synopses, not run.

import { readdirSync, readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';
import { testWorker } from '../helpers/worker.js';

const ROOT = join(import.meta.dirname, '..', '..');
const DOC = 'docs/using.md';
/** Where the doc's server and receiver listen. */
const DOC_BASE = 'http://127.0.0.1:8080';
const DOC_RECEIVER = 'http://127.0.0.1:3000/';
/** From this sentence on, the doc's server runs with WEBHOOK_ALLOW_INSECURE_URLS=true. */
const INSECURE_FROM = 'start the\nserver with `WEBHOOK_ALLOW_INSECURE_URLS=true npm start`';

interface Example {
  /** 1-based line of the `$ ` line in the doc. */
  line: number;
  command: string;
  expected: string;
  /** Output lines read so far. */
  output: number;
}

/** The commands of every ```console block, with the output lines that follow each. */
function examples(doc: string): Example[] {
  const lines = doc.split('\n');
  const out: Example[] = [];
  let inConsole = false;
  let current: Example | undefined;
  let continued = false;
  for (const [i, raw] of lines.entries()) {
    if (!inConsole) {
      if (raw === '```console') inConsole = true;
      continue;
    }
    if (raw === '```') {
      inConsole = false;
      current = undefined;
      continue;
    }
    if (continued && current) {
      current.command += `\n${raw}`;
      continued = raw.endsWith('\\');
    } else if (raw.startsWith('$ ')) {
      current = { line: i + 1, command: raw.slice(2), expected: '', output: 0 };
      out.push(current);
      continued = raw.endsWith('\\');
    } else if (current) {
      current.expected = current.output++ === 0 ? raw : `${current.expected}\n${raw}`;
    } else {
      throw new Error(`${DOC}:${i + 1}: output before any command in a console block`);
    }
  }
  return out;
}

/** Shell words of one command line: quotes, `$VAR` expansion (not in single quotes), `\` newlines, `#` comments, `|`. */
function words(command: string, vars: Record<string, string>): string[] {
  const out: string[] = [];
  let word: string | null = null;
  const s = command.replace(/\\\n/g, ' ');
  const expand = (from: number): [string, number] => {
    const m = /^\$([A-Z_][A-Z0-9_]*)/.exec(s.slice(from));
    if (!m) return ['$', from + 1];
    const name = m[1] as string;
    if (!(name in vars)) throw new Error(`unknown variable $${name}`);
    return [vars[name] as string, from + m[0].length];
  };
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (c === ' ' || c === '\t') {
      if (word !== null) out.push(word);
      word = null;
      i++;
    } else if (c === '#' && word === null) {
      break;
    } else if (c === '|' && word === null) {
      out.push('|');
      i++;
    } else if (c === "'") {
      const end = s.indexOf("'", i + 1);
      word = (word ?? '') + s.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      word ??= '';
      i++;
      while (s[i] !== '"') {
        if (i >= s.length) throw new Error('unterminated "');
        if (s[i] === '$') {
          const [v, next] = expand(i);
          word += v;
          i = next;
        } else word += s[i++];
      }
      i++;
    } else if (c === '$') {
      const [v, next] = expand(i);
      word = (word ?? '') + v;
      i = next;
    } else {
      word = (word ?? '') + c;
      i++;
    }
  }
  if (word !== null) out.push(word);
  return out;
}

/** Tokens that stand for values the service makes up: bound doc value ↔ real value. */
const BOUND = [
  /(?:ws|usr|res|wh|evt|dlv|key|req|rql|inv|ntf)_[0-9A-HJKMNP-TV-Z]{26}/.source,
  /svc_(?:live|test)_[A-Za-z0-9]{43}/.source,
  /whsec_[A-Za-z0-9+/]{43}=/.source,
  /eyJ[A-Za-z0-9_-]+={0,2}/.source,
];
const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/.source;
const TOKEN = new RegExp(`(${BOUND.join('|')})|(${TIME})|(…)`, 'g');
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Literal text as a pattern; a run of two or more spaces (between table columns) matches any such run. */
const literal = (s: string) => escapeRe(s).replace(/ {2,}/g, ' {2,}');

/** Binds the doc's made-up values to the real ones, one to one. */
class Bindings {
  private readonly real = new Map<string, string>();
  private readonly doc = new Map<string, string>();

  /** Whether `actual` matches `expected`; binds what it captured (only when it matches). */
  match(expected: string, actual: string): string | null {
    const captured: string[] = [];
    let pattern = '';
    let last = 0;
    for (const m of expected.matchAll(TOKEN)) {
      pattern += literal(expected.slice(last, m.index));
      if (m[1]) {
        captured.push(m[1]);
        const known = this.real.get(m[1]);
        pattern += known
          ? `(${escapeRe(known)})`
          : `(${BOUND.find((b) => new RegExp(`^${b}$`).test(m[1] as string)) ?? ''})`;
      } else if (m[2]) pattern += TIME;
      else pattern += '[\\s\\S]*?';
      last = (m.index ?? 0) + m[0].length;
    }
    pattern += literal(expected.slice(last));
    const found = new RegExp(`^${pattern}$`).exec(actual);
    if (!found) return 'the output differs';
    const pairs = captured.map((d, i) => [d, found[i + 1] as string] as const);
    for (const [d, r] of pairs) {
      const other = this.doc.get(r);
      if (other !== undefined && other !== d) return `${d} is ${r}, which the doc calls ${other} earlier`;
      const seen = pairs.find(([d2, r2]) => d2 !== d && r2 === r);
      if (seen) return `${d} and ${seen[0]} are the same value ${r}`;
    }
    for (const [d, r] of pairs) {
      this.real.set(d, r);
      this.doc.set(r, d);
    }
    return null;
  }

  /** The command with every doc value already bound replaced by its real value. */
  substitute(command: string): string {
    return command.replace(new RegExp(BOUND.join('|'), 'g'), (d) => {
      const r = this.real.get(d);
      if (r === undefined) throw new Error(`${d} is used before any output showed it`);
      return r;
    });
  }
}

/** Runs `wsvc` in this process; what a terminal shows (stdout, then stderr). */
async function wsvc(args: string[], databaseUrl: string): Promise<string> {
  let out = '';
  let err = '';
  const write = { out: process.stdout.write, err: process.stderr.write };
  const env = {
    DATABASE_URL: process.env.DATABASE_URL,
    LOG_LEVEL: process.env.LOG_LEVEL,
    PUBLIC_URL: process.env.PUBLIC_URL,
  };
  process.env.DATABASE_URL = databaseUrl;
  process.env.LOG_LEVEL = 'silent';
  process.env.PUBLIC_URL = DOC_BASE;
  process.stdout.write = ((s: string) => {
    out += s;
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => {
    err += s;
    return true;
  }) as typeof process.stderr.write;
  try {
    await main(['node', 'wsvc', ...args]);
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
    for (const [k, v] of Object.entries(env)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    process.exitCode = undefined;
  }
  return out + err;
}

/** Runs one curl command line through the app; what curl prints. */
async function curl(t: TestApp, argv: string[]): Promise<{ output: string; status: number; body: string }> {
  const pipe = argv.indexOf('|');
  const args = pipe === -1 ? argv.slice(1) : argv.slice(1, pipe);
  const after = pipe === -1 ? [] : argv.slice(pipe + 1);
  let method: string | undefined;
  let url = '';
  let body: string | undefined;
  let include = false;
  let writeOut: string | undefined;
  let discard = false;
  const headers: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-s') continue;
    else if (a === '-i') include = true;
    else if (a === '-X') method = args[++i];
    else if (a === '-H') {
      const h = args[++i] as string;
      const colon = h.indexOf(':');
      headers[h.slice(0, colon).trim().toLowerCase()] = h.slice(colon + 1).trim();
    } else if (a === '-d') body = args[++i];
    else if (a === '-o') discard = args[++i] === '/dev/null';
    else if (a === '-w') writeOut = args[++i];
    else if (a.startsWith('-')) throw new Error(`curl option ${a} is not supported by this test`);
    else url = a;
  }
  if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/x-www-form-urlencoded';
  if (!url.startsWith(DOC_BASE)) throw new Error(`curl to ${url}: the examples call $B`);
  const res = await t.app.inject({
    method: (method ?? (body === undefined ? 'GET' : 'POST')) as 'GET',
    url: url.slice(DOC_BASE.length),
    headers,
    payload: body,
  });
  let output = '';
  if (include) {
    output += `HTTP/1.1 ${res.statusCode} ${STATUS_CODES[res.statusCode]}\n`;
    for (const [k, v] of Object.entries(res.headers)) output += `${k}: ${String(v)}\n`;
    output += '\n';
  }
  if (!discard) output += res.body;
  if (writeOut !== undefined) output += writeOut.replace('%{http_code}', String(res.statusCode)).replace('\\n', '\n');
  if (after[0] === 'head' && after[1] === '-c') output = output.slice(0, Number(after[2]));
  else if (after.length > 0) throw new Error(`| ${after.join(' ')} is not supported by this test`);
  return { output, status: res.statusCode, body: res.body };
}

/**
 * `curl -i` output against the doc: the status line, then the headers the doc names (each must be sent
 * with that value; others may be sent too), then the body.
 */
function withShownHeaders(expected: string, actual: string): string {
  if (!expected.startsWith('HTTP/1.1 ')) return actual;
  const [head = '', ...rest] = actual.split('\n\n');
  const [statusLine, ...sent] = head.split('\n');
  const shown: string[] = [];
  const expectedLines = expected.split('\n');
  let i = 1;
  for (; i < expectedLines.length; i++) {
    const l = expectedLines[i] as string;
    if (l === '' || l.startsWith('{')) break;
    const name = l.slice(0, l.indexOf(':')).toLowerCase();
    shown.push(sent.find((s) => s.toLowerCase().startsWith(`${name}:`)) ?? `(no ${name} header)`);
  }
  const blank = expectedLines[i] === '' ? [''] : [];
  return [statusLine, ...shown, ...blank, rest.join('\n\n')].join('\n').replace(/\n$/, '');
}

const clean = (s: string) =>
  s
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .replace(/\n+$/, '');

describe(`the console examples of ${DOC}`, () => {
  let strict: TestApp;
  let local: TestApp;
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let worker: DeliveryWorker;
  let receiver: Receiver;
  beforeAll(async () => {
    storage = await openTestStorage();
    strict = await startTestApp({ storage });
    local = await startTestApp({ storage, config: { WEBHOOK_ALLOW_INSECURE_URLS: true } });
    worker = testWorker(local, { listen: false });
    receiver = await startReceiver(() => ({ status: 204 }));
  });
  afterAll(async () => {
    await receiver?.close();
    await local?.close();
    await strict?.close();
    await storage?.close();
  });

  it('print what the service answers', { timeout: 60_000 }, async () => {
    const doc = readFileSync(join(ROOT, DOC), 'utf8');
    const insecureFrom = doc.slice(0, doc.indexOf(INSECURE_FROM)).split('\n').length;
    expect(
      doc.indexOf(INSECURE_FROM),
      `${DOC} no longer says how to start a server for local receivers`,
    ).toBeGreaterThan(0);
    const all = examples(doc);
    expect(all.length).toBeGreaterThan(40);
    const bindings = new Bindings();
    const vars: Record<string, string> = { B: DOC_BASE };
    const realReceiver = receiver.url('/');
    const failures: string[] = [];
    for (const ex of all) {
      let command: string;
      try {
        command = bindings.substitute(ex.command);
      } catch (e) {
        failures.push(`${DOC}:${ex.line}: $ ${ex.command}\n  ${(e as Error).message}\n`);
        continue;
      }
      command = command.replaceAll(DOC_RECEIVER, realReceiver);
      const argv = words(command, vars);
      let actual: string;
      if (argv[0] === 'npx' && argv[1] === 'wsvc') {
        actual = await wsvc(argv.slice(2), storage.url);
        // The variables the curl examples use: the keys these commands print.
        if (/workspaces create --name Acme .*--json/.test(ex.command)) vars.KEY = JSON.parse(actual).keys.live.key;
        if (/keys create .*--name "viewer ro" .*--json/.test(ex.command)) vars.VIEWER_KEY = JSON.parse(actual).key.key;
        if (/keys create .*--name "CI deploy"/.test(ex.command))
          vars.REVOKED_KEY = /svc_live_[A-Za-z0-9]{43}/.exec(actual)?.[0] ?? '';
      } else if (argv[0] === 'curl') {
        const app = ex.line > insecureFrom ? local : strict;
        const res = await curl(app, argv);
        actual = res.output;
        if (res.status === 201 && /\/v1\/webhooks$/.test(argv.find((a) => a.startsWith(DOC_BASE)) ?? '') && !vars.WH)
          vars.WH = JSON.parse(res.body).data.id;
        if (app === local) await worker.runOnce();
      } else {
        throw new Error(
          `${DOC}:${ex.line}: a console example this test cannot run (make it a sh block): ${ex.command}`,
        );
      }
      actual = clean(withShownHeaders(ex.expected, actual.replaceAll(realReceiver, DOC_RECEIVER)));
      const problem = bindings.match(clean(ex.expected), actual);
      if (problem) failures.push(`${DOC}:${ex.line}: $ ${ex.command}\n  ${problem}; the service printed:\n${actual}\n`);
    }
    // What a receiver gets: the event body of the doc is one the receiver got.
    const receiverDoc = /### What a receiver gets[\s\S]*?```json\n(.*)\n```/.exec(doc)?.[1] ?? '(no json block)';
    const bodies = receiver.received.map((r) => r.body);
    if (!bodies.some((b) => new Bindings().match(receiverDoc, b) === null))
      failures.push(`${DOC}: "What a receiver gets" differs from every body the receiver got:\n${bodies.join('\n')}`);
    expect(failures.join('\n')).toBe('');
  });
});

describe('the checker itself', () => {
  it('binds made-up values one to one and refuses a changed message', () => {
    const b = new Bindings();
    const id = 'res_01M849B4QXGY5VSF6WTVX78SJT';
    expect(
      b.match(
        `{"id":"${id}","at":"2026-11-23T13:25:49.949Z",…}`,
        '{"id":"res_01KAAAAAAAAAAAAAAAAAAAAAAA","at":"2030-01-01T00:00:00.000Z","x":1}',
      ),
    ).toBeNull();
    expect(b.substitute(`$B/v1/resources/${id}`)).toBe('$B/v1/resources/res_01KAAAAAAAAAAAAAAAAAAAAAAA');
    expect(b.match(`{"id":"${id}"}`, '{"id":"res_01KBBBBBBBBBBBBBBBBBBBBBBB"}')).toBe('the output differs');
    expect(b.match('{"message":"No such resource."}', '{"message":"No such webhook."}')).toBe('the output differs');
    expect(b.match('{"a":"res_01M849B4T750SYDGCP0R1HHGE5"}', '{"a":"res_01KAAAAAAAAAAAAAAAAAAAAAAA"}')).toMatch(
      /calls/,
    );
    expect(() => b.substitute('res_01M849B4T750SYDGCP0R1HHGE5')).toThrow(/before any output/);
  });
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function anchors(path: string): Set<string> {
  const text = readFileSync(join(ROOT, path), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1] as string)));
}

describe(`links into and out of ${DOC}`, () => {
  it('name headings that exist', () => {
    const broken: string[] = [];
    // Out of using.md: to its own sections and to the other pages' sections.
    const doc = readFileSync(join(ROOT, DOC), 'utf8');
    for (const m of doc.matchAll(/\]\(([\w./-]*?)#([\w-]+)\)/g)) {
      const target = m[1] ? join('docs', m[1] as string) : DOC;
      if (!anchors(target).has(m[2] as string)) broken.push(`${DOC}: ${m[0]}`);
    }
    // Into using.md: from the README, docs/*.md, the console, the server's strings and the tests' comments.
    const using = anchors(DOC);
    const from = ['README.md', ...['docs', 'console/src', 'src', 'test'].flatMap((d) => filesUnder(d))];
    for (const path of from) {
      for (const m of readFileSync(join(ROOT, path), 'utf8').matchAll(/using\.md#([\w-]+)/g)) {
        if (!using.has(m[1] as string)) broken.push(`${path}: ${m[0]}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(md|ts|tsx|json)$/.test(e.name))
    .map((e) => join(e.parentPath, e.name).slice(ROOT.length + 1));
}
