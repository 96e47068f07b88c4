#!/usr/bin/env node
// The `wsvc` command: runs the compiled JavaScript in dist/ (`npm run build`, which `npm install`
// runs through the `prepare` script). Development runs the sources with `npx tsx src/cli/main.ts`.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('error: dist/ is missing: run `npm run build` (or `npm install`) first\n');
  process.exit(1);
}
const { main } = await import(entry.href);
await main(process.argv);
