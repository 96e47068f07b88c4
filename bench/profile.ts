// Benchmark (docs/performance.md#method): a plain-text summary of `node --cpu-prof` profiles (self time by function and by package), so
// the evidence behind each optimisation can be pasted into docs/performance.md.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

/** Inclusive samples per function (each sample counted once per function on its stack). */
function inclusive(nodes: ProfileNode[], samples: number[], keyOf: (n: ProfileNode) => string): Map<string, number> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const out = new Map<string, number>();
  for (const leaf of samples) {
    const seen = new Set<string>();
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id);
      if (node) seen.add(keyOf(node));
    }
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
  const own = /\/(src|bench)\/(.*)$/.exec(url);
  return own ? `${own[1]}/${own[2]}` : url;
}

function pct(n: number, total: number): string {
  return `${((n / total) * 100).toFixed(1)} %`;
}

/** Summarises every .cpuprofile in `dir`, one section per file. */
export function summariseProfiles(dir: string, top = 20): string {
  const out: string[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const prof = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
    const byFn = new Map<string, number>();
    const byBucket = new Map<string, number>();
    let total = 0;
    for (const n of prof.nodes) {
      const hits = n.hitCount ?? 0;
      if (!hits) continue;
      total += hits;
      const { functionName, url, lineNumber } = n.callFrame;
      const fn = `${functionName || '(anonymous)'} ${bucketOf(url, functionName)}:${lineNumber + 1}`;
      byFn.set(fn, (byFn.get(fn) ?? 0) + hits);
      const b = bucketOf(url, functionName);
      byBucket.set(b, (byBucket.get(b) ?? 0) + hits);
    }
    const busy = total - (byBucket.get('(idle)') ?? 0);
    const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
    out.push(`### ${file}: ${total} samples, ${pct(busy, total)} busy`);
    out.push('self time by package/file:');
    for (const [k, v] of sorted(byBucket)) out.push(`  ${pct(v, total).padStart(7)}  ${k}`);
    out.push('self time by function:');
    for (const [k, v] of sorted(byFn)) out.push(`  ${pct(v, total).padStart(7)}  ${k}`);
    const keyOf = (n: ProfileNode) =>
      `${n.callFrame.functionName || '(anonymous)'} ${bucketOf(n.callFrame.url, n.callFrame.functionName)}:${n.callFrame.lineNumber + 1}`;
    const incl = inclusive(prof.nodes, prof.samples, keyOf);
    out.push('inclusive time, this service and its hooks (src/):');
    const own = [...incl].filter(([k]) => k.includes(' src/')).sort((a, b) => b[1] - a[1]);
    for (const [k, v] of own.slice(0, top)) out.push(`  ${pct(v, total).padStart(7)}  ${k}`);
  }
  return out.join('\n');
}
