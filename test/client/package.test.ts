import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSchema, SCHEMA_FILE } from '../../scripts/client-schema.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';

// Backends: sqlite — the package's build, types and tarball, and a program run against the server
// Tier: full — `npm pack`, an install and a strict type-check of a fresh project
// The published shape of packages/client (docs/client.md): its types are what the served document
// generates today, `npm pack` holds the build and nothing else, and a fresh project outside the
// repository installs the tarball, type-checks strictly and runs a program against the server; the
// README's steps, from `npm init -y`, compile and run its example.
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
    // The typed receiver of docs/snippets, which switches on every event type (a missing case fails to compile).
    snippets.push(await readFile(join(ROOT, 'docs/snippets/receiver-typed.ts'), 'utf8'));
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

  it("the README's steps, from `npm init -y`, compile and run its example against the server", async () => {
    // README.md "The TypeScript client": its first ```sh block builds and packs the client (beforeAll did the
    // same into this run's folder), the second sets up a project, the ```ts block is `index.ts`, the third
    // compiles and runs it. Run as written, with what would be downloaded taken from here: the tarball
    // built above, and this repository's own typescript and @types/node (linked, as `npm install
    // --save-dev` would place them) instead of the registry's.
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## The TypeScript client'), readme.indexOf('## Where to read next'));
    const [, setup, compile] = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    const example = /`index\.ts`:\n\n```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(setup && compile && example).toBeTruthy();
    const ws = await newWorkspace(t);
    const app = join(tmp, 'readme');
    await mkdir(app);
    const commands = (block: string) =>
      block
        .split('\n')
        .map((l) => l.replace(/(^|\s)#.*$/, '').trim())
        .filter(Boolean)
        .flatMap((l) => l.split(' && '));
    const sh = (cmd: string, env: NodeJS.ProcessEnv = {}) => {
      const [file, ...args] = cmd.split(' ') as [string, ...string[]];
      return run(file, args, { cwd: app, env: { ...process.env, ...env } }).catch(
        (e: { stdout: string; stderr: string }) => {
          throw new Error(`${cmd}: ${e.stdout}${e.stderr}`);
        },
      );
    };
    for (const cmd of commands(setup as string)) {
      if (cmd === 'npm install --save-dev typescript @types/node') {
        await mkdir(join(app, 'node_modules', '@types'), { recursive: true });
        await mkdir(join(app, 'node_modules', '.bin'), { recursive: true });
        await symlink(join(ROOT, 'node_modules', 'typescript'), join(app, 'node_modules', 'typescript'));
        await symlink(join(ROOT, 'node_modules', '@types', 'node'), join(app, 'node_modules', '@types', 'node'));
        await symlink('../typescript/bin/tsc', join(app, 'node_modules', '.bin', 'tsc'));
      } else if (/^npm install \S+\.tgz$/.test(cmd)) {
        await sh(`npm install --no-audit --no-fund --prefer-offline ${tarball}`);
      } else if (['npm init -y', 'npm pkg set type=module', 'npx tsc --init --types node'].includes(cmd)) {
        await sh(cmd);
      } else {
        throw new Error(`README.md: a step this test does not know how to run: ${cmd}`);
      }
    }
    await writeFile(join(app, 'index.ts'), (example as string).replace("'http://127.0.0.1:8080'", `'${baseUrl}'`));
    let printed = '';
    for (const cmd of commands(compile as string)) {
      const withKey = /^KEY=\S+ node index\.js$/.test(cmd);
      if (cmd === 'npx tsc') await sh(cmd);
      else if (withKey) printed = (await sh('node index.js', { KEY: ws.live })).stdout;
      else throw new Error(`README.md: a step this test does not know how to run: ${cmd}`);
    }
    expect(printed).toMatch(/^res_[0-9A-HJKMNP-TV-Z]{26}\n$/);
    const listed = await t.request({ method: 'GET', url: `/v1/resources/${printed.trim()}`, key: ws.live });
    expect(json(listed).data.name).toBe('Q3 report');
  }, 240_000);
});
