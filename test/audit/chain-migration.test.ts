// Backends: both — migration 035 rewrites real chains with each database's SQL
// Tier: quick
// docs/api.md#audit-log: entries written before personal data became erasable (the first form) are rewritten in the
// second form, each workspace's chain re-anchored once by an `audit.chain_migrated` entry holding the old head's
// hash; `wsvc audit verify` (the service's verify) passes before and after.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rewriteChains } from '../../src/db/migrations/035-audit-commitments.js';
import { systemActor } from '../../src/kernel/principal.js';
import { canonicalJson } from '../../src/lib/canonical-json.js';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** Turns a workspace's chain back into the first form (every column hashed as it is), as it was before 035. */
async function toFirstForm(workspaceId: string): Promise<string> {
  const rows = await t.storage.db
    .selectFrom('audit_entries')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('seq')
    .execute();
  let prev = '';
  for (const r of rows) {
    const { hash: _h, personal_salt: _s, commitments: _c, ...rest } = r;
    const canonical = canonicalJson({ ...rest, seq: Number(r.seq), changes: JSON.parse(r.changes) as unknown });
    prev = createHash('sha256')
      .update(prev + canonical)
      .digest('hex');
    await t.storage.db
      .updateTable('audit_entries')
      .set({ hash: prev, personal_salt: null, commitments: null })
      .where('id', '=', r.id)
      .execute();
  }
  await t.storage.db.updateTable('audit_heads').set({ hash: prev }).where('workspace_id', '=', workspaceId).execute();
  return prev;
}

describe('migration 035: the chain in the second form', () => {
  it('rewrites first-form entries, re-anchors once with the old head hash, and verifies before and after', async () => {
    const ws = await newWorkspace(t);
    await t.services.uow.as(systemActor('cli')).run(async ({ audit }) => {
      audit.record({
        action: 'resource.updated',
        target: { type: 'resource', id: 'res_1' },
        env: 'live',
        workspaceId: ws.id,
        changes: { email: { before: 'a@example.test', after: 'b@example.test' } },
      });
    });
    const oldHead = await toFirstForm(ws.id);
    expect(await t.services.audit.verify(ws.id)).toEqual([{ workspaceId: ws.id, ok: true, entries: 2 }]);

    await rewriteChains(t.storage.db as never);

    const rows = await t.storage.db
      .selectFrom('audit_entries')
      .selectAll()
      .where('workspace_id', '=', ws.id)
      .orderBy('seq')
      .execute();
    expect(rows.map((r) => [Number(r.seq), r.action])).toEqual([
      [1, 'workspace.created'],
      [2, 'resource.updated'],
      [3, 'audit.chain_migrated'],
    ]);
    for (const r of rows) expect(r.commitments).not.toBeNull();
    expect(JSON.parse(rows[2]?.changes ?? '')).toEqual({
      chain_form: { before: 1, after: 2 },
      old_head_hash: { before: oldHead, after: null },
      old_chain_verified: { before: null, after: true },
    });
    expect(await t.services.audit.verify(ws.id)).toEqual([{ workspaceId: ws.id, ok: true, entries: 3 }]);
    // New entries chain on after the migrated ones.
    await t.services.uow.as(systemActor('cli')).run(async ({ audit }) => {
      audit.record({
        action: 'resource.deleted',
        target: { type: 'resource', id: 'res_1' },
        env: 'live',
        workspaceId: ws.id,
      });
    });
    expect(await t.services.audit.verify(ws.id)).toEqual([{ workspaceId: ws.id, ok: true, entries: 4 }]);
  });

  it('says so in its entry when the old chain did not verify', async () => {
    const ws = await newWorkspace(t);
    await toFirstForm(ws.id);
    await t.storage.db
      .updateTable('audit_entries')
      .set({ actor_name: 'someone' })
      .where('workspace_id', '=', ws.id)
      .execute();
    await rewriteChains(t.storage.db as never);
    const last = await t.storage.db
      .selectFrom('audit_entries')
      .select('changes')
      .where('workspace_id', '=', ws.id)
      .where('action', '=', 'audit.chain_migrated')
      .orderBy('seq', 'desc')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(last.changes).old_chain_verified).toEqual({ before: null, after: false });
  });
});
