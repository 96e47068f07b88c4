// The dependency check of `npm test`: dependency-cruiser's rules (.dependency-cruiser.cjs), and no
// cycle between module folders (src/modules/<name>), which file-level cycle rules cannot see:
// events → webhooks → … → events is a cycle even when no single file imports itself back.
import { createRequire } from 'node:module';
import { cruise } from 'dependency-cruiser';

const require = createRequire(import.meta.url);
const config = require('../.dependency-cruiser.cjs');
const { output } = await cruise(['src'], { ...config.options, ruleSet: { forbidden: config.forbidden }, validate: true });

const problems = [];
for (const v of output.summary.violations) problems.push(`${v.rule.name}: ${v.from} → ${v.to}`);

const folderOf = (path) => /^src\/modules\/([^/]+)\//.exec(path)?.[1];
const edges = new Map();
for (const m of output.modules) {
  const from = folderOf(m.source);
  if (!from) continue;
  for (const d of m.dependencies) {
    const to = folderOf(d.resolved);
    if (!to || to === from) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    edges.get(from).set(to, `${m.source} → ${d.resolved}`);
  }
}
// Depth-first search for a back edge; reports each cycle with the imports that make it.
const state = new Map();
const stack = [];
const visit = (n) => {
  state.set(n, 'open');
  stack.push(n);
  for (const [to, via] of edges.get(n) ?? []) {
    if (state.get(to) === 'open') {
      const cycle = stack.slice(stack.indexOf(to));
      const hops = cycle.map((f, i) => edges.get(f).get(cycle[i + 1] ?? to));
      problems.push(`module cycle ${[...cycle, to].join(' → ')}:\n    ${hops.join('\n    ')}`);
    } else if (!state.has(to)) visit(to);
  }
  stack.pop();
  state.set(n, 'done');
};
for (const n of edges.keys()) if (!state.has(n)) visit(n);

if (problems.length > 0) {
  console.error(`dependency check failed:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`dependency check: ${output.modules.length} files, no forbidden import, no cycle between module folders`);
