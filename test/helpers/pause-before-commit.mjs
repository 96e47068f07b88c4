// A test-only preload for a `wsvc` child process: holds the write transaction that created the resource
// named WSVC_TEST_PAUSE_BEFORE_COMMIT open at its COMMIT, forever, so a test can kill the process
// between the change and its commit. Nothing in src/ knows of it: a test loads it into the child with
// `NODE_OPTIONS=--import <this file>` (pauseBeforeCommitEnv in processes.ts), and it wraps the
// database drivers, not the service.
//
// At the COMMIT of every write transaction it asks, in that transaction (which sees its own
// uncommitted rows), for the resource of that name; when there is one, it writes one line to stdout
// {"msg":"paused before commit","resource":"res_…","audit":[{"seq":…,"action":…}]}, the audit entries the
// transaction wrote for it (numbered on SQLite; pending, seq null, on PostgreSQL, numbered after the
// commit), and never commits:
// - SQLite (better-sqlite3, synchronous): the COMMIT statement blocks the whole process (Atomics.wait);
// - PostgreSQL (pg): the COMMIT query never settles; the connection stays open, in the transaction. A COMMIT
//   sent as the last statement of a string with the transaction's deferred statements (src/db/pg-driver.ts,
//   PgConnection) is split: the statements before it run, then the COMMIT is held the same way.
import { writeSync } from 'node:fs';
import { createRequire } from 'node:module';

const marker = process.env.WSVC_TEST_PAUSE_BEFORE_COMMIT;
const require = createRequire(import.meta.url);
const isCommit = (text) => typeof text === 'string' && text.trim().toLowerCase() === 'commit';
/** `…;\ncommit`: a string of statements that ends with the COMMIT (PostgreSQL's deferred writes). */
const endsWithCommit = (text) => typeof text === 'string' && /;\s*commit\s*$/i.test(text);
const signal = (resource, audit) =>
  writeSync(1, `${JSON.stringify({ msg: 'paused before commit', resource, audit })}\n`);

if (marker) {
  const Database = require('better-sqlite3');
  const prepare = Database.prototype.prepare;
  Database.prototype.prepare = function (source, ...rest) {
    const stmt = prepare.call(this, source, ...rest);
    if (!isCommit(source)) return stmt;
    const run = stmt.run.bind(stmt);
    stmt.run = (...args) => {
      const row = prepare.call(this, 'select id from resources where name = ?').get(marker);
      if (row) {
        const audit = prepare
          .call(
            this,
            'select seq, action from audit_entries where target_id = ? union all select null, action from audit_pending where target_id = ?',
          )
          .all(row.id, row.id)
          .map((e) => ({ seq: e.seq === null ? null : Number(e.seq), action: e.action }));
        signal(row.id, audit);
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
      }
      return run(...args);
    };
    return stmt;
  };

  const pg = require('pg');
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    const text = typeof config === 'string' ? config : config?.text;
    if (endsWithCommit(text) && typeof rest.at(-1) !== 'function') {
      return (async () => {
        await query.call(this, text.slice(0, text.lastIndexOf(';')));
        return this.query('commit');
      })();
    }
    if (!isCommit(text) || typeof rest.at(-1) === 'function') return query.call(this, config, ...rest);
    return (async () => {
      const found = await query.call(this, 'select id from resources where name = $1', [marker]);
      const row = found.rows[0];
      if (row) {
        const entries = await query.call(
          this,
          'select seq, action from audit_entries where target_id = $1 union all select null, action from audit_pending where target_id = $1',
          [row.id],
        );
        signal(
          row.id,
          entries.rows.map((e) => ({ seq: e.seq === null ? null : Number(e.seq), action: e.action })),
        );
        return new Promise(() => {});
      }
      return query.call(this, config, ...rest);
    })();
  };
}
