import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const BUILT = Symbol.for('wsvc.distBuilt');

/**
 * Tests that start `bin/wsvc.js` or `npm start` run what users run: the compiled dist/. So the
 * suite compiles src/ first (`npm run build:server`, incremental: a few seconds when nothing
 * changed), with the same Node that runs the tests. Once per run: each project inherits this.
 */
export default function setup(): void {
  // Vitest loads this module afresh for the root and for each project: remember it on globalThis.
  const g = globalThis as { [BUILT]?: boolean };
  if (g[BUILT]) return;
  g[BUILT] = true;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
