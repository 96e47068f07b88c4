#!/usr/bin/env node
// Child process for the bench baseline (bench/baseline.ts), loaded through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../bench/baseline.ts');
