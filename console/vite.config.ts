import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The console is served by `wsvc serve` at /console (src/http/console-static.ts); no request
// leaves the machine, so there is no CDN, no web font and no inline script (the CSP forbids it).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  publicDir: false,
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: true,
    rolldownOptions: {
      // React Query marks its modules "use client" for server-component bundlers; meaningless here.
      onLog(level, log, handler) {
        if (log.code === 'MODULE_LEVEL_DIRECTIVE') return;
        handler(level, log);
      },
    },
  },
  server: { proxy: { '/console/api': 'http://127.0.0.1:8080' } },
});
