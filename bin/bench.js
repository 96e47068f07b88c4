#!/usr/bin/env node
// `npm run bench`: the benchmark harness (bench/main.ts), loaded through tsx like bin/wsvc.js.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../bench/main.ts');
await main(process.argv);
