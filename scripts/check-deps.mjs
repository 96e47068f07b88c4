// The dependency check of `npm test` (ARCHITECTURE.md, "Dependency rules"), over the server (src/) and
// the console (console/src):
// - dependency-cruiser's rules for src/ (.dependency-cruiser.cjs): layers, no file cycle, and a
//   `*.repository.ts` imported from its own module folder only (one owner per table);
// - the console: no file cycle, and `console-imports-server-types-only` (it bundles no server code);
// - no cycle between folders, which file-level cycle rules cannot see (events → webhooks → … →
//   events is a cycle even when no single file imports itself back): module folders
//   (src/modules/<name>) on the server; api/, lib/, ui/ and each features/<name> in the console.
// `node scripts/check-deps.mjs --graph` also prints the folder graph.
import { createRequire } from 'node:module';
import { cruise } from 'dependency-cruiser';

const require = createRequire(import.meta.url);
const config = require('../.dependency-cruiser.cjs');
const problems = [];
const graphs = [];

const server = (
  await cruise(['src'], { ...config.options, ruleSet: { forbidden: config.forbidden }, validate: true })
).output;

const consoleRules = [
  {
    name: 'no-circular-files',
    severity: 'error',
    from: { path: '^console/src/' },
    to: { circular: true },
  },
  {
    name: 'console-imports-server-types-only',
    severity: 'error',
    comment: 'The console bundles no server code: from src/ it imports types only (`import type`).',
    from: { path: '^console/src/' },
    to: { path: '^src/', dependencyTypesNot: ['type-only'] },
  },
];
const consoleGraph = (
  await cruise(['console/src'], {
    ...config.options,
    exclude: { path: '\\.test\\.tsx?$' },
    tsConfig: { fileName: 'console/tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js'] },
    ruleSet: { forbidden: consoleRules },
    validate: true,
  })
).output;

for (const out of [server, consoleGraph]) {
  for (const v of out.summary.violations) problems.push(`${v.rule.name}: ${v.from} → ${v.to}`);
}

/** Reports every cycle between the folders `folderOf` names (null: not in any), with the imports that make it. */
function folderCycles(label, modules, folderOf) {
  const edges = new Map();
  for (const m of modules) {
    const from = folderOf(m.source);
    if (!from) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    for (const d of m.dependencies) {
      const to = folderOf(d.resolved);
      if (!to || to === from) continue;
      edges.get(from).set(to, `${m.source} → ${d.resolved}`);
    }
  }
  graphs.push(`${label}:\n${[...edges].map(([f, tos]) => `  ${f} → ${[...tos.keys()].sort().join(', ') || '(none)'}`).sort().join('\n')}`);
  // Depth-first search for a back edge.
  const state = new Map();
  const stack = [];
  const visit = (n) => {
    state.set(n, 'open');
    stack.push(n);
    for (const [to] of edges.get(n) ?? []) {
      if (state.get(to) === 'open') {
        const cycle = stack.slice(stack.indexOf(to));
        const hops = cycle.map((f, i) => edges.get(f).get(cycle[i + 1] ?? to));
        problems.push(`${label} folder cycle ${[...cycle, to].join(' → ')}:\n    ${hops.join('\n    ')}`);
      } else if (!state.has(to)) visit(to);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of edges.keys()) if (!state.has(n)) visit(n);
}

folderCycles('server modules', server.modules, (path) => /^src\/modules\/([^/]+)\//.exec(path)?.[1]);
folderCycles('console', consoleGraph.modules, (path) => {
  const m = /^console\/src\/(features\/[^/]+|[^/]+)\//.exec(path);
  return m?.[1] ?? null;
});

if (process.argv.includes('--graph')) console.log(graphs.join('\n'));
if (problems.length > 0) {
  console.error(`dependency check failed:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(
  `dependency check: ${server.modules.length} server and ${consoleGraph.modules.filter((m) => m.source.startsWith('console/src/')).length} console files, no forbidden import, no cycle between folders`,
);
