import { vi } from 'vitest';

// A worker's files share its process (vitest.config.ts). Before each file, the project's own modules
// (src/ and test/) are evaluated afresh, so no file sees another's module state (such as the id
// generator's last time, which a file on a shifted clock moves); the packages of node_modules, which
// Node itself loads, are kept: most of what a file imports.
vi.resetModules();
