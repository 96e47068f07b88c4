// Benchmark (docs/performance.md#method): what a bench run reports: the machine it ran on, and per row the median and spread of the
// interleaved rounds (baseline, candidate, baseline, candidate, …) with CPU time per request.
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import type { Backend, Measured } from './harness.js';

/** A row whose ratio spread ((max − min) / median) exceeds this is flagged as noisy. */
export const SPREAD_LIMIT = 0.15;

/** One interleaved round: the baseline measured right before the candidate, with the same connections. */
export interface Round {
  base: Measured;
  cand: Measured;
  /** cand.rps / base.rps */
  ratio: number;
}

export interface Row {
  backend: Backend | 'none';
  scenario: string;
  /** Median req/s of the candidate over the rounds. */
  rps: number;
  p50: number;
  /** Median of the rounds' p99, and the worst one. */
  p99: number;
  p99Max?: number;
  /** Failed requests (non-2xx, errors, timeouts) summed over every round. */
  non2xx: number;
  rssMb: number;
  /** Median of the per-round ratios to the baseline; undefined for rows not measured against it. */
  ratio?: number;
  ratioMin?: number;
  ratioMax?: number;
  /** (max − min) / median of the per-round ratios. */
  spread?: number;
  noisy?: boolean;
  /** Server CPU µs per request (median over the rounds) and the baseline's in the same rounds. */
  cpuUs?: number;
  baseCpuUs?: number;
  /** PostgreSQL and Redis CPU µs per request (median over the rounds); PostgreSQL rows only. */
  dbCpuUs?: number;
  baseRps?: number;
  rounds?: Round[];
  /** Rows measured once, not against the baseline (fan-out, direct SQL timings). */
  note?: string;
}

export interface Machine {
  cores: number;
  cpuModel: string;
  /** 1, 5 and 15 minute load averages just before the run, and right after it. */
  loadBefore: number[];
  loadAfter?: number[];
  node: string;
  commit: string;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return 0;
  return n % 2 ? (s[(n - 1) / 2] as number) : ((s[n / 2 - 1] as number) + (s[n / 2] as number)) / 2;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** Summarises the interleaved rounds of one measurement into a row. */
export function summarise(backend: Backend, scenario: string, rounds: Round[], rssMb: number): Row {
  const ratios = rounds.map((r) => r.ratio);
  const ratio = median(ratios);
  const spread = ratio ? (Math.max(...ratios) - Math.min(...ratios)) / ratio : 0;
  const cpu = rounds.map((r) => r.cand.cpuUs ?? 0);
  return {
    backend,
    scenario,
    rps: Math.round(median(rounds.map((r) => r.cand.rps))),
    p50: median(rounds.map((r) => r.cand.p50)),
    p99: median(rounds.map((r) => r.cand.p99)),
    p99Max: Math.max(...rounds.map((r) => r.cand.p99)),
    non2xx: rounds.reduce((a, r) => a + r.cand.non2xx, 0),
    rssMb,
    ratio: round2(ratio),
    ratioMin: round2(Math.min(...ratios)),
    ratioMax: round2(Math.max(...ratios)),
    spread: round2(spread),
    noisy: spread > SPREAD_LIMIT,
    cpuUs: Math.round(median(cpu)),
    baseCpuUs: Math.round(median(rounds.map((r) => r.base.cpuUs ?? 0))),
    dbCpuUs: backend === 'postgres' ? Math.round(median(rounds.map((r) => r.cand.dbCpuUs ?? 0))) : undefined,
    baseRps: Math.round(median(rounds.map((r) => r.base.rps))),
    rounds,
  };
}

/** The baseline's own row: every baseline round of the run (their spread is the machine's noise). */
export function baselineRow(rounds: Measured[], rssMb: number): Row {
  const rps = rounds.map((r) => r.rps);
  const m = median(rps);
  const spread = m ? (Math.max(...rps) - Math.min(...rps)) / m : 0;
  return {
    backend: 'none',
    scenario: 'baseline (bare Fastify)',
    rps: Math.round(m),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    non2xx: rounds.reduce((a, r) => a + r.non2xx, 0),
    rssMb,
    ratio: 1,
    spread: round2(spread),
    noisy: false,
    cpuUs: Math.round(median(rounds.map((r) => r.cpuUs ?? 0))),
    note: `${rounds.length} rounds, ${Math.min(...rps)}–${Math.max(...rps)} req/s`,
  };
}

export function machineInfo(root: string): Machine {
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  try {
    cpuModel = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpuModel;
  } catch {}
  let commit = 'unknown';
  try {
    commit = execSync('git rev-parse --short HEAD', { cwd: root, stdio: 'pipe' }).toString().trim();
    if (execSync('git status --porcelain -- src bench', { cwd: root, stdio: 'pipe' }).toString().trim()) {
      commit += '+dirty';
    }
  } catch {}
  return {
    cores: cpus().length,
    cpuModel,
    loadBefore: loadavg().map(round2),
    node: process.version,
    commit,
  };
}

export function machineLine(m: Machine): string {
  const after = m.loadAfter ? `, after ${m.loadAfter.join(' ')}` : '';
  return (
    `${m.cores} cores (${m.cpuModel}), load average before the run ${m.loadBefore.join(' ')}${after}; ` +
    `Node ${m.node}; commit ${m.commit}`
  );
}

const ratioCell = (r: Row) => {
  if (r.ratio === undefined) return '–';
  if (r.ratioMin === undefined) return String(r.ratio);
  return `${r.ratio} (${r.ratioMin}–${r.ratioMax})`;
};
const spreadCell = (r: Row) => {
  if (r.spread === undefined) return '–';
  const pct = `${Math.round(r.spread * 100)} %`;
  return r.noisy ? `**${pct} > ${Math.round(SPREAD_LIMIT * 100)} %**` : pct;
};

export function toMarkdown(rows: Row[], ratioLabel = '× baseline'): string {
  const head =
    `| backend | scenario | req/s | p50 ms | p99 ms | non-2xx | peak RSS MB | CPU µs/req (${ratioLabel === '× baseline' ? 'baseline' : 'reference'}) | ${ratioLabel}, median (min–max) | spread |\n` +
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|';
  return [
    head,
    ...rows.map((r) => {
      let cpu = r.cpuUs === undefined ? '–' : r.baseCpuUs ? `${r.cpuUs} (${r.baseCpuUs})` : String(r.cpuUs);
      if (r.dbCpuUs) cpu += ` + db ${r.dbCpuUs}`;
      const p99 = r.p99Max !== undefined && r.p99Max !== r.p99 ? `${r.p99} (max ${r.p99Max})` : String(r.p99);
      const name = r.note ? `${r.scenario} [${r.note}]` : r.scenario;
      return `| ${r.backend} | ${name} | ${r.rps} | ${r.p50} | ${p99} | ${r.non2xx} | ${r.rssMb || '–'} | ${cpu} | ${ratioCell(r)} | ${spreadCell(r)} |`;
    }),
  ].join('\n');
}
