// Backends: sqlite — no storage: a profile written by the test is summarised
// Tier: quick
// Benchmark (docs/performance.md#method): `--profile`'s summary leaves start-up out of every table, so a
// serializer compiled at start-up never reads as the cost of a request.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { summariseProfiles } from '../../bench/profile.js';

const dir = mkdtempSync(join(tmpdir(), 'wsvc-profile-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: 0 });
// (root) → avvio → compileSchemasForSerialization → addSchema (start-up);
// (root) → onRequest hook → handler → writev (a request); (root) → (idle).
const nodes = [
  { id: 1, callFrame: frame('(root)'), children: [2, 5, 8] },
  { id: 2, callFrame: frame('', 'file:///x/node_modules/avvio/index.js'), children: [3] },
  {
    id: 3,
    callFrame: frame('compileSchemasForSerialization', 'file:///x/node_modules/fastify/lib/validation.js'),
    children: [4],
  },
  { id: 4, callFrame: frame('addSchema', 'file:///x/node_modules/json-schema-ref-resolver/index.js') },
  { id: 5, callFrame: frame('', 'file:///x/dist/http/auth.js'), children: [6] },
  { id: 6, callFrame: frame('get', 'file:///x/dist/modules/resources/resources.service.js'), children: [7] },
  { id: 7, callFrame: frame('writev') },
  { id: 8, callFrame: frame('(idle)') },
];
// Hit counts as V8 writes them (every sample); the summary reads the samples.
const samples = [4, 4, 4, 4, 4, 4, 7, 7, 6, 8];
for (const n of nodes) Object.assign(n, { hitCount: samples.filter((s) => s === n.id).length });
writeFileSync(join(dir, 'CPU.test.cpuprofile'), JSON.stringify({ nodes, samples }));

describe('bench --profile summary', () => {
  const text = summariseProfiles(dir, 20);

  it('says how many samples were start-up and counts the rest', () => {
    expect(text).toContain('10 samples, 6 of them start-up (left out below); 75.0 % of the rest busy');
  });

  it('leaves start-up out of the self-time and inclusive tables', () => {
    expect(text).not.toContain('json-schema-ref-resolver');
    expect(text).not.toContain('addSchema');
    expect(text).not.toContain('compileSchemasForSerialization');
    // 2 of the 4 samples left: writev; 1: the service's own frame; 1 idle.
    expect(text).toMatch(/50\.0 % {2}writev \(native\):1/);
    expect(text).toMatch(/25\.0 % {2}get dist\/modules\/resources\/resources\.service\.js:1/);
  });

  it('splits the request samples by part', () => {
    expect(text).toContain("where a request's CPU goes (3 samples):");
    expect(text).toMatch(/66\.7 % {2}socket writes/);
    expect(text).toMatch(/33\.3 % {2}routes, services, repositories \(ours\)/);
  });
});

// docs/performance.md#profiles: a socket write or Node stream code
// called by pg or ioredis is that client's, and pg's own work is split by what it does.
describe('bench --profile summary: the database clients', () => {
  const clientDir = mkdtempSync(join(tmpdir(), 'wsvc-profile-test-'));
  afterAll(() => rmSync(clientDir, { recursive: true, force: true }));
  const pg = (name: string, file = 'node_modules/pg/lib/client.js') => frame(name, `file:///x/${file}`);
  // (root) → pg query → writev; (root) → ioredis write → node:net write; (root) → pg-protocol parse →
  // parseRow → timestamp parser; (root) → addFields; (root) → node:net onStreamRead (a read: Node's).
  const clientNodes = [
    { id: 1, callFrame: frame('(root)'), children: [2, 4, 6, 9, 10] },
    { id: 2, callFrame: pg('query'), children: [3] },
    { id: 3, callFrame: frame('writev') },
    { id: 4, callFrame: frame('write', 'file:///x/node_modules/ioredis/built/Redis.js'), children: [5] },
    { id: 5, callFrame: frame('writeGeneric', 'node:internal/stream_base_commons') },
    { id: 6, callFrame: pg('parse', 'node_modules/pg-protocol/dist/parser.js'), children: [7] },
    { id: 7, callFrame: pg('parseRow', 'node_modules/pg/lib/result.js'), children: [8] },
    { id: 8, callFrame: frame('isoTimestamp', 'file:///x/dist/db/postgres.js') },
    { id: 9, callFrame: pg('addFields', 'node_modules/pg/lib/result.js') },
    { id: 10, callFrame: frame('onStreamRead', 'node:internal/stream_base_commons') },
  ];
  const clientSamples = [3, 3, 5, 8, 8, 8, 9, 10];
  for (const n of clientNodes) Object.assign(n, { hitCount: clientSamples.filter((s) => s === n.id).length });
  writeFileSync(join(clientDir, 'CPU.test.cpuprofile'), JSON.stringify({ nodes: clientNodes, samples: clientSamples }));
  const text = summariseProfiles(clientDir, 20);

  it("gives each client its socket writes and its own work by part; a socket read stays Node's", () => {
    expect(text).toMatch(/25\.0 % {2}PostgreSQL client \(pg\): its socket writes \(writev\)/);
    expect(text).toMatch(/12\.5 % {2}Redis client \(ioredis\): Node streams it calls/);
    expect(text).toMatch(/37\.5 % {2}PostgreSQL client \(pg\): rows \(objects, type parsers: timestamps, JSON\)/);
    expect(text).toMatch(/12\.5 % {2}PostgreSQL client \(pg\): RowDescription/);
    expect(text).toMatch(/12\.5 % {2}Node\.js HTTP, streams, promises/);
    expect(text).not.toMatch(/socket writes \(writev: the kernel/);
  });
});
