import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const BUILT = Symbol.for('wsvc.distBuilt');

/**
 * Tests that start `bin/wsvc.js` or `npm start` run what users run: the compiled dist/. So the
 * suite compiles src/ first (`npm run build:server`, incremental: a few seconds when nothing
 * changed), with the same Node that runs the tests, and the console (dist/console). Once per run:
 * each project inherits this.
 */
export default function setup(): void {
  // Vitest loads this module afresh for the root and for each project: remember it on globalThis.
  const g = globalThis as { [BUILT]?: boolean };
  if (g[BUILT]) return;
  g[BUILT] = true;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  // The browser journeys serve dist/console: build the console too (a few seconds). As `npm run
  // build:console` does, for production: Vitest sets NODE_ENV=test, with which Vite would bundle
  // React's development build (half again as large), and the bundle test would measure that.
  const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js');
  execFileSync(process.execPath, [vite, 'build', '--config', 'console/vite.config.ts', '--logLevel', 'warn'], {
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'production' },
  });
}
