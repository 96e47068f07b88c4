// The figures of docs/performance.md, generated from bench/results (`npm run docs:perf` rewrites them;
// test/docs/performance-figures.test.ts fails when the committed text differs). Each section sits between
// `<!-- generated:<name> -->` and `<!-- /generated:<name> -->`; the prose around them is written by hand.
//
// A results file is a run of `npm run bench`: its `machine` names the CPU model it ran on, its `argv` the options.
// Two kinds of run are kept, the latest of each per CPU model: a reference run (every scenario: no --only, --quick,
// --against or --profile) and a peer run (--peer). Every other file (an older run of the same kind and CPU, a partial
// run, a file without a CPU model) is superseded: `npm run docs:perf` deletes it (git keeps it).
//
// - figures: every row of the latest reference run of each CPU model, side by side;
// - targets: each target (TARGETS below) against those runs, met or not;
// - peer:    the latest peer run of each CPU model.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Machine, Row } from '../bench/report.js';

const ROOT = join(import.meta.dirname, '..');
const FILE = 'docs/performance.md';
export const PERFORMANCE_FILE = join(ROOT, FILE);
export const RESULTS_DIR = join(ROOT, 'bench/results');

export interface ResultsFile {
  /** The file's name without `.json`: the time the run was saved. */
  name: string;
  machine: Partial<Machine>;
  setup: string;
  argv: string[];
  rows: Row[];
}

export type RunKind = 'reference' | 'peer' | 'partial';

/** What kind of run a file holds, from the options it ran with. */
export function runKind(f: ResultsFile): RunKind {
  if (!f.machine.cpuModel || !Array.isArray(f.argv)) return 'partial';
  if (f.argv.includes('--peer')) return 'peer';
  const partial = ['--only', '--quick', '--against', '--profile', '--backend', '--server-flags'];
  return f.argv.some((a) => partial.includes(a)) ? 'partial' : 'reference';
}

/** Every results file of `dir`, oldest first. */
export function readResults(dir = RESULTS_DIR): ResultsFile[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const j = JSON.parse(readFileSync(join(dir, f), 'utf8'));
      const machine = typeof j.machine === 'object' && j.machine ? j.machine : {};
      return { name: f.replace(/\.json$/, ''), machine, setup: j.setup ?? '', argv: j.argv ?? [], rows: j.rows ?? [] };
    });
}

/** The latest run of `kind` per CPU model, by CPU model (sorted). */
export function latest(files: ResultsFile[], kind: 'reference' | 'peer'): Map<string, ResultsFile> {
  const out = new Map<string, ResultsFile>();
  for (const f of files) if (runKind(f) === kind) out.set(f.machine.cpuModel as string, f);
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)));
}

/** The files of `dir` (json and md) that no kept run needs. */
export function superseded(dir = RESULTS_DIR): string[] {
  const files = readResults(dir);
  const kept = new Set([...latest(files, 'reference').values(), ...latest(files, 'peer').values()].map((f) => f.name));
  return readdirSync(dir)
    .filter((f) => !f.startsWith('.') && !kept.has(f.replace(/\.(json|md)$/, '')))
    .sort();
}

const cpuLabel = (cpu: string) => cpu.replace(/\(R\)|\(TM\)/g, '').replace(/\s+Processor$/, '');
const num = (x: number) => x.toLocaleString('en-US');
const isComparison = (r: Row) => r.note?.startsWith('ratio: to the reference row') ?? false;
const isReference = (r: Row) => r.note === 'the reference of the next row';

function ratioText(r: Row): string {
  if (r.ratio === undefined) return '–';
  const range = r.ratioMin === undefined ? '' : ` (${r.ratioMin}–${r.ratioMax})`;
  const noisy = r.noisy && r.spread !== undefined ? `, **spread ${Math.round(r.spread * 100)} %**` : '';
  return `${r.ratio}${range}${noisy}`;
}
const cpuText = (r: Row) => (r.cpuUs === undefined ? '–' : `${num(r.cpuUs)}${r.dbCpuUs ? ` + ${num(r.dbCpuUs)}` : ''}`);

/** How a run was made, in words: rounds, seconds, the large workspace. */
function howRun(f: ResultsFile): string {
  const rounds = /(\d+) interleaved rounds of ([\d.]+) s/.exec(f.setup);
  const large = f.argv.includes('--large') ? f.argv[f.argv.indexOf('--large') + 1] : undefined;
  const parts = [
    rounds ? `${rounds[1]} interleaved rounds of ${rounds[2]} s` : undefined,
    large ? `a large workspace of ${num(Number(large))}` : undefined,
    f.rows.some((r) => r.backend === 'postgres') ? 'SQLite, and PostgreSQL with Redis' : 'SQLite only',
  ];
  return parts.filter(Boolean).join(', ');
}

function machineLine(f: ResultsFile): string {
  const m = f.machine;
  const load = m.loadAfter ? `${m.loadBefore?.[0]} before, ${m.loadAfter[0]} after` : `${m.loadBefore?.[0]} before`;
  return (
    `- **${cpuLabel(m.cpuModel as string)}**, ${m.cores} cores, Node ${m.node}, load average ${load}: ` +
    `\`bench/results/${f.name}.{json,md}\` (${howRun(f)})`
  );
}

function figures(files: ResultsFile[]): string {
  const runs = [...latest(files, 'reference').values()];
  if (runs.length === 0) return 'No reference run in bench/results.';
  const names: string[] = [];
  const key = (r: Row) => `${r.backend}|${r.scenario}`;
  // A comparison's reference row (the other side: metering off, billing off) shows in the comparison's row.
  for (const f of runs) for (const r of f.rows) if (!isReference(r) && !names.includes(key(r))) names.push(key(r));
  const head = runs.map((f) => cpuLabel(f.machine.cpuModel as string));
  const lines = [
    ...runs.map(machineLine),
    '',
    `| backend | row | ${head.map((h) => `${h}: × baseline, median (min–max) | CPU µs/req | req/s, p99 ms`).join(' | ')} |`,
    `|---|---|${runs.map(() => '---:|---:|---:|').join('')}`,
  ];
  for (const k of names) {
    const [backend, scenario] = k.split('|') as [string, string];
    const cells = runs.map((f) => {
      const r = f.rows.find((x) => key(x) === k);
      if (!r) return '– | – | –';
      if (!isComparison(r)) return `${ratioText(r)} | ${cpuText(r)} | ${num(r.rps)}, ${r.p99}`;
      const off = f.rows[f.rows.indexOf(r) - 1];
      const offCpu = off && isReference(off) ? ` (off: ${cpuText(off)})` : '';
      return `${ratioText(r)} × off | ${cpuText(r)}${offCpu} | ${num(r.rps)}, ${r.p99}`;
    });
    lines.push(`| ${backend === 'none' ? '–' : backend} | ${scenario} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

interface Check {
  got: string;
  met: boolean;
}

/** A target: what is wanted, and how a reference run's rows meet it (null: the run has no such row). */
export interface Target {
  name: string;
  wanted: string;
  check(rows: Row[]): Check | null;
}

const row = (rows: Row[], backend: string, scenario: string) =>
  rows.find((r) => r.backend === backend && r.scenario === scenario);
const GET = 'GET /v1/resources/{id}';
const LIST = 'GET /v1/resources?limit=20';
const POST = 'POST /v1/resources';

function ratioAtLeast(backend: string, scenario: string, min: number): Target['check'] {
  return (rows) => {
    const r = row(rows, backend, scenario);
    return r?.ratio === undefined ? null : { got: ratioText(r), met: r.ratio >= min };
  };
}

function cpuAtMost(backend: string, scenario: string, max: number): Target['check'] {
  return (rows) => {
    const r = row(rows, backend, scenario);
    return r?.cpuUs === undefined ? null : { got: `${num(r.cpuUs)} µs`, met: r.cpuUs <= max };
  };
}

/** The lists of 20 up to offset 10,000: first page, the deep offset, cursor pages; the lowest ratio counts. */
function listsAtLeast(backend: string, min: number): Target['check'] {
  return (rows) => {
    const lists = rows.filter(
      (r) =>
        r.backend === backend &&
        r.ratio !== undefined &&
        (r.scenario === LIST || /^GET \/v1\/resources\?limit=20&(offset|cursor)=.*, 10000\)$/.test(r.scenario)),
    );
    if (lists.length === 0) return null;
    const worst = lists.reduce((a, b) => ((b.ratio as number) < (a.ratio as number) ? b : a));
    return {
      got: `${lists.map((r) => r.ratio).join(', ')} (lowest ${worst.ratio})`,
      met: (worst.ratio as number) >= min,
    };
  };
}

/** Every GET row measured against the baseline answers its p99 within `ms`. */
function readsP99(ms: number): Target['check'] {
  return (rows) => {
    const reads = rows.filter((r) => r.scenario.includes('GET ') && r.ratio !== undefined && !isComparison(r));
    if (reads.length === 0) return null;
    const over = reads.filter((r) => r.p99 > ms);
    const worst = Math.max(...reads.map((r) => r.p99));
    return {
      got: over.length
        ? `${over.length} of ${reads.length} rows over, worst ${worst} ms`
        : `all ${reads.length}, worst ${worst} ms`,
      met: over.length === 0,
    };
  };
}

/** The targets, from the issues that set them; docs/performance.md#targets says what each one stands for. */
export const TARGETS: Target[] = [
  { name: 'SQLite GET by id', wanted: '≥ 0.6 × baseline', check: ratioAtLeast('sqlite', GET, 0.6) },
  { name: 'SQLite list of 20', wanted: '≥ 0.2 × baseline', check: ratioAtLeast('sqlite', LIST, 0.2) },
  { name: 'SQLite POST', wanted: '≥ 0.2 × baseline', check: ratioAtLeast('sqlite', POST, 0.2) },
  { name: 'PostgreSQL + Redis GET by id', wanted: '≥ 0.3 × baseline', check: ratioAtLeast('postgres', GET, 0.3) },
  {
    name: 'PostgreSQL + Redis list of 20, any offset ≤ 10,000',
    wanted: '≥ 0.12 × baseline',
    check: listsAtLeast('postgres', 0.12),
  },
  { name: 'PostgreSQL GET by id, server CPU', wanted: '≤ 150 µs', check: cpuAtMost('postgres', GET, 150) },
  { name: 'PostgreSQL list of 20, server CPU', wanted: '≤ 350 µs', check: cpuAtMost('postgres', LIST, 350) },
  { name: 'PostgreSQL POST, server CPU', wanted: '≤ 450 µs', check: cpuAtMost('postgres', POST, 450) },
  {
    name: 'SQLite usage metering, on against off',
    wanted: '≥ 0.95 × (GET by id)',
    check: ratioAtLeast('sqlite', `${GET}, metering on vs off`, 0.95),
  },
  {
    name: 'PostgreSQL usage metering, on against off',
    wanted: '≥ 0.95 × (GET by id)',
    check: ratioAtLeast('postgres', `${GET}, metering on vs off`, 0.95),
  },
  {
    name: 'SQLite free cap, on against off',
    wanted: '≥ 0.95 × (GET by id)',
    check: ratioAtLeast('sqlite', `${GET}, billing on vs off (capped plan)`, 0.95),
  },
  {
    name: 'PostgreSQL free cap, on against off',
    wanted: '≥ 0.95 × (GET by id)',
    check: ratioAtLeast('postgres', `${GET}, billing on vs off (capped plan)`, 0.95),
  },
  { name: 'p99 of every read row', wanted: '≤ 15 ms', check: readsP99(15) },
  {
    name: 'failed requests (non-2xx, errors, timeouts)',
    wanted: '0 in every row',
    check: (rows) => {
      const failed = rows.reduce((a, r) => a + r.non2xx, 0);
      return { got: String(failed), met: failed === 0 };
    },
  },
];

function targets(files: ResultsFile[]): string {
  const runs = [...latest(files, 'reference').values()];
  const head = runs.map((f) => cpuLabel(f.machine.cpuModel as string));
  const lines = [
    `| target | wanted | ${head.map((h) => `${h} | met?`).join(' | ')} |`,
    `|---|---|${runs.map(() => '---|---|').join('')}`,
  ];
  for (const t of TARGETS) {
    const cells = runs.map((f) => {
      const c = t.check(f.rows);
      return c ? `${c.got} | ${c.met ? 'yes' : '**no**'}` : 'not measured | –';
    });
    lines.push(`| ${t.name} | ${t.wanted} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** What the peer row's note says of the peer: its req/s, p99, CPU and database CPU per request, failures. */
function peerSide(note = '') {
  const m = /(\d+) req\/s, p99 (\d+) ms, (\d+) µs CPU\/req(?: \+ db (\d+))?, (\d+) non-2xx/.exec(note);
  return m ? { rps: Number(m[1]), p99: Number(m[2]), cpu: Number(m[3]), db: m[4], failed: Number(m[5]) } : undefined;
}

function peer(files: ResultsFile[]): string {
  const runs = [...latest(files, 'peer').values()];
  if (runs.length === 0) return 'No peer run in bench/results.';
  const label = /against (.+?) \(bench\/peer\)/.exec(runs[0]?.setup ?? '')?.[1] ?? 'the peer';
  const lines: string[] = [];
  for (const f of runs) {
    lines.push(machineLine(f), '');
    lines.push(
      `| backend | operation | ours: req/s, p99 ms | ${label}: req/s, p99 ms | × ${label}, median (min–max) | CPU µs/req: ours (theirs) | database CPU µs/req: ours (theirs) | failed: ours, theirs |`,
      '|---|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const r of f.rows) {
      const p = peerSide(r.note);
      const db = r.dbCpuUs ? `${num(r.dbCpuUs)} (${p?.db ? num(Number(p.db)) : '–'})` : '–';
      lines.push(
        `| ${r.backend} | ${r.scenario} | ${num(r.rps)}, ${r.p99} | ${p ? `${num(p.rps)}, ${p.p99}` : '–'} | ${ratioText(r)} | ${num(r.cpuUs ?? 0)} (${p ? num(p.cpu) : '–'}) | ${db} | ${r.non2xx}, ${p?.failed ?? '–'} |`,
      );
    }
    lines.push('');
  }
  return lines.join('\n').trimEnd();
}

/** Every generated section, by name, from the results files of `dir`. */
export function generateFigures(dir = RESULTS_DIR): Record<string, string> {
  const files = readResults(dir);
  return { figures: figures(files), targets: targets(files), peer: peer(files) };
}

/** `text` with each generated section replaced; throws when a marker is missing. */
export function applyFigures(text: string, sections: Record<string, string>): string {
  let out = text;
  for (const [name, body] of Object.entries(sections)) {
    const open = `<!-- generated:${name} -->`;
    const close = `<!-- /generated:${name} -->`;
    const re = new RegExp(`${open}[\\s\\S]*?${close}`);
    if (!re.test(out)) throw new Error(`${FILE}: no ${open} … ${close} markers`);
    out = out.replace(re, () => `${open}\n${body}\n${close}`);
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const f of superseded()) {
    rmSync(join(RESULTS_DIR, f));
    console.log(`bench/results/${f}: deleted (a later run of its kind, or a partial run; git keeps it)`);
  }
  const before = readFileSync(PERFORMANCE_FILE, 'utf8');
  const after = applyFigures(before, generateFigures());
  writeFileSync(PERFORMANCE_FILE, after);
  console.log(
    `${relative(process.cwd(), PERFORMANCE_FILE) || FILE}: ${before === after ? 'up to date' : 'figures rewritten'}`,
  );
}
