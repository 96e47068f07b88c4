// The facts of ARCHITECTURE.md and docs/code-facts.md, generated from the code (`npm run docs:facts` rewrites
// them; test/architecture/facts.test.ts fails when the committed text differs). Each fact sits between
// `<!-- generated:<name> -->` and `<!-- /generated:<name> -->`; the prose around them is written by hand.
//
// ARCHITECTURE.md:
// - layers:     each server layer with the folders and files it holds and the layers it imports, and the
//               module folders' floors, as `npm run deps` computes them (scripts/check-deps.mjs);
// - tables:     each table, the migration that creates it, the files that write it and the other files that read it;
// - principals: the principal kinds (src/kernel/principal.ts) and the system actors the code names;
// - personal-data: every column holding a person's data and its erasure rule (src/platform/personal-data.ts).
// docs/code-facts.md:
// - rooms:      which room (a module folder, another folder, a top-level file, a console folder) imports which;
// - migrations: the migrations a fresh database applies, in order, and the tables each creates or alters;
// - routes:     every route of the live app (src/app.ts) with the credential it takes.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RouteOptions } from 'fastify';
// @ts-expect-error: a plain JavaScript script without types.
import { checkDeps } from './check-deps.mjs';

const ROOT = join(import.meta.dirname, '..');
/** Which file holds which generated sections. */
export const FACT_FILES: Record<string, string[]> = {
  'ARCHITECTURE.md': ['layers', 'tables', 'principals', 'personal-data'],
  'docs/code-facts.md': ['rooms', 'migrations', 'routes'],
  'docs/api.md': ['event-reference'],
};

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (/\.ts$/.test(e.name) && !/\.test(-d)?\.ts$/.test(e.name)) out.push(p);
  }
  return out.sort();
}
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');
const list = (xs: Iterable<string>) => [...xs].map((x) => `\`${x}\``).join(', ') || '—';

async function graphParts(): Promise<{ layers: string; rooms: string }> {
  const { graph } = (await checkDeps(ROOT)) as { graph: string };
  const lines = graph.split('\n');
  const layersText: string[] = [];
  const roomsText: string[] = [];
  let into = layersText;
  for (const line of lines) {
    if (/^(server|console) layers/.test(line) || /^server module floors/.test(line)) into = layersText;
    if (/^(server|console) rooms/.test(line)) into = roomsText;
    // The console's layers belong with its rooms (the console has no floors).
    if (/^console layers/.test(line)) into = roomsText;
    into.push(line);
  }
  return { layers: ['```', ...layersText, '```'].join('\n'), rooms: ['```', ...roomsText, '```'].join('\n') };
}

/** Migration name → tables it creates and tables it alters. */
function migrationTables(): { name: string; creates: string[]; alters: string[] }[] {
  const order = [...read('src/db/migrate.ts').matchAll(/^ {2}'(\d{3}-[a-z-]+)': \w+,$/gm)].map((m) => m[1] ?? '');
  return order.map((name) => {
    const text = read(`src/db/migrations/${name}.ts`);
    // A table built under a temporary name and renamed (SQLite's way to change constraints) counts as altered.
    const renamed = new Set([...text.matchAll(/alterTable\(\s*'(\w+)'\s*\)\s*\.renameTo\(/g)].map((m) => m[1] ?? ''));
    const creates = [...new Set([...text.matchAll(/createTable\(\s*'(\w+)'/g)].map((m) => m[1] ?? ''))].filter(
      (t) => !renamed.has(t),
    );
    const alters = [
      ...new Set(
        [...text.matchAll(/(?:alterTable|dropTable)\(\s*'(\w+)'/g)]
          .map((m) => m[1] ?? '')
          .filter((t) => !renamed.has(t)),
      ),
    ].filter((t) => !creates.includes(t));
    return { name, creates, alters };
  });
}

function migrations(): string {
  const rows = migrationTables().map((m, i) => `| ${i + 1} | \`${m.name}\` | ${list(m.creates)} | ${list(m.alters)} |`);
  return [
    `A fresh database applies ${rows.length} migrations (\`src/db/migrate.ts\`, in this order):`,
    '',
    '| # | Migration | Creates | Alters |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function tables(): string {
  const created = new Map<string, string>();
  for (const m of migrationTables()) for (const t of m.creates) if (!created.has(t)) created.set(t, m.name);
  const writers = new Map<string, Set<string>>();
  const readers = new Map<string, Set<string>>();
  const add = (map: Map<string, Set<string>>, t: string, f: string) => {
    if (!map.has(t)) map.set(t, new Set());
    map.get(t)?.add(f);
  };
  for (const f of filesUnder('src').filter((f) => !f.startsWith('src/db/migrations/'))) {
    const text = read(f);
    const short = f.replace(/^src\/(modules\/)?/, '');
    for (const m of text.matchAll(/\b(?:insertInto|updateTable|deleteFrom)\(\s*'(\w+)/g))
      add(writers, m[1] ?? '', short);
    for (const m of text.matchAll(/\b(?:selectFrom|innerJoin|leftJoin)\(\s*'(\w+)/g)) add(readers, m[1] ?? '', short);
  }
  const rows = [...created].map(([t, migration]) => {
    const w = writers.get(t) ?? new Set();
    const r = [...(readers.get(t) ?? [])].filter((f) => !w.has(f));
    return `| \`${t}\` | \`${migration}\` | ${list(w)} | ${list(r)} |`;
  });
  return [
    'Written by: the files whose queries insert, update or delete the table (Kysely `insertInto`, `updateTable`,',
    '`deleteFrom` with the table named). Also read by: other files that select from or join it.',
    '',
    '| Table | Created in | Written by | Also read by |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function principals(): string {
  const text = read('src/kernel/principal.ts');
  const kinds = [
    ...text.matchAll(/\/\*\*\s*([^*]+?)\s*\*\/\s*export interface (\w+) extends PrincipalBase \{\s*kind: '(\w+)';/g),
  ].map((m) => `| \`${m[3]}\` | \`${m[2]}\` | ${(m[1] ?? '').replace(/\s+/g, ' ')} |`);
  const names = text.match(/export type SystemActorName = ([^;]+);/)?.[1] ?? '?';
  const used = new Map<string, Set<string>>();
  for (const f of filesUnder('src')) {
    // systemActor('…'), and the jobs' doors in the wiring: scheduler('<id>') is the actor scheduler:<id>.
    const text = read(f);
    const named = [
      ...[...text.matchAll(/systemActor\(\s*'([^']+)'/g)].map((m) => m[1] ?? ''),
      ...[...text.matchAll(/\bscheduler\(\s*'([^']+)'/g)].map((m) => `scheduler:${m[1]}`),
    ];
    for (const name of named) {
      if (!used.has(name)) used.set(name, new Set());
      used.get(name)?.add(f.replace(/^src\//, ''));
    }
  }
  const actors = [...used]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([n, files]) => `| \`${n}\` | ${list([...files].sort())} |`);
  return [
    'Principal kinds (`Principal` in `src/kernel/principal.ts`):',
    '',
    '| kind | type | who |',
    '|---|---|---|',
    ...kinds,
    '',
    `System actors (\`SystemActorName\` = ${names.replace(/\|/g, '\\|')}), as the code names them:`,
    '',
    '| actor | named in |',
    '|---|---|',
    ...actors,
  ].join('\n');
}

async function routes(): Promise<string> {
  const { buildApp } = await import('../src/app.js');
  const { loadConfig } = await import('../src/config.js');
  const { openStorage } = await import('../src/db/database.js');
  // Every optional route on (metrics), no log, a database that is never queried.
  const config = loadConfig(
    {},
    {
      LOG_LEVEL: 'silent',
      DATABASE_URL: 'sqlite::memory:',
      METRICS_TOKEN: 'architecture-facts-only',
      USAGE_METERING: 'off',
    },
  );
  const storage = openStorage({ url: config.DATABASE_URL });
  const seen: { method: string; url: string; config: Record<string, unknown>; hide: boolean }[] = [];
  const app = await buildApp({
    config,
    storage,
    onRoute: (r: RouteOptions) => {
      for (const method of Array.isArray(r.method) ? r.method : [r.method]) {
        seen.push({
          method,
          url: r.url,
          config: (r.config ?? {}) as Record<string, unknown>,
          hide: Boolean((r.schema as { hide?: boolean } | undefined)?.hide),
        });
      }
    },
  });
  await app.ready();
  await app.close();
  await storage.close();

  const auth = (r: (typeof seen)[number]) => {
    if (r.config.scope) return `API key, scope \`${r.config.scope}\``;
    if (r.config.console === 'public') return 'none (console sign-in steps)';
    if (r.config.console === 'session')
      return r.config.enrol ? 'console session (also one that must first add a second factor)' : 'console session';
    if (r.config.console === 'actor') return 'console session in a workspace (`X-Workspace-Id`, `X-Env`)';
    if (r.url === '/metrics') return '`METRICS_TOKEN`';
    return 'none';
  };
  // The console's copy of /v1, the API explorer's files and the console's built files are summed up below the table.
  const mirror = (r: (typeof seen)[number]) => r.url.startsWith('/console/api/v1/');
  const files = (r: (typeof seen)[number]) =>
    r.url.startsWith('/docs/') ||
    (r.url.startsWith('/console/') && !r.url.startsWith('/console/api/') && r.url !== '/console/*');
  const shown = seen.filter((r) => r.method !== 'HEAD' && !r.config.unmatched);
  const rows = shown.filter((r) => !mirror(r) && !files(r)).map((r) => `| ${r.method} | \`${r.url}\` | ${auth(r)} |`);
  const mirrored = shown.filter(mirror).length;
  return [
    '| Method | Path | Credential |',
    '|---|---|---|',
    ...[...new Set(rows)],
    '',
    `Besides these, the ${mirrored} \`/v1\` routes are registered again under \`/console/api/v1\` (hidden from the`,
    'OpenAPI document), where a console session in a workspace takes the place of the API key (same scopes); the',
    'API explorer serves its files under `/docs/`, and the console its built files under `/console/`.',
  ].join('\n');
}

/** A schema's type in a word or two: `string`, `integer`, `"manual" | "failing"`, `string[]`, `{a, b}`, `… | null`. */
function typeOf(schema: Record<string, unknown>): string {
  if ('const' in schema) return JSON.stringify(schema.const);
  if (schema.$ref) return `\`${String(schema.$ref)}\` object`;
  const any = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined;
  if (any) return any.map(typeOf).join(' \\| ');
  if (schema.type === 'array') return `${typeOf(schema.items as Record<string, unknown>)}[]`;
  if (schema.type === 'object' && schema.properties) {
    return `{${Object.keys(schema.properties as object).join(', ')}}`;
  }
  if (schema.type === 'object') return 'object';
  return String(schema.type ?? 'any');
}

/** The `data` fields of an event type, one per line: name, type, and what it says. */
function dataFields(schema: Record<string, unknown>, prefix = ''): string[] {
  const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(props).flatMap(([name, sub]) => {
    const opt = required.has(name) ? '' : ' (optional)';
    const about = sub.description ? `: ${String(sub.description).replace(/\|/g, '\\|')}` : '';
    const line = `\`${prefix}${name}\` ${typeOf(sub)}${opt}${about}`;
    const nested = sub.type === 'object' && sub.properties ? dataFields(sub, `${prefix}${name}.`) : [];
    return [line, ...nested];
  });
}

/** docs/api.md's event reference: every type of the catalogue and its `data`, from the schemas. */
async function eventReference(): Promise<string> {
  const { ALL_EVENT_TYPES } = await import('../src/kernel/event-types.js');
  const { EVENT_DATA } = await import('../src/modules/events/events.schemas.js');
  const rows = ALL_EVENT_TYPES.map((type) => {
    const schema = EVENT_DATA[type] as unknown as Record<string, unknown>;
    const about = schema.description ? `${String(schema.description)} ` : '';
    return `| \`${type}\` | ${about}${dataFields(schema).join('<br>')} |`;
  });
  return ['| Type | `data` |', '|---|---|', ...rows].join('\n');
}

/** Each column of the personal-data registry with what erasing a person does to it. */
async function personalData(): Promise<string> {
  const { PERSONAL_DATA } = await import('../src/platform/personal-data.js');
  const rule = (e: (typeof PERSONAL_DATA)[number]['erasure']): string => {
    if (e.rule === 'not-personal') return `not personal: ${e.reason}`;
    if (e.rule === 'commitment') return 'commitment (the chain keeps a salted hash; value and salt erased)';
    return `${e.rule} (found by ${e.find})`;
  };
  const rows = PERSONAL_DATA.map((p) => `| \`${p.table}\` | \`${p.column}\` | ${p.holds} | ${rule(p.erasure)} |`);
  return [
    "Columns holding a person's data and what `wsvc users erase` does to each (`src/platform/personal-data.ts`;",
    '`test/architecture/personal-data.test.ts` fails on a column that looks personal without a rule):',
    '',
    '| Table | Column | Holds | Erasure |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** Every generated section, by name. */
export async function generateFacts(): Promise<Record<string, string>> {
  const graph = await graphParts();
  return {
    layers: graph.layers,
    rooms: graph.rooms,
    tables: tables(),
    migrations: migrations(),
    principals: principals(),
    'personal-data': await personalData(),
    routes: await routes(),
    'event-reference': await eventReference(),
  };
}

/** `text` (of `file`) with each of its generated sections replaced by `facts`; throws when a marker is missing. */
export function applyFacts(file: string, text: string, facts: Record<string, string>): string {
  let out = text;
  for (const name of FACT_FILES[file] ?? []) {
    const open = `<!-- generated:${name} -->`;
    const close = `<!-- /generated:${name} -->`;
    const re = new RegExp(`${open}[\\s\\S]*?${close}`);
    if (!re.test(out)) throw new Error(`${file}: no ${open} … ${close} markers`);
    out = out.replace(re, () => `${open}\n${facts[name]}\n${close}`);
  }
  return out;
}

/** The path of a file of FACT_FILES. */
export const factFile = (file: string) => join(ROOT, file);

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const facts = await generateFacts();
  for (const file of Object.keys(FACT_FILES)) {
    const before = readFileSync(factFile(file), 'utf8');
    const after = applyFacts(file, before, facts);
    writeFileSync(factFile(file), after);
    console.log(
      `${relative(process.cwd(), factFile(file)) || file}: ${before === after ? 'up to date' : 'facts rewritten'}`,
    );
  }
}
