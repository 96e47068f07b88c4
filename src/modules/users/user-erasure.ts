import { sql } from 'kysely';
import type { Db, Dialect } from '../../db/dialect.js';
import { containing } from '../../db/like.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { ConflictError } from '../../kernel/errors.js';
import type { PersonActor, SystemActor } from '../../kernel/principal.js';
import { PERSONAL_DATA, type PersonalColumn } from '../../platform/personal-data.js';
import type { Unit, UnitOfWork, WriteTx } from '../../platform/unit-of-work.js';
import { ERASED, type ErasedPerson, eraseFromAuditLog, namesInAuditLog } from '../audit/audit-erasure.js';

/** What an erasure changed: rows per `table.column` rule, the audit entries, and the user rows it found. */
export interface ErasureReport {
  users: { id: string; workspace_id: string }[];
  changed: Record<string, number>;
  audit_entries: number;
  /**
   * The workspaces this erasure left without an admin (the person was their only one): an operator's erasure is
   * not refused for it (the person's request comes first); the CLI says how to name another admin.
   */
  left_without_admin: { workspace_id: string; name: string }[];
}

const byRow = (p: PersonalColumn) => 'find' in p.erasure && p.erasure.find === 'row';

/** The registry's rules for one person, run in the erasure's transaction; the rows each changed. */
async function runRule(trx: WriteTx, p: PersonalColumn, person: ErasedPerson, at: string): Promise<number> {
  const e = p.erasure;
  if (e.rule === 'commitment' || e.rule === 'not-personal') return 0;
  const t = sql.table(p.table);
  const c = sql.ref(p.column);
  const emailColumn = PERSONAL_DATA.find((q) => q.table === p.table && q.holds === 'email')?.column ?? 'email';
  const emails = sql.join(person.emails);
  const where = () => {
    if (e.find === 'email') return sql`${c} in (${emails})`;
    if (e.find === 'row') return sql`${sql.ref(emailColumn)} in (${emails})`;
    if (e.find === 'user') return sql`user_id in (${sql.join(person.userIds)})`;
    return sql`(${sql.join(
      person.emails.map((m) => sql`${c} like ${containing(m)}`),
      sql` or `,
    )})`;
  };
  if (e.find === 'user' && person.userIds.length === 0) return 0;
  const run = async (q: ReturnType<typeof sql>) => Number((await q.execute(trx)).numAffectedRows ?? 0);
  switch (e.rule) {
    case 'delete-row':
      return run(sql`delete from ${t} where ${where()}`);
    case 'erase':
      return run(sql`update ${t} set ${c} = null where ${where()} and ${c} is not null`);
    case 'replace': {
      const removed = p.table === 'users' ? sql`, removed_at = coalesce(removed_at, ${at}), updated_at = ${at}` : sql``;
      return run(sql`update ${t} set ${c} = ${ERASED}${removed} where ${where()}`);
    }
    case 'scrub': {
      let n = 0;
      for (const m of person.emails) {
        n += await run(sql`update ${t} set ${c} = replace(${c}, ${m}, ${ERASED}) where ${c} like ${containing(m)}`);
      }
      for (const name of person.names) {
        const quoted = JSON.stringify(name);
        n += await run(
          sql`update ${t} set ${c} = replace(${c}, ${quoted}, ${JSON.stringify(ERASED)}) where ${c} like ${containing(quoted)}`,
        );
      }
      return n;
    }
  }
}

/** The workspaces whose only current admin has this email (by name and id), in id order. */
async function soleAdminOf(db: Db, email: string): Promise<{ workspace_id: string; name: string }[]> {
  const theirs = await db
    .selectFrom('users')
    .innerJoin('workspaces', 'workspaces.id', 'users.workspace_id')
    .select(['users.workspace_id', 'workspaces.name'])
    .where(sql<string>`lower(users.email)`, '=', email)
    .where('users.role', '=', 'admin')
    .where('users.removed_at', 'is', null)
    .orderBy('users.workspace_id')
    .execute();
  const sole: { workspace_id: string; name: string }[] = [];
  for (const w of theirs) {
    const others = await db
      .selectFrom('users')
      .select('id')
      .where('workspace_id', '=', w.workspace_id)
      .where('role', '=', 'admin')
      .where('removed_at', 'is', null)
      .where(sql<string>`lower(email)`, '!=', email)
      .limit(1)
      .execute();
    if (others.length === 0) sole.push(w);
  }
  return sole;
}

/**
 * Erasing a person (docs/data-lifecycle.md#erasing-a-person): every user row with their email, in every workspace,
 * is removed and reads `[erased]`; the rules of the personal-data registry (src/platform/personal-data.ts) delete or
 * scrub the rest; the audit log keeps its chain (audit-erasure.ts); one `user.erased` entry per workspace names the
 * user by id only. Runs as one change, so that nothing is left half erased, with the dialect's secure erase (no
 * copy left in SQLite's free pages or WAL). Idempotent: a second run finds nothing and records nothing.
 */
export function createUserErasure(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  uow: UnitOfWork;
  /** Numbers the audit log's pending entries first, so that none naming the person escapes. */
  flushAudit: (uow: UnitOfWork, db: Db) => Promise<void>;
}) {
  async function erase(u: Unit<SystemActor | PersonActor>, rawEmail: string): Promise<ErasureReport> {
    const email = rawEmail.trim().toLowerCase();
    const self = u.actor.kind === 'person';
    await deps.flushAudit(deps.uow, deps.db);
    const work = () =>
      u.run(
        async ({ trx, audit }) => {
          const rows = await trx
            .selectFrom('users')
            .select(['id', 'workspace_id', 'name', 'email'])
            .where(sql<string>`lower(email)`, '=', email)
            .orderBy('workspace_id')
            .execute();
          // Checked in the erasure's own transaction, so that nothing is erased when it refuses.
          const sole = await soleAdminOf(trx, email);
          const [first] = sole;
          if (self && first) {
            throw new ConflictError(
              'last_admin',
              `You are the last admin of the workspace "${first.name}" (${first.workspace_id}): make another member an admin, or delete the workspace, before deleting your account.`,
            );
          }
          const userIds = rows.map((r) => r.id);
          const current = rows.map((r) => r.name).filter((n): n is string => !!n && n !== ERASED);
          const names = [...new Set([...current, ...(await namesInAuditLog(trx, userIds))])];
          const emails = [...new Set([email, ...rows.map((r) => r.email)])];
          const person: ErasedPerson = { userIds, emails, names };
          const at = isoAt(deps.clock.now());
          const changed: Record<string, number> = {};
          // A row found by its email column is changed before that column is.
          const rules = [...PERSONAL_DATA.filter(byRow), ...PERSONAL_DATA.filter((p) => !byRow(p))];
          for (const p of rules) {
            const n = await runRule(trx, p, person, at);
            if (n > 0) changed[`${p.table}.${p.column}`] = n;
          }
          const entries = await eraseFromAuditLog(trx, person);
          for (const r of rows) {
            audit.record({
              action: 'user.erased',
              target: { type: 'user', id: r.id },
              env: null,
              workspaceId: r.workspace_id,
              changes: { personal_data: { before: ERASED, after: null } },
              // The person deleting their own account is the actor, by the id of each row, named as erased.
              ...(self ? { actor: { type: 'user' as const, id: r.id, name: ERASED } } : {}),
            });
          }
          return {
            users: rows.map(({ id, workspace_id }) => ({ id, workspace_id })),
            changed,
            audit_entries: entries,
            left_without_admin: sole,
          };
        },
        // A person's own deletion ends the session it runs in: checked before.
        { changesKeys: true, checkFirst: self },
      );
    return deps.dialect.secureErase ? deps.dialect.secureErase(work) : work();
  }

  /**
   * "Delete my account" (docs/data-lifecycle.md#deleting-your-own-account): the signed-in person erases themselves,
   * unless a workspace would be left without an admin. Throws ConflictError `last_admin` naming the workspace.
   */
  function eraseSelf(u: Unit<PersonActor>): Promise<ErasureReport> {
    return erase(u, u.actor.email);
  }

  return { erase, eraseSelf };
}
export type UserErasure = ReturnType<typeof createUserErasure>;
