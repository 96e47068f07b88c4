import { createHash, randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { newId } from '../../kernel/ids.js';
import { canonicalJson } from '../../lib/canonical-json.js';

const BATCH = 1_000;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

type Row = Record<string, unknown> & { id: string; seq: number | string; changes: string; hash: string };

const PERSONAL = ['actor_name', 'changes', 'ip', 'user_agent'] as const;
const PLAIN = ['action', 'actor_id', 'actor_type', 'actor_user_id', 'env', 'id', 'request_id', 'target_id'] as const;

/** The first form's hash: over every column but the hash, `changes` as JSON (the chain before this migration). */
function oldHash(prev: string, r: Row): string {
  const { hash: _h, personal_salt: _s, commitments: _c, ...rest } = r;
  return sha256(prev + canonicalJson({ ...rest, seq: Number(r.seq), changes: JSON.parse(r.changes) as unknown }));
}

/** The second form (docs/api.md#audit-log): the personal fields replaced by their salted commitments. */
function secondForm(prev: string, r: Row): { salt: string; commitments: string; hash: string } {
  const salt = randomBytes(16).toString('hex');
  const value = (f: (typeof PERSONAL)[number]) =>
    f === 'changes' ? canonicalJson(JSON.parse(r.changes) as unknown) : (r[f] as string | null);
  const c = Object.fromEntries(PERSONAL.map((f) => [f, value(f) === null ? null : sha256(salt + value(f))]));
  const commitments = canonicalJson(c);
  const plain = Object.fromEntries([...PLAIN, 'target_type', 'time', 'workspace_id'].map((k) => [k, r[k] ?? null]));
  const canonical = canonicalJson({ ...plain, seq: Number(r.seq), commitments: c, v: 2 });
  return { salt, commitments, hash: sha256(prev + canonical) };
}

/**
 * Personal data in the audit log becomes erasable (docs/data-lifecycle.md#erasing-a-person): each entry gets a
 * salt and the salted commitments of its personal fields (actor_name, changes, ip, user_agent), which the chain
 * hashes instead of the values. Every workspace's existing chain is rewritten in that form from its anchor, then
 * re-anchored once by an `audit.chain_migrated` entry (by `cli`) whose changes hold the old head's hash and
 * whether the old chain verified up to it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('audit_entries').addColumn('personal_salt', 'text').execute();
  await db.schema.alterTable('audit_entries').addColumn('commitments', 'text').execute();
  await rewriteChains(db);
}

/** Rewrites every workspace's chain of the first form in the second, each re-anchored by one entry. */
export async function rewriteChains(db: Kysely<unknown>): Promise<void> {
  const heads = await sql<{ workspace_id: string; seq: number; hash: string; anchor_seq: number; anchor_hash: string }>`
    select workspace_id, seq, hash, anchor_seq, anchor_hash from audit_heads order by workspace_id`.execute(db);
  for (const head of heads.rows) await rewrite(db, head);
}

async function rewrite(
  db: Kysely<unknown>,
  head: { workspace_id: string; seq: number; hash: string; anchor_seq: number; anchor_hash: string },
): Promise<void> {
  const ws = head.workspace_id;
  const { rows: firstForm } = await sql`select id from audit_entries where workspace_id = ${ws}
    and commitments is null limit 1`.execute(db);
  if (firstForm.length === 0) return;
  let seq = Number(head.anchor_seq);
  let oldPrev = head.anchor_hash;
  let newPrev = head.anchor_hash;
  let verified = true;
  for (;;) {
    const { rows } = await sql<Row>`select * from audit_entries where workspace_id = ${ws} and seq > ${seq}
      order by seq limit ${BATCH}`.execute(db);
    for (const r of rows) {
      if (Number(r.seq) !== seq + 1 || oldHash(oldPrev, r) !== r.hash) verified = false;
      oldPrev = r.hash;
      const next = secondForm(newPrev, r);
      await sql`update audit_entries set personal_salt = ${next.salt}, commitments = ${next.commitments},
        hash = ${next.hash} where id = ${r.id}`.execute(db);
      newPrev = next.hash;
      seq = Number(r.seq);
    }
    if (rows.length < BATCH) break;
  }
  if (seq !== Number(head.seq) || oldPrev !== head.hash) verified = false;
  const changes = canonicalJson({
    chain_form: { before: 1, after: 2 },
    old_head_hash: { before: head.hash, after: null },
    old_chain_verified: { before: null, after: verified },
  });
  const entry: Row = {
    id: newId('audit'),
    workspace_id: ws,
    seq: seq + 1,
    time: new Date().toISOString(),
    actor_type: 'system',
    actor_id: 'cli',
    actor_name: 'cli',
    actor_user_id: null,
    action: 'audit.chain_migrated',
    target_type: 'audit_log',
    target_id: ws,
    env: null,
    changes,
    request_id: null,
    ip: null,
    user_agent: null,
    hash: '',
  };
  const next = secondForm(newPrev, entry);
  await sql`insert into audit_entries (id, workspace_id, seq, time, actor_type, actor_id, actor_name, actor_user_id,
    action, target_type, target_id, env, changes, request_id, ip, user_agent, personal_salt, commitments, hash)
    values (${entry.id}, ${ws}, ${seq + 1}, ${entry.time}, 'system', 'cli', 'cli', null, 'audit.chain_migrated',
    'audit_log', ${ws}, null, ${changes}, null, null, null, ${next.salt}, ${next.commitments}, ${next.hash})`.execute(
    db,
  );
  await sql`update audit_heads set seq = ${seq + 1}, hash = ${next.hash} where workspace_id = ${ws}`.execute(db);
}
