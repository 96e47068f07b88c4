import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { errorBody } from './errors.js';

/** The package root (where package.json is), from this file's place in src/ or a compiled dist/. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/** Where `npm run build:console` writes the browser app. */
export const CONSOLE_DIST = resolve(packageRoot(), 'dist/console');

/**
 * Serves the built console at /console with the single-page fallback (every /console/… path that
 * is not a file is the app's index.html); `/` redirects there. Hashed assets are cached for a year;
 * pages are `no-store` (the set-password page's URL carries its token), as are console API answers.
 */
export async function installConsoleStatic(app: FastifyInstance, root = CONSOLE_DIST): Promise<void> {
  app.get('/', { schema: { hide: true } }, (_req, reply) => reply.redirect('/console/', 302));
  // An unknown console API path is not the app's page: installEarlyAnswers answers it (404, or 405 for a
  // known path), as it answers requests no route matched; this handler is never reached.
  app.get('/console/api/*', { schema: { hide: true }, config: { unmatched: true } }, (req, reply) =>
    reply.code(404).send(errorBody(req, 'not_found', `No route GET ${req.url.split('?')[0]}.`)),
  );
  const built = existsSync(join(root, 'index.html'));
  if (!built) {
    const notBuilt = (
      req: Parameters<typeof errorBody>[0],
      reply: { code(n: number): { send(b: unknown): unknown } },
    ) =>
      reply
        .code(503)
        .send(
          errorBody(
            req,
            'console_not_built',
            'The console is not built: run `npm run build:console` (or `npm install`).',
          ),
        );
    app.get('/console', { schema: { hide: true } }, (req, reply) => notBuilt(req, reply));
    app.get('/console/*', { schema: { hide: true } }, (req, reply) => notBuilt(req, reply));
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: '/console/',
    wildcard: false,
    index: false,
    schemaHide: true,
    // Without this, send's own `public, max-age=0` replaces the header set here.
    cacheControl: false,
    setHeaders(res, path) {
      res.setHeader('cache-control', path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-store');
    },
  });
  const index = (_req: unknown, reply: { header(k: string, v: string): { sendFile(f: string): unknown } }) =>
    reply.header('cache-control', 'no-store').sendFile('index.html');
  app.get('/console', { schema: { hide: true } }, (req, reply) => index(req, reply));
  app.get('/console/*', { schema: { hide: true } }, (req, reply) => index(req, reply));
}
