// Benchmark (docs/performance.md#method): a plain-text summary of `node --cpu-prof` profiles (where a request's CPU goes, by part of
// the request; self time by function and by package), the evidence behind docs/performance.md#profiles.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

/** Each sample's stack, innermost frame first. */
function stacksOf(prof: { nodes: ProfileNode[]; samples: number[] }): ProfileNode[][] {
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  return prof.samples.map((leaf) => {
    const stack: ProfileNode[] = [];
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id);
      if (node) stack.push(node);
    }
    return stack;
  });
}

/** Inclusive samples per function (each sample counted once per function on its stack). */
function inclusive(stacks: ProfileNode[][], keyOf: (n: ProfileNode) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const stack of stacks) {
    const seen = new Set<string>();
    for (const node of stack) seen.add(keyOf(node));
    for (const k of seen) out.set(k, (out.get(k) ?? 0) + 1);
  }
  return out;
}

/** Where a frame belongs: a package, our own source, node internals, or the VM itself. */
function bucketOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  if (url.startsWith('node:')) return 'node:internals';
  const own = /\/(src|dist|bench)\/(.*)$/.exec(url);
  return own ? `${own[1]}/${own[2]}` : url;
}

function pct(n: number, total: number): string {
  return `${((n / total) * 100).toFixed(1)} %`;
}

type Frame = ProfileNode['callFrame'];
/**
 * The parts of a request, tested from the sampled function outwards: a sample belongs to the first
 * frame of its stack that one of these names. Start-up (module loading, schema compilation) is
 * left out. Wall-clock samples: a system call that waits (a write that wakes the load generator,
 * an fsync) counts as long as it takes.
 */
const WRITEV = (f: Frame) => f.functionName === 'writev';
const NODE = (f: Frame) => f.url.startsWith('node:') || /^(parse|writeUtf8String|utf8Write)$/.test(f.functionName);
/** The database clients: a socket write or Node stream code on a stack with one of these further out is its. */
const CLIENTS: [string, (f: Frame) => boolean][] = [
  ['PostgreSQL client (pg)', (f) => /\/pg\/|pg-protocol|pg-pool|db\/postgres\.js/.test(f.url)],
  ['Redis client (ioredis)', (f) => /ioredis|redis-parser/.test(f.url)],
];
const PG = CLIENTS[0] as (typeof CLIENTS)[number];
/** pg's own work by what it does, from its innermost frame outwards (every handler runs under pg-protocol's parse). */
function pgPartOf(stack: Frame[]): string {
  const has = (re: RegExp) => stack.some((f) => re.test(f.functionName));
  if (has(/^(parseRow|_parseRowAsArray)$/)) return 'rows (objects, type parsers: timestamps, JSON)';
  if (has(/^(addFields|parseRowDescriptionMessage)$/)) return 'RowDescription (a parser per column, every query)';
  if (has(/^parseDataRowMessage$/)) return 'DataRow messages (field strings)';
  if (stack.some((f) => /serializer/.test(f.url))) return 'Bind, Describe, Execute, Sync messages';
  return 'queries, pool, connection, message dispatch';
}
const PARTS: [string, (f: Frame) => boolean][] = [
  ['socket writes (writev: the kernel delivers on loopback)', WRITEV],
  ['SQLite (statements, WAL read locks, fsync)', (f) => /db\/sqlite\.js|better-sqlite3|sqlite-driver/.test(f.url)],
  ...CLIENTS,
  ['Kysely (query builder, executor)', (f) => /kysely/.test(f.url)],
  [
    'key verification (SHA-256, cache, epoch)',
    (f) =>
      /keys\.service|key-registry\.service|key-format|keys\.repository/.test(f.url) ||
      (f.functionName === 'hash' && f.url.includes('crypto')),
  ],
  ['rate limit', (f) => /rate-limit|toad-cache/.test(f.url)],
  [
    'response JSON (fast-json-stringify)',
    (f) => /fast-json-stringify/.test(f.url) || /^anonymous\d/.test(f.functionName),
  ],
  ['validation (ajv, undeclared input)', (f) => /ajv|http\/validation\.js/.test(f.url)],
  ['logging (pino)', (f) => /pino|logging\.js|logger-factory/.test(f.url)],
  ['request id', (f) => /request-id\.js|(lib|kernel)\/ids\.js/.test(f.url)],
  ['routes, services, repositories (ours)', (f) => /\/(dist|src)\/(modules|db|lib|http|kernel)\//.test(f.url)],
  ['Fastify (routing, hooks, reply)', (f) => /fastify|find-my-way/.test(f.url)],
  ['Node.js HTTP, streams, promises', NODE],
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
];
const STARTUP =
  /compileSchemasFor|Module\._load|ModuleJob|compileSourceTextModule|wrapSafe|internalModuleStat|compileForInternalLoader|_compileSchemaEnv/;

/** Whether a sample is of start-up (module loading, schema compilation, plugin registration), not of a request. */
function isStartup(stack: ProfileNode[]): boolean {
  return stack.some((n) => STARTUP.test(n.callFrame.functionName) || n.callFrame.url.includes('avvio'));
}

/** Shares of the request's CPU by part (PARTS), start-up and idle left out; with `cpuUs`, in µs per request. */
function byPart(stacks: ProfileNode[][], cpuUs?: number): string[] {
  const counts = new Map<string, number>();
  let counted = 0;
  for (const nodes of stacks) {
    const stack = nodes.map((n) => n.callFrame);
    if (stack[0]?.functionName === '(idle)' || stack[0]?.functionName === '(program)') continue;
    let part = 'other';
    for (const [i, f] of stack.entries()) {
      const hit = PARTS.find(([, test]) => test(f));
      if (hit) {
        part = hit[0];
        // A socket write or Node stream code called by a database client is that client's (its queries'
        // writes); Node code no client frame calls (socket reads, promise jobs) stays Node's.
        if (hit[1] === WRITEV || hit[1] === NODE) {
          const client = stack.slice(i + 1).find((g) => CLIENTS.some(([, test]) => test(g)));
          const owner = client && CLIENTS.find(([, test]) => test(client));
          if (owner)
            part = `${owner[0]}: ${hit[1] === WRITEV ? 'its socket writes (writev)' : 'Node streams it calls'}`;
        }
        if (hit === PG) part = `${part}: ${pgPartOf(stack.slice(i))}`;
        break;
      }
    }
    counts.set(part, (counts.get(part) ?? 0) + 1);
    counted++;
  }
  const out = [`where a request's CPU goes (${counted} samples${cpuUs ? `; × ${cpuUs} µs CPU per request` : ''}):`];
  for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1])) {
    const us = cpuUs ? `${((v / counted) * cpuUs).toFixed(1).padStart(7)} µs` : '';
    out.push(`  ${pct(v, counted).padStart(7)}${us}  ${k}`);
  }
  return out;
}

/**
 * Summarises every .cpuprofile in `dir` and in its folders (one per server; a folder's name says
 * which scenario it served), one section per file. `cpuUs`: measured CPU µs per request by folder.
 */
export function summariseProfiles(dir: string, top = 20, cpuUs: ReadonlyMap<string, number> = new Map()): string {
  const out: string[] = [];
  const files: { path: string; label: string; cpu?: number }[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) {
      for (const f of readdirSync(path).filter((x) => x.endsWith('.cpuprofile'))) {
        files.push({ path: join(path, f), label: `${entry}: ${f}`, cpu: cpuUs.get(entry) });
      }
    } else if (entry.endsWith('.cpuprofile')) files.push({ path, label: entry });
  }
  for (const { path, label: file, cpu } of files) {
    const prof = JSON.parse(readFileSync(path, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
    // Start-up (a schema compiled, a module loaded) is left out of every table: they describe requests.
    const all = stacksOf(prof);
    const stacks = all.filter((stack) => !isStartup(stack));
    const keyOf = (n: ProfileNode) =>
      `${n.callFrame.functionName || '(anonymous)'} ${bucketOf(n.callFrame.url, n.callFrame.functionName)}:${n.callFrame.lineNumber + 1}`;
    const byFn = new Map<string, number>();
    const byBucket = new Map<string, number>();
    for (const [leaf] of stacks) {
      if (!leaf) continue;
      const fn = keyOf(leaf);
      byFn.set(fn, (byFn.get(fn) ?? 0) + 1);
      const b = bucketOf(leaf.callFrame.url, leaf.callFrame.functionName);
      byBucket.set(b, (byBucket.get(b) ?? 0) + 1);
    }
    const total = stacks.length;
    const busy = total - (byBucket.get('(idle)') ?? 0);
    const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
    out.push(
      `### ${file}: ${all.length} samples, ${all.length - total} of them start-up (left out below); ${pct(busy, total)} of the rest busy`,
    );
    out.push(...byPart(stacks, cpu));
    out.push('self time by package/file:');
    for (const [k, v] of sorted(byBucket)) out.push(`  ${pct(v, total).padStart(7)}  ${k}`);
    out.push('self time by function:');
    for (const [k, v] of sorted(byFn)) out.push(`  ${pct(v, total).padStart(7)}  ${k}`);
    const incl = inclusive(stacks, keyOf);
    out.push('inclusive time, this service and its hooks (src/, compiled into dist/):');
    const own = [...incl].filter(([k]) => / (src|dist)\//.test(k)).sort((a, b) => b[1] - a[1]);
    for (const [k, v] of own.slice(0, top)) out.push(`  ${pct(v, total).padStart(7)}  ${k}`);
  }
  return out.join('\n');
}
