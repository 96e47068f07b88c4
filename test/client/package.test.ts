import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSchema, SCHEMA_FILE } from '../../scripts/client-schema.js';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';

// Backends: sqlite — the package's build, types and tarball, and a program run against the server
// Tier: full — `npm pack`, an install and a strict type-check of a fresh project
// The published shape of packages/client (docs/client.md): its types are what the served document
// generates today, `npm pack` holds the build and nothing else, and a fresh project outside the
// repository installs the tarball, type-checks strictly and runs a program against the server.
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PKG = join(ROOT, 'packages', 'client');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

let t: TestApp;
let baseUrl: string;
let tmp: string;
let tarball: string;
let dist: string;
beforeAll(async () => {
  t = await startTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  tmp = await mkdtemp(join(tmpdir(), 'wsvc-client-'));
  // The steps of the package's `build` script, into a copy of the package in this run's own folder:
  // the sqlite and postgres projects may run this file at the same time.
  const pkg = join(tmp, 'pkg');
  dist = join(pkg, 'dist');
  await run(process.execPath, [TSC, '-p', join(PKG, 'tsconfig.json'), '--outDir', dist]);
  await copyFile(join(PKG, 'src', 'schema.d.ts'), join(dist, 'schema.d.ts'));
  for (const f of ['package.json', 'README.md']) await copyFile(join(PKG, f), join(pkg, f));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: pkg });
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  tarball = join(tmp, (packed as { filename: string }).filename);
}, 120_000);
afterAll(async () => {
  await t.close();
  await rm(tmp, { recursive: true, force: true });
});

describe('the client package', () => {
  it('has the types the served OpenAPI document generates (npm run client:schema after a schema change)', async () => {
    const served = JSON.parse((await t.request({ method: 'GET', url: '/v1/openapi.json' })).body);
    expect(await readFile(SCHEMA_FILE, 'utf8')).toBe(await generateSchema(served));
  });

  it('packs the build, the types and the README only, with openapi-fetch as its one dependency', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    expect(stdout.trim().split('\n').sort()).toEqual(
      [
        'package/README.md',
        'package/dist/index.d.ts',
        'package/dist/index.js',
        'package/dist/schema.d.ts',
        'package/dist/webhooks.d.ts',
        'package/dist/webhooks.js',
        'package/package.json',
      ].sort(),
    );
    const manifest = JSON.parse(await readFile(join(PKG, 'package.json'), 'utf8'));
    expect(manifest.version).toMatch(/^0\./);
    expect(Object.keys(manifest.dependencies)).toEqual(['openapi-fetch']);
    expect(Object.keys(manifest.exports)).toEqual(['.', './webhooks', './package.json']);
  });

  it('imports nothing Node-only on the request path (browsers, workers, edge runtimes)', async () => {
    for (const file of (await readdir(dist)).filter((f) => f.endsWith('.js'))) {
      const text = await readFile(join(dist, file), 'utf8');
      const imports = [...text.matchAll(/(?:from\s+|import\s*\(\s*|require\s*\(\s*)['"]([^'"]+)['"]/g)].map(
        (m) => m[1],
      );
      expect(
        imports.filter((i) => i !== 'openapi-fetch' && !i?.startsWith('./')),
        file,
      ).toEqual([]);
      expect(text, file).not.toMatch(/\bprocess\.|\bBuffer\b/);
    }
    const fetchDist = await readFile(join(ROOT, 'node_modules', 'openapi-fetch', 'dist', 'index.mjs'), 'utf8');
    expect(fetchDist).not.toMatch(/from\s+['"]node:|require\(/);
  });

  it('installs into a fresh project, type-checks strictly and runs a program against the server', async () => {
    const ws = await newWorkspace(t);
    const app = join(tmp, 'app');
    await run('mkdir', ['-p', app]);
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: app });
    await writeFile(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noUncheckedIndexedAccess: true,
          exactOptionalPropertyTypes: true,
          lib: ['ES2022', 'DOM'],
          types: [],
          outDir: 'out',
        },
        include: ['main.ts'],
      }),
    );
    await writeFile(
      join(app, 'main.ts'),
      `import { ApiError, WorkspaceClient, type Schemas } from '@workspace-service/client';
import { verifyWebhook } from '@workspace-service/client/webhooks';
declare const process: { argv: string[] };
const [key, baseUrl] = process.argv.slice(2) as [string, string];
const client = new WorkspaceClient({ key, baseUrl });
const made: Schemas['Resource'] = (await client.POST('/v1/resources', { body: { name: 'From a fresh project', type: 'standard' } })).data;
const names: string[] = [];
for await (const r of client.resources.list({ limit: 1 })) names.push(r.name);
let code = '';
try {
  await client.GET('/v1/resources/{id}', { params: { path: { id: 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R' } } });
} catch (e) {
  if (e instanceof ApiError) code = e.code;
}
console.log(JSON.stringify({ id: made.id, names, code, verify: typeof verifyWebhook }));
`,
    );
    await run(process.execPath, [TSC, '-p', '.'], { cwd: app });
    const { stdout } = await run(process.execPath, ['out/main.js', ws.live, baseUrl], { cwd: app });
    expect(JSON.parse(stdout)).toMatchObject({
      names: ['From a fresh project'],
      code: 'not_found',
      verify: 'function',
    });
    // The TypeScript examples of the docs compile against the installed package, strictly.
    const docs = ['README.md', 'docs/using.md', 'docs/client.md', 'packages/client/README.md'];
    const snippets: string[] = [];
    for (const doc of docs) {
      const text = await readFile(join(ROOT, doc), 'utf8');
      for (const m of text.matchAll(/```ts\n([\s\S]*?)```/g)) snippets.push(`${m[1]}\nexport {};\n`);
    }
    expect(snippets.length).toBeGreaterThanOrEqual(4);
    for (const [i, code] of snippets.entries()) await writeFile(join(app, `doc${i}.ts`), code);
    await writeFile(
      join(app, 'tsconfig.docs.json'),
      JSON.stringify({
        extends: './tsconfig.json',
        compilerOptions: { noEmit: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')] },
        include: snippets.map((_, i) => `doc${i}.ts`),
      }),
    );
    const docsCheck = await run(process.execPath, [TSC, '-p', 'tsconfig.docs.json'], { cwd: app }).catch(
      (e: { stdout: string }) => e,
    );
    expect((docsCheck as { stdout: string }).stdout).toBe('');
    // A wrong body is a type error in the fresh project too.
    await writeFile(
      join(app, 'main.ts'),
      `${await readFile(join(app, 'main.ts'), 'utf8')}\nawait client.POST('/v1/resources', { body: { name: 1, type: 'standard' } });\n`,
    );
    const failed = await run(process.execPath, [TSC, '-p', '.'], { cwd: app }).catch((e: { stdout: string }) => e);
    expect((failed as { stdout: string }).stdout).toMatch(/main\.ts.*TS2322/);
    // An npm install and three strict tsc runs: a CI run under a load average of 20 took past 120 s once.
  }, 240_000);
});
