// Benchmark (docs/performance.md#method): baseline: a bare Fastify route serving a stored resource's JSON from memory (no auth, no storage).
import Fastify from 'fastify';

const body = process.env.BENCH_BODY ?? '{}';
const app = Fastify({ logger: false });
app.get('/baseline', async (_req, reply) => reply.type('application/json').send(body));
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.stdout.write(`READY ${(app.server.address() as { port: number }).port}\n`);
