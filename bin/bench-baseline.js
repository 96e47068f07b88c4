#!/usr/bin/env node
// The bench baseline (docs/performance.md#method): a bare Fastify route in its own process, serving from memory the JSON
// a GET /v1/resources/{id} returns (BENCH_BODY). Plain JavaScript, like the compiled server: no loader.
import Fastify from 'fastify';

const body = process.env.BENCH_BODY ?? '{}';
const app = Fastify({ logger: false });
app.get('/baseline', async (_req, reply) => reply.type('application/json').send(body));
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.stdout.write(`READY ${app.server.address().port}\n`);
