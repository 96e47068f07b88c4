#!/usr/bin/env node
// The `wsvc` command. Sources are TypeScript, loaded through tsx, so `npm install` is all the
// build there is.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
