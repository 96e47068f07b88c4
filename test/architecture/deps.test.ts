// Backends: sqlite — reads source files only, no storage.
// Tier: quick
// `npm run deps` (scripts/check-deps.mjs) fails on a deliberate violation of each of its rules: each
// case writes a small tree (src/ and console/src) into a temporary folder, with one import that breaks
// one rule, and runs the same check over it. A clean tree passes, so a case fails only for its import.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain JavaScript script without types.
import { checkDeps, SERVER_LAYERS } from '../../scripts/check-deps.mjs';

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** One file in each layer and room, importing only downwards: the check passes on it. */
const CLEAN: Record<string, string> = {
  'src/kernel/roles.ts': `export const ROLES = ['admin'] as const;`,
  'src/lib/paging.ts': `import { ROLES } from '../kernel/roles.js';\nexport const p = ROLES;`,
  'src/db/types.ts': `import type { ROLES } from '../kernel/roles.js';\nexport type T = typeof ROLES;`,
  'src/platform/unit-of-work.ts': `import type { T } from '../db/types.js';\nexport type Unit = T;`,
  'src/modules/a/a.repository.ts': `import type { T } from '../../db/types.js';\nimport type { Unit } from '../../platform/unit-of-work.js';\nexport const repo = {} as [T, Unit];`,
  'src/modules/a/a.service.ts': `import { repo } from './a.repository.js';\nexport const a = repo;`,
  'src/modules/b/b.service.ts': `import { a } from '../a/a.service.js';\nexport const b = a;`,
  'src/http/auth.ts': `import { b } from '../modules/b/b.service.js';\nexport const auth = b;`,
  'src/config.ts': `import { p } from './lib/paging.js';\nexport const config = p;`,
  'src/services.ts': `import { b } from './modules/b/b.service.js';\nimport { config } from './config.js';\nexport const s = [b, config];`,
  'src/app.ts': `import { auth } from './http/auth.js';\nimport { s } from './services.js';\nexport const app = [auth, s];`,
  'src/server.ts': `import { app } from './app.js';\nexport const server = app;`,
  'src/cli/main.ts': `export const main = async () => (await import('../server.js')).server;`,
  'console/src/api/types.ts': `import type { ROLES } from '../../../src/kernel/roles.js';\nexport type R = typeof ROLES;`,
  'console/src/lib/queries.ts': `import type { R } from '../api/types';\nexport const q = {} as R;`,
  'console/src/ui/list.tsx': `import { q } from '../lib/queries';\nexport const list = q;`,
  'console/src/features/keys/keys-page.tsx': `import { list } from '../../ui/list';\nexport const keys = list;`,
  'console/src/features/usage/usage-page.tsx': `import { keys } from '../keys/keys-page';\nexport const usage = keys;`,
  'console/src/app.tsx': `import { usage } from './features/usage/usage-page';\nexport const app = usage;`,
};

async function problemsWith(extra: Record<string, string>): Promise<string[]> {
  const root = mkdtempSync(join(tmpdir(), 'wsvc-deps-'));
  roots.push(root);
  for (const [path, text] of Object.entries({ ...CLEAN, ...extra })) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), `${text}\n`);
  }
  const { problems } = (await checkDeps(root)) as { problems: string[] };
  return problems;
}

describe('npm run deps', () => {
  it('passes a tree whose imports all point down', async () => {
    expect(await problemsWith({})).toEqual([]);
  });

  // One case per boundary between neighbouring layers: the lower one imports the one above it.
  const upward: [string, string, string][] = [
    ['src/kernel/x.ts', `import { p } from '../lib/paging.js';`, 'kernel'],
    ['src/lib/x.ts', `import type { T } from '../db/types.js';`, 'lib'],
    ['src/db/x.ts', `import type { Unit } from '../platform/unit-of-work.js';`, 'db'],
    ['src/platform/x.ts', `import { a } from '../modules/a/a.service.js';`, 'platform'],
    ['src/modules/a/x.ts', `import { auth } from '../../http/auth.js';`, 'modules'],
    ['src/http/x.ts', `import { s } from '../services.js';`, 'http'],
    ['src/worker.ts', `import { app } from './app.js';`, 'wiring'],
  ];
  // (An upward import usually closes a room cycle too, reported beside it.)
  it.each(upward)('layers: %s may not import the layer above it', async (file, text, layer) => {
    const problems = await problemsWith({ [file]: `${text}\nexport const x = 1;` });
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^layers: ${file} \\(${layer}\\) imports `)));
  });

  it('layers: the app may not import the server', async () => {
    const problems = await problemsWith({
      'src/app.ts': `import { server } from './server.js';\nexport const app = server;`,
    });
    expect(problems).toContainEqual(
      expect.stringMatching(/^layers: src\/app\.ts \(app\) imports src\/server\.ts \(entry/),
    );
  });

  it('names every server layer in a case above', () => {
    expect(SERVER_LAYERS.map((l: { name: string }) => l.name)).toEqual([
      'kernel',
      'lib',
      'db',
      'platform',
      'modules',
      'http',
      'wiring',
      'app',
      'entry',
    ]);
  });

  it('placed: a file outside every layer', async () => {
    const problems = await problemsWith({ 'src/stray.ts': 'export const stray = 1;' });
    expect(problems).toEqual([expect.stringMatching(/^placed: src\/stray\.ts belongs to no server layer/)]);
  });

  it("repository-only-from-its-module: another module's repository", async () => {
    const problems = await problemsWith({
      'src/modules/b/b.service.ts': `import { repo } from '../a/a.repository.js';\nexport const b = repo;`,
    });
    expect(problems).toEqual([
      expect.stringMatching(/^repository-only-from-its-module: src\/modules\/b\/b\.service\.ts → /),
    ]);
  });

  it('no-file-cycle: two files importing each other', async () => {
    const problems = await problemsWith({
      'src/modules/a/x.ts': `import { y } from './y.js';\nexport const x = () => y;`,
      'src/modules/a/y.ts': `import { x } from './x.js';\nexport const y = () => x;`,
    });
    expect(problems).toEqual([
      expect.stringMatching(/^no-file-cycle: src\/modules\/a\/x\.ts → src\/modules\/a\/y\.ts → /),
    ]);
  });

  it('no-room-cycle: two modules importing each other through different files', async () => {
    const problems = await problemsWith({
      'src/modules/a/late.ts': `import { b } from '../b/b.service.js';\nexport const late = b;`,
    });
    expect(problems).toEqual([
      expect.stringMatching(/^no-room-cycle \(server\): modules\/a → modules\/b → modules\/a/),
    ]);
  });

  it('module-floors: a module importing a tower of three others stands on floor 4', async () => {
    const problems = await problemsWith({
      'src/modules/c/c.service.ts': `import { b } from '../b/b.service.js';\nexport const c = b;`,
      'src/modules/d/d.service.ts': `import { c } from '../c/c.service.js';\nexport const d = c;`,
    });
    expect(problems).toContainEqual(
      expect.stringMatching(
        /^module-floors: modules\/d stands on floor 4 \(at most 3\): modules\/d → modules\/c → modules\/b → modules\/a/,
      ),
    );
    // Three floors pass.
    expect(
      await problemsWith({
        'src/modules/c/c.service.ts': `import { b } from '../b/b.service.js';\nexport const c = b;`,
      }),
    ).toEqual([]);
  });

  it('no-room-cycle: two console features importing each other', async () => {
    const problems = await problemsWith({
      'console/src/features/keys/chart.tsx': `import { usage } from '../usage/usage-page';\nexport const chart = usage;`,
    });
    expect(problems).toEqual([
      expect.stringMatching(/^no-room-cycle \(console\): console\/features\/keys → console\/features\/usage → /),
    ]);
  });

  const consoleUpward: [string, string, string][] = [
    ['console/src/api/x.ts', `import { q } from '../lib/queries';`, 'api'],
    ['console/src/lib/x.ts', `import { list } from '../ui/list';`, 'lib'],
    ['console/src/ui/x.tsx', `import { keys } from '../features/keys/keys-page';`, 'ui'],
    ['console/src/features/keys/x.tsx', `import { app } from '../../app';`, 'features'],
  ];
  it.each(consoleUpward)('console layers: %s may not import the layer above it', async (file, text, layer) => {
    const problems = await problemsWith({ [file]: `${text}\nexport const x = 1;` });
    expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^layers: ${file} \\(${layer}\\) imports `)));
  });

  it('cli-loads-when-run: a command file importing the services statically', async () => {
    const problems = await problemsWith({
      'src/cli/main.ts': `import { admin } from './admin.commands.js';\nimport { serve } from './serve.commands.js';\nexport const main = [admin, serve];`,
      'src/cli/serve.commands.ts': `import { s } from '../services.js';\nexport const serve = s;`,
      'src/cli/admin.commands.ts': `export const admin = async () => (await import('../services.js')).s;`,
    });
    expect(problems).toEqual([
      expect.stringMatching(/^cli-loads-when-run: src\/cli\/serve\.commands\.ts → src\/services\.ts/),
    ]);
  });

  it('console-imports-server-types-only: a value import from src/', async () => {
    const problems = await problemsWith({
      'console/src/lib/roles.ts': `import { ROLES } from '../../../src/kernel/roles.js';\nexport const r = ROLES;`,
    });
    expect(problems).toEqual([
      expect.stringMatching(/^console-imports-server-types-only: console\/src\/lib\/roles\.ts → /),
    ]);
  });
});
