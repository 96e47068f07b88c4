import { sql } from 'kysely';
import type { Db } from '../../db/dialect.js';
import type { ConsoleLinksTable, ConsolePendingSignInsTable, ConsoleSessionsTable, Role } from '../../db/types.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

export interface Membership {
  workspace_id: string;
  workspace_name: string;
  user_id: string;
  role: Role;
  name: string | null;
  timezone: string | null;
}

/** SQL for console passwords, sessions, single-use links and the sign-in throttle. */
export const consoleAuthRepository = {
  findCredential(db: Db, email: string) {
    return db.selectFrom('console_credentials').selectAll().where('email', '=', email).executeTakeFirst();
  },

  async upsertCredential(db: WriteTx, email: string, hash: string, now: string) {
    await db
      .insertInto('console_credentials')
      .values({ email, password_hash: hash, created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('email').doUpdateSet({ password_hash: hash, updated_at: now }))
      .execute();
  },

  /** The current memberships of a person, oldest workspace first. */
  memberships(db: Db, email: string): Promise<Membership[]> {
    return db
      .selectFrom('users')
      .innerJoin('workspaces', 'workspaces.id', 'users.workspace_id')
      .select([
        'users.workspace_id',
        'workspaces.name as workspace_name',
        'users.id as user_id',
        'users.role',
        'users.name',
        'users.timezone',
      ])
      .where(sql<string>`lower(users.email)`, '=', email)
      .where('users.removed_at', 'is', null)
      .orderBy('users.workspace_id')
      .execute();
  },

  /** The person's current user row in one workspace, if they are a member. */
  membership(db: Db, email: string, workspaceId: string) {
    return db
      .selectFrom('users')
      .select(['id', 'role', 'workspace_id', 'name'])
      .where('workspace_id', '=', workspaceId)
      .where(sql<string>`lower(email)`, '=', email)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
  },

  /** A current member of a workspace by user id. */
  insertSession(db: WriteTx, row: ConsoleSessionsTable) {
    return db.insertInto('console_sessions').values(row).execute();
  },

  findSessionByDigest(db: Db, digest: string) {
    return db.selectFrom('console_sessions').selectAll().where('token_digest', '=', digest).executeTakeFirst();
  },

  /** One session of a person, open or not (whom a sign-out reached). */
  findSessionOf(db: Db, email: string, id: string) {
    return db
      .selectFrom('console_sessions')
      .select(['id', 'email', 'workspace_id'])
      .where('id', '=', id)
      .where('email', '=', email)
      .executeTakeFirst();
  },

  /** Whether a session is still open (the re-check inside write transactions). */
  async sessionOpen(db: Db, id: string): Promise<boolean> {
    const row = await db
      .selectFrom('console_sessions')
      .select('id')
      .where('id', '=', id)
      .where('ended_at', 'is', null)
      .executeTakeFirst();
    return row !== undefined;
  },

  touchSession(db: WriteTx, id: string, at: string) {
    return db.updateTable('console_sessions').set({ last_seen_at: at }).where('id', '=', id).execute();
  },

  listSessions(db: Db, email: string, now: string) {
    return db
      .selectFrom('console_sessions')
      .select(['id', 'created_at', 'last_seen_at', 'expires_at', 'user_agent', 'ip'])
      .where('email', '=', email)
      .where('ended_at', 'is', null)
      .where('expires_at', '>', now)
      .orderBy('id', 'desc')
      .limit(100)
      .execute();
  },

  /** Ends one session of a person (or every one but `except`); returns how many ended. */
  async endSessions(db: WriteTx, email: string, at: string, only?: { id?: string; except?: string }) {
    let q = db
      .updateTable('console_sessions')
      .set({ ended_at: at })
      .where('email', '=', email)
      .where('ended_at', 'is', null);
    if (only?.id) q = q.where('id', '=', only.id);
    if (only?.except) q = q.where('id', '!=', only.except);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows);
  },

  insertLink(db: WriteTx, row: ConsoleLinksTable) {
    return db.insertInto('console_links').values(row).execute();
  },

  findLink(db: Db, digest: string) {
    return db.selectFrom('console_links').selectAll().where('digest', '=', digest).executeTakeFirst();
  },

  /** Marks a link used; false when another request used it first. */
  async useLink(db: WriteTx, digest: string, at: string): Promise<boolean> {
    const r = await db
      .updateTable('console_links')
      .set({ used_at: at })
      .where('digest', '=', digest)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  pendingInvites(db: Db, workspaceId: string, now: string) {
    return db
      .selectFrom('console_links')
      .innerJoin('users', 'users.id', 'console_links.user_id')
      .select([
        'users.id as user_id',
        'console_links.email',
        'users.role',
        'console_links.created_at',
        'console_links.expires_at',
      ])
      .where('console_links.workspace_id', '=', workspaceId)
      .where('console_links.purpose', '=', 'invite')
      .where('console_links.used_at', 'is', null)
      .where('console_links.expires_at', '>', now)
      .where('users.removed_at', 'is', null)
      .orderBy('console_links.created_at', 'desc')
      .limit(200)
      .execute();
  },

  insertPending(db: WriteTx, row: ConsolePendingSignInsTable) {
    return db.insertInto('console_pending_sign_ins').values(row).execute();
  },

  findPending(db: Db, digest: string) {
    return db.selectFrom('console_pending_sign_ins').selectAll().where('digest', '=', digest).executeTakeFirst();
  },

  /** Marks a pending sign-in used; false when another request used it first. */
  async takePending(db: WriteTx, digest: string, at: string): Promise<boolean> {
    const r = await db
      .updateTable('console_pending_sign_ins')
      .set({ used_at: at })
      .where('digest', '=', digest)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /** Every open session of a person in the enrol stage reaches every page again. */
  finishEnrolment(db: WriteTx, email: string) {
    return db
      .updateTable('console_sessions')
      .set({ stage: 'full' })
      .where('email', '=', email)
      .where('stage', '=', 'enrol')
      .where('ended_at', 'is', null)
      .execute();
  },

  insertFailure(db: WriteTx, id: string, subject: string, at: string) {
    return db.insertInto('console_sign_in_failures').values({ id, subject, at }).execute();
  },

  async countFailures(db: Db, subject: string, since: string): Promise<number> {
    const r = await db
      .selectFrom('console_sign_in_failures')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('subject', '=', subject)
      .where('at', '>', since)
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  },

  /** Deletes up to `limit` pending sign-ins that expired before `before`; returns how many. */
  async purgePendingSignIns(db: WriteTx, before: string, limit: number): Promise<number> {
    const rows = await db
      .selectFrom('console_pending_sign_ins')
      .select('digest')
      .where('expires_at', '<', before)
      .limit(limit)
      .execute();
    if (rows.length === 0) return 0;
    const keys = rows.map((r) => r.digest);
    await db.deleteFrom('console_pending_sign_ins').where('digest', 'in', keys).execute();
    return rows.length;
  },

  /** Deletes up to `limit` sign-in failures older than `before`; returns how many. */
  async purgeFailures(db: WriteTx, before: string, limit: number): Promise<number> {
    const rows = await db
      .selectFrom('console_sign_in_failures')
      .select('id')
      .where('at', '<', before)
      .limit(limit)
      .execute();
    if (rows.length === 0) return 0;
    const keys = rows.map((r) => r.id);
    await db.deleteFrom('console_sign_in_failures').where('id', 'in', keys).execute();
    return rows.length;
  },
};
