// The dependency check of `npm test` (`npm run deps`; ARCHITECTURE.md, "The rules"). It reads every
// import of every file of the server (src/) and the console (console/src) with dependency-cruiser and
// checks, in this file, the rules below; test/architecture/deps.test.ts breaks each one on purpose.
//
// - layers: each file belongs to one layer, and imports only from its own layer or the ones below it;
// - placed: every file belongs to a layer (a new top-level file or folder must be given one here);
// - repository-only-from-its-module: a `*.repository.ts` is imported from its own module folder only
//   (one owner per table; other modules, http/, the CLI and the wiring ask the owning service);
// - console-imports-server-types-only: the console bundles no server code (`import type` only);
// - cli-loads-when-run: what src/cli/main.ts loads before a command runs (its static imports,
//   transitively) stays in src/cli/ and src/kernel/; settings, storage and services are imported by
//   the command when it runs (`await import(…)`), so `wsvc --help` loads none of them;
// - no-file-cycle: no import cycle between files;
// - no-room-cycle: no cycle between rooms (each module folder, each console feature, and each other
//   folder or top-level file), which file-level cycles cannot see: events → webhooks → … → events is a
//   cycle even when no single file imports itself back;
// - module-floors: module folders stand side by side, not in a tower: a module that imports no other module
//   is on floor 1, one that imports modules on floor n at most is on floor n + 1, and no module stands above
//   MAX_MODULE_FLOORS. A module reacts to another's changes by subscribing to what it emits (src/services.ts),
//   not by importing it.
//
// `node scripts/check-deps.mjs --graph` also prints which layers and rooms import which.
import { pathToFileURL } from 'node:url';
import { cruise } from 'dependency-cruiser';

/** The server's layers, bottom to top: a file imports only from its own layer or the ones below. */
export const SERVER_LAYERS = [
  { name: 'kernel', path: /^src\/kernel\// },
  { name: 'lib', path: /^src\/lib\// },
  { name: 'db', path: /^src\/db\// },
  { name: 'platform', path: /^src\/platform\// },
  { name: 'modules', path: /^src\/modules\// },
  { name: 'http', path: /^src\/http\// },
  { name: 'wiring', path: /^src\/(config|services|worker)\.ts$/ },
  { name: 'app', path: /^src\/app\.ts$/ },
  { name: 'entry', path: /^src\/(server\.ts$|cli\/)/ },
];

/** The console's layers, bottom to top. */
export const CONSOLE_LAYERS = [
  { name: 'assets', path: /^console\/src\/[^/]+\.(d\.ts|css)$/ },
  { name: 'api', path: /^console\/src\/api\// },
  { name: 'lib', path: /^console\/src\/lib\// },
  { name: 'ui', path: /^console\/src\/ui\// },
  { name: 'features', path: /^console\/src\/features\// },
  { name: 'app', path: /^console\/src\/(app|main)\.tsx$/ },
];

/** The highest floor a module folder may stand on (module-floors). */
export const MAX_MODULE_FLOORS = 3;

/** The room of a file: a module folder, a console feature, another folder, or a top-level file. */
export function roomOf(path) {
  const m =
    /^src\/(modules\/[^/]+)\//.exec(path) ??
    /^src\/([^/]+)\//.exec(path) ??
    /^src\/([^/]+)\.ts$/.exec(path) ??
    /^console\/src\/(features\/[^/]+)\//.exec(path) ??
    /^console\/src\/([^/]+)\//.exec(path) ??
    /^console\/src\/([^/.]+)[^/]*$/.exec(path);
  if (!m) return null;
  return path.startsWith('console/') ? `console/${m[1]}` : m[1];
}

const layerIndex = (layers, path) => layers.findIndex((l) => l.path.test(path));

/** Cycles among the nodes of `edges` (Map node → Map target → example), one per strongly connected component. */
function cycles(edges) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const found = [];
  let n = 0;
  const visit = (v) => {
    index.set(v, n);
    low.set(v, n++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** One path through a cycle's members, with the import that makes each hop. */
function describeCycle(members, edges) {
  const inCycle = new Set(members);
  const path = [members[0]];
  const seen = new Set(path);
  for (;;) {
    const from = path[path.length - 1];
    const next = [...(edges.get(from)?.keys() ?? [])].find((t) => inCycle.has(t) && (t === path[0] || !seen.has(t)));
    if (!next || next === path[0]) {
      path.push(path[0]);
      break;
    }
    path.push(next);
    seen.add(next);
  }
  const hops = path.slice(0, -1).map((f, i) => edges.get(f).get(path[i + 1]) ?? `${f} → ${path[i + 1]}`);
  const all = members.length > path.length - 1 ? ` (${members.length} in one knot: ${members.join(', ')})` : '';
  return `${path.join(' → ')}${all}\n      ${hops.join('\n      ')}`;
}

/** Checks one side (server or console); pushes problems, returns its graph text. */
function checkSide(label, modules, layers, problems) {
  const files = new Map();
  const roomEdges = new Map();
  const layerEdges = new Map();
  for (const m of modules) {
    const from = m.source;
    const fromLayer = layerIndex(layers, from);
    if (fromLayer < 0) problems.push(`placed: ${from} belongs to no ${label} layer (scripts/check-deps.mjs)`);
    const targets = new Map();
    files.set(from, targets);
    const room = roomOf(from);
    if (room && !roomEdges.has(room)) roomEdges.set(room, new Map());
    for (const d of m.dependencies) {
      const to = d.resolved;
      if (!to.startsWith(label === 'server' ? 'src/' : 'console/src/')) continue;
      targets.set(to, `${from} → ${to}`);
      const toLayer = layerIndex(layers, to);
      if (fromLayer >= 0 && toLayer > fromLayer) {
        problems.push(`layers: ${from} (${layers[fromLayer].name}) imports ${to} (${layers[toLayer].name}, above it)`);
      }
      if (fromLayer >= 0 && toLayer >= 0 && toLayer !== fromLayer) {
        const a = layers[fromLayer].name;
        if (!layerEdges.has(a)) layerEdges.set(a, new Set());
        layerEdges.get(a).add(layers[toLayer].name);
      }
      const toRoom = roomOf(to);
      if (room && toRoom && toRoom !== room && !roomEdges.get(room).has(toRoom)) {
        roomEdges.get(room).set(toRoom, `${from} → ${to}`);
      }
    }
  }
  for (const c of cycles(files)) problems.push(`no-file-cycle: ${describeCycle(c, files)}`);
  const roomCycles = cycles(roomEdges);
  for (const c of roomCycles) problems.push(`no-room-cycle (${label}): ${describeCycle(c, roomEdges)}`);
  const floorLines = label === 'server' && roomCycles.length === 0 ? moduleFloors(roomEdges, problems) : [];

  const width = Math.max(...layers.map((l) => l.name.length));
  const below = (name) =>
    layers.map((l) => l.name).filter((n) => layerEdges.get(name)?.has(n)).join(', ') || 'nothing below';
  // What each layer holds, read from the files themselves: its rooms (a folder, or a top-level file).
  const holds = (l) => {
    const own = [...files.keys()].filter((f) => l.path.test(f));
    const rooms = [...new Set(own.map((f) => roomOf(f) ?? f))];
    // A layer of module folders or console features: the folders. A folder of files: the files (a subfolder counted).
    const topLevel = own.every((f) => /^(src|console\/src)\/[^/]+$/.test(f));
    if (rooms.length > 1 || topLevel || /^(modules|console\/features)\//.test(rooms[0] ?? '')) {
      return rooms.map((r) => r.replace(/^(modules|console\/features)\//, '')).sort().join(', ');
    }
    const entries = new Map();
    for (const f of own) {
      const rest = f.replace(/^(src|console\/src)\/[^/]+\//, '').replace(/\.(tsx?|css)$/, '');
      const [head, ...tail] = rest.split('/');
      entries.set(tail.length > 0 ? `${head}/` : head, (entries.get(`${head}/`) ?? 0) + 1);
    }
    return [...entries].map(([e, n]) => (e.endsWith('/') ? `${e} (${n} files)` : e)).sort().join(', ');
  };
  const layerLines = layers.map((l) => `  ${l.name.padEnd(width)}  imports ${below(l.name)}\n  ${' '.repeat(width)}  holds ${holds(l)}`);
  const roomLines = [...roomEdges]
    .map(([r, tos]) => `  ${r} → ${[...tos.keys()].sort().join(', ') || '(none)'}`)
    .sort();
  const floors = floorLines.length > 0 ? `\nserver module floors (module-floors):\n${floorLines.join('\n')}` : '';
  return `${label} layers, bottom to top (a file imports its own layer or those below):\n${layerLines.join('\n')}${floors}\n${label} rooms:\n${roomLines.join('\n')}`;
}

/** The floor of each module folder (module-floors); pushes a problem for one above MAX_MODULE_FLOORS. */
function moduleFloors(roomEdges, problems) {
  const modules = [...roomEdges.keys()].filter((r) => r.startsWith('modules/'));
  const floor = new Map();
  const via = new Map();
  const floorOf = (r) => {
    if (floor.has(r)) return floor.get(r);
    let f = 1;
    for (const t of roomEdges.get(r)?.keys() ?? []) {
      if (!t.startsWith('modules/')) continue;
      if (floorOf(t) + 1 > f) {
        f = floor.get(t) + 1;
        via.set(r, t);
      }
    }
    floor.set(r, f);
    return f;
  };
  for (const r of modules) floorOf(r);
  for (const r of modules) {
    if (floor.get(r) <= MAX_MODULE_FLOORS) continue;
    const chain = [r];
    while (via.has(chain.at(-1))) chain.push(via.get(chain.at(-1)));
    problems.push(
      `module-floors: ${r} stands on floor ${floor.get(r)} (at most ${MAX_MODULE_FLOORS}): ${chain.join(' → ')} (subscribe to what a module emits instead of importing it, src/services.ts)`,
    );
  }
  const top = Math.max(0, ...floor.values());
  return Array.from({ length: top }, (_, i) => {
    const on = modules.filter((r) => floor.get(r) === i + 1).map((r) => r.slice('modules/'.length));
    return `  ${i + 1}  ${on.sort().join(', ')}`;
  });
}

/** Runs every rule over the tree at `baseDir` (the repository root by default). */
export async function checkDeps(baseDir = process.cwd()) {
  const common = {
    baseDir,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.tsx?$' },
    tsPreCompilationDeps: true,
  };
  const problems = [];
  const server = (await cruise(['src'], { ...common, enhancedResolveOptions: { extensions: ['.ts', '.js'] } })).output
    .modules;
  const consoleModules = (
    await cruise(['console/src'], { ...common, enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js'] } })
  ).output.modules;

  for (const m of server) {
    const own = /^src\/modules\/([^/]+)\//.exec(m.source)?.[1];
    for (const d of m.dependencies) {
      const owner = /^src\/modules\/([^/]+)\/[^/]+\.repository\.ts$/.exec(d.resolved)?.[1];
      if (owner && owner !== own) {
        problems.push(
          `repository-only-from-its-module: ${m.source} → ${d.resolved} (ask the ${owner} module's service, injected in src/services.ts)`,
        );
      }
    }
  }
  // What `wsvc` loads before a command runs: src/cli/main.ts and its static value imports, transitively.
  const byPath = new Map(server.map((m) => [m.source, m]));
  const seen = new Set(['src/cli/main.ts']);
  const queue = byPath.has('src/cli/main.ts') ? ['src/cli/main.ts'] : [];
  while (queue.length > 0) {
    const m = byPath.get(queue.shift());
    for (const d of m?.dependencies ?? []) {
      const lazy = d.dependencyTypes.includes('type-only') || d.dependencyTypes.includes('dynamic-import');
      if (lazy || !d.resolved.startsWith('src/') || seen.has(d.resolved)) continue;
      if (!/^src\/(cli|kernel)\//.test(d.resolved)) {
        problems.push(`cli-loads-when-run: ${m.source} → ${d.resolved} (import it inside the action: await import(…))`);
        continue;
      }
      seen.add(d.resolved);
      queue.push(d.resolved);
    }
  }
  const consoleOwn = consoleModules.filter((m) => m.source.startsWith('console/src/'));
  for (const m of consoleOwn) {
    for (const d of m.dependencies) {
      if (d.resolved.startsWith('src/') && !d.dependencyTypes.includes('type-only')) {
        problems.push(`console-imports-server-types-only: ${m.source} → ${d.resolved} (use \`import type\`)`);
      }
    }
  }
  const graph = [
    checkSide(
      'server',
      server.filter((m) => m.source.startsWith('src/')),
      SERVER_LAYERS,
      problems,
    ),
    checkSide('console', consoleOwn, CONSOLE_LAYERS, problems),
  ].join('\n');
  return { problems, graph, counts: { server: server.filter((m) => m.source.startsWith('src/')).length, console: consoleOwn.length } };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { problems, graph, counts } = await checkDeps();
  if (process.argv.includes('--graph')) console.log(graph);
  if (problems.length > 0) {
    console.error(`dependency check failed (${problems.length}):\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(
    `dependency check: ${counts.server} server files in ${SERVER_LAYERS.length} layers and ${counts.console} console files in ${CONSOLE_LAYERS.length}; every import points down or sideways, no repository imported from outside its module, no cycle between files or rooms`,
  );
}
