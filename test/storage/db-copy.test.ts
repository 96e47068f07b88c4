import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { copySqliteToPostgres } from '../../src/db/copy.js';
import { openStorage } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { json, newWorkspace, startTestApp } from '../helpers/app.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: postgres — copies a SQLite database into PostgreSQL
// Tier: full — PostgreSQL/Redis only, and `npm test` runs on SQLite
// docs/operations.md `wsvc db copy --from sqlite:<path> --to postgres://…` (docs/operations.md).
const pgUrl = process.env.TEST_DATABASE_URL;
const run = promisify(execFile);

describe.skipIf(!pgUrl)('copying a SQLite database into PostgreSQL (docs/operations.md)', () => {
  const path = join(tmpdir(), `wsvc-copy-${randomBytes(6).toString('hex')}.db`);
  afterAll(() => Promise.all(['', '-wal', '-shm'].map((s) => rm(path + s, { force: true }))));

  // Two databases migrated and a third refused: 10 s alone, 30 s on a loaded 2-core machine.
  it('copies every table so the API answers the same, and refuses a non-empty target', {
    timeout: 90_000,
  }, async () => {
    const sqliteStorage = openStorage({ url: `sqlite:${path}` });
    await migrateToLatest(sqliteStorage.db, sqliteStorage.dialect);
    const src = await startTestApp({ storage: { ...sqliteStorage, url: `sqlite:${path}` }, redisUrl: null });
    const ws = await newWorkspace(src);
    await ws.member('viewer', ['resources:read']);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await src.request({
        method: 'POST',
        url: '/v1/resources',
        key: ws.live,
        headers: { 'idempotency-key': `k${i}` },
        body: { name: `R${i}`, type: 'premium', metadata: { i: String(i), note: 'é ✓' } },
      });
      expect(res.statusCode, res.body).toBe(201);
      ids.push(json(res).data.id);
    }
    const before = json(await src.request({ method: 'GET', url: '/v1/resources?limit=100', key: ws.live }));
    await src.close();

    const target = await openTestStorage();
    try {
      const result = await copySqliteToPostgres(sqliteStorage, target, { batchRows: 3 });
      const counts = Object.fromEntries(result.tables.map((t) => [t.table, t.rows]));
      expect(counts).toMatchObject({ workspaces: 1, users: 2, api_keys: 4, resources: 7, idempotency_keys: 7 });
      expect(result.tables.map((t) => t.table).indexOf('workspaces')).toBeLessThan(
        result.tables.map((t) => t.table).indexOf('users'),
      );
      for (const { table, rows } of result.tables) {
        const n = await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(target.db);
        expect(Number(n.rows[0]?.n)).toBe(rows);
      }
      // The same key works against PostgreSQL and sees the same data, metadata as jsonb.
      const dst = await startTestApp({ storage: target, redisUrl: null });
      const after = json(await dst.request({ method: 'GET', url: '/v1/resources?limit=100', key: ws.live }));
      expect(after).toEqual(before);
      const kind = await sql<{ t: string }>`select jsonb_typeof(metadata) as t from resources limit 1`.execute(
        target.db,
      );
      expect(kind.rows[0]?.t).toBe('object');
      await dst.close();

      // A second copy into the now non-empty target is refused and changes nothing.
      await expect(copySqliteToPostgres(sqliteStorage, target)).rejects.toThrow(/target is not empty/);
      const cli = await run(
        process.execPath,
        [
          'bin/wsvc.js',
          'db',
          'copy',
          '--from',
          `sqlite:${path}`,
          '--to',
          `${pgUrl}?options=${encodeURIComponent(`-c search_path=${target.schema}`)}`,
        ],
        { env: { ...process.env, LOG_LEVEL: 'silent' } },
      ).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect(cli.code).toBe(1);
      expect(cli.stderr).toMatch(/target is not empty/);

      // Into an empty database through the command: a summary line, and no progress line when
      // stderr is not a terminal (here a pipe).
      const fresh = await openTestStorage({ migrate: false });
      try {
        const ok = await run(
          process.execPath,
          [
            'bin/wsvc.js',
            'db',
            'copy',
            '--from',
            `sqlite:${path}`,
            '--to',
            `${pgUrl}?options=${encodeURIComponent(`-c search_path=${fresh.schema}`)}`,
          ],
          { env: { ...process.env, LOG_LEVEL: 'silent' } },
        );
        expect(ok.stderr).toBe('');
        expect(ok.stdout).toContain('resources: 7 rows');
        expect(ok.stdout).toMatch(/\ncopied \d+ rows in \d+ tables in \d+s \(\d+ rows\/s\)\n$/);
        const copied = await sql<{ n: string }>`select count(*) as n from resources`.execute(fresh.db);
        expect(Number(copied.rows[0]?.n)).toBe(7);
      } finally {
        await fresh.close();
      }
      const n = await sql<{ n: string }>`select count(*) as n from resources`.execute(target.db);
      expect(Number(n.rows[0]?.n)).toBe(7);
    } finally {
      await sqliteStorage.close();
      await target.close();
    }
  });
});
