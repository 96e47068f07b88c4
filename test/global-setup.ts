import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

/**
 * Tests that start `bin/wsvc.js` or `npm start` run what users run: the compiled dist/. So the
 * suite compiles src/ first (`npm run build:server`, incremental: a few seconds when nothing
 * changed), with the same Node that runs the tests.
 */
export default function setup(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
