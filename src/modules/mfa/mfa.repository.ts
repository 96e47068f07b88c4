import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/dialect.js';
import { sealedUnderOther, toSeal } from '../../db/sealed-values.js';
import type {
  ConsoleMfaTable,
  ConsolePasskeysTable,
  ConsoleRecoveryCodesTable,
  ConsoleWebauthnChallengesTable,
} from '../../db/types.js';
import type { SealedAt } from '../../lib/sealed.js';
import type { SealedColumn, StoredSecret } from '../../platform/sealed-columns.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

/** SQL for second factors: TOTP, recovery codes, passkeys and their challenges, and the workspace policy. */
export const mfaRepository = {
  person(db: Db, email: string) {
    return db.selectFrom('console_mfa').selectAll().where('email', '=', email).executeTakeFirst();
  },

  /** The person's row, made first (with a new random WebAuthn user handle) when they have none. */
  async ensurePerson(db: WriteTx, email: string, at: string): Promise<ConsoleMfaTable | undefined> {
    const row: ConsoleMfaTable = {
      email,
      webauthn_user_id: randomBytes(32).toString('base64url'),
      totp_secret: null,
      totp_confirmed_at: null,
      totp_last_step: null,
      created_at: at,
      updated_at: at,
    };
    await db
      .insertInto('console_mfa')
      .values(row)
      .onConflict((oc) => oc.column('email').doNothing())
      .execute();
    return db.selectFrom('console_mfa').selectAll().where('email', '=', email).executeTakeFirst();
  },

  setTotp(db: WriteTx, email: string, secret: string | null, confirmedAt: string | null, at: string) {
    return db
      .updateTable('console_mfa')
      .set({ totp_secret: secret, totp_confirmed_at: confirmedAt, totp_last_step: null, updated_at: at })
      .where('email', '=', email)
      .execute();
  },

  confirmTotp(db: WriteTx, email: string, step: number, at: string) {
    return db
      .updateTable('console_mfa')
      .set({ totp_confirmed_at: at, totp_last_step: step, updated_at: at })
      .where('email', '=', email)
      .where('totp_confirmed_at', 'is', null)
      .executeTakeFirst();
  },

  /** Records `step` as the last accepted; false when it, or a later one, already was (a replay). */
  async acceptTotpStep(db: WriteTx, email: string, step: number, at: string): Promise<boolean> {
    const r = await db
      .updateTable('console_mfa')
      .set({ totp_last_step: step, updated_at: at })
      .where('email', '=', email)
      .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  async replaceRecoveryCodes(db: WriteTx, email: string, rows: ConsoleRecoveryCodesTable[]) {
    await db.deleteFrom('console_recovery_codes').where('email', '=', email).execute();
    if (rows.length > 0) await db.insertInto('console_recovery_codes').values(rows).execute();
  },

  unusedRecoveryCodes(db: Db, email: string) {
    return db
      .selectFrom('console_recovery_codes')
      .select(['id', 'salt', 'digest'])
      .where('email', '=', email)
      .where('used_at', 'is', null)
      .execute();
  },

  async spendRecoveryCode(db: WriteTx, id: string, at: string): Promise<boolean> {
    const r = await db
      .updateTable('console_recovery_codes')
      .set({ used_at: at })
      .where('id', '=', id)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  passkeys(db: Db, email: string) {
    return db.selectFrom('console_passkeys').selectAll().where('email', '=', email).orderBy('id', 'desc').execute();
  },

  passkeyByCredential(db: Db, credentialId: string) {
    return db.selectFrom('console_passkeys').selectAll().where('credential_id', '=', credentialId).executeTakeFirst();
  },

  insertPasskey(db: WriteTx, row: ConsolePasskeysTable) {
    return db.insertInto('console_passkeys').values(row).execute();
  },

  recordPasskeyUse(db: WriteTx, id: string, counter: number, at: string) {
    return db.updateTable('console_passkeys').set({ counter, last_used_at: at }).where('id', '=', id).execute();
  },

  renamePasskey(db: WriteTx, email: string, id: string, name: string) {
    return db
      .updateTable('console_passkeys')
      .set({ name })
      .where('id', '=', id)
      .where('email', '=', email)
      .executeTakeFirst();
  },

  deletePasskey(db: WriteTx, email: string, id: string) {
    return db.deleteFrom('console_passkeys').where('id', '=', id).where('email', '=', email).executeTakeFirst();
  },

  /** Removes every second factor of a person (an admin's reset). */
  async clearFactors(db: WriteTx, email: string, at: string): Promise<void> {
    await db
      .updateTable('console_mfa')
      .set({ totp_secret: null, totp_confirmed_at: null, totp_last_step: null, updated_at: at })
      .where('email', '=', email)
      .execute();
    await db.deleteFrom('console_recovery_codes').where('email', '=', email).execute();
    await db.deleteFrom('console_passkeys').where('email', '=', email).execute();
  },

  insertChallenge(db: WriteTx, row: ConsoleWebauthnChallengesTable) {
    return db.insertInto('console_webauthn_challenges').values(row).execute();
  },

  /** Uses a challenge once; the row when it was live and unused, else undefined. */
  async takeStoredChallenge(db: WriteTx, challenge: string, at: string) {
    const row = await db
      .selectFrom('console_webauthn_challenges')
      .selectAll()
      .where('challenge', '=', challenge)
      .executeTakeFirst();
    if (!row || row.used_at !== null || row.expires_at <= at) return undefined;
    const r = await db
      .updateTable('console_webauthn_challenges')
      .set({ used_at: at })
      .where('challenge', '=', challenge)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1 ? row : undefined;
  },

  /** Deletes up to `limit` challenges that expired before `before`; returns how many. */
  async purgeChallenges(db: WriteTx, before: string, limit: number): Promise<number> {
    const rows = await db
      .selectFrom('console_webauthn_challenges')
      .select('challenge')
      .where('expires_at', '<', before)
      .limit(limit)
      .execute();
    if (rows.length === 0) return 0;
    const keys = rows.map((r) => r.challenge);
    await db.deleteFrom('console_webauthn_challenges').where('challenge', 'in', keys).execute();
    return rows.length;
  },

  /** The workspaces among these that require a second factor. */
  requiring(db: Db, workspaceIds: string[]) {
    if (workspaceIds.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('workspace_mfa_policies')
      .select('workspace_id')
      .where('workspace_id', 'in', workspaceIds)
      .where('require_second_factor', '=', 1)
      .execute();
  },

  setPolicy(db: WriteTx, workspaceId: string, require: boolean, at: string) {
    const value = require ? 1 : 0;
    return db
      .insertInto('workspace_mfa_policies')
      .values({ workspace_id: workspaceId, require_second_factor: value, updated_at: at })
      .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ require_second_factor: value, updated_at: at }))
      .execute();
  },

  /** Of these emails, those with a confirmed TOTP or a passkey. */
  async withFactor(db: Db, emails: string[]): Promise<Set<string>> {
    if (emails.length === 0) return new Set();
    const totp = await db
      .selectFrom('console_mfa')
      .select('email')
      .where('email', 'in', emails)
      .where('totp_confirmed_at', 'is not', null)
      .execute();
    const keys = await db.selectFrom('console_passkeys').select('email').where('email', 'in', emails).execute();
    return new Set([...totp, ...keys].map((r) => r.email));
  },
};

/** The TOTP seeds as a sealed column (src/platform/sealed-columns.ts), each bound to its person. */
export const totpSealedColumn: SealedColumn = {
  column: 'console_mfa.totp_secret',
  async toSeal(db: Db, kid: string | null, limit: number): Promise<StoredSecret[]> {
    const rows = await db
      .selectFrom('console_mfa')
      .select(['email', 'totp_secret'])
      .where('totp_secret', 'is not', null)
      .where(toSeal('totp_secret', kid))
      .orderBy('email')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ at: totpAt(r.email), stored: r.totp_secret as string }));
  },
  async replace(db: WriteTx, s: StoredSecret, next: string): Promise<boolean> {
    const r = await db
      .updateTable('console_mfa')
      .set({ totp_secret: next })
      .where('email', '=', s.at.row)
      .where('totp_secret', '=', s.stored)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },
  async sealedUnderOther(db: Db, kids: readonly string[]): Promise<string | undefined> {
    const r = await db
      .selectFrom('console_mfa')
      .select('totp_secret')
      .where('totp_secret', 'is not', null)
      .where(sealedUnderOther('totp_secret', kids))
      .limit(1)
      .executeTakeFirst();
    return r?.totp_secret ?? undefined;
  },
};

/** Where a person's TOTP seed is sealed: the person is its scope and its row. */
export function totpAt(email: string): SealedAt {
  return { column: 'console_mfa.totp_secret', scope: email, row: email };
}
