import type { Db, Dialect } from '../../db/dialect.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { ConflictError, fieldError, NotFoundError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { type Principal, requireAdmin } from '../../kernel/principal.js';
import type { SecondFactorMethod, SignInMethod } from '../../kernel/sign-in-methods.js';
import type { Sealer } from '../../lib/sealed.js';
import { expireInBatches } from '../../platform/batched-purge.js';
import type { SecurityNotice } from '../../platform/domain-events.js';
import type { Change, Unit, UnitOfWork, WriteTx } from '../../platform/unit-of-work.js';
import { REDACTED, recordForPerson } from '../console-auth/person-audit.js';
import { type Client, personActorOf } from '../console-auth/sign-in-steps.js';
import { mfaRepository as repo, totpAt, totpSealedColumn } from './mfa.repository.js';
import { hashRecoveryCode, newRecoveryCode, RECOVERY_CODE_COUNT, recoveryCodeMatches } from './recovery-codes.js';
import { enrolmentOf, newTotpSecret, totpStep } from './totp.js';

/** A second factor as the sign-in step receives it. */
export type SecondFactorProof = { code: string } | { recovery_code: string } | { passkey: unknown };

const wrongCode = (field: string) =>
  fieldError(field, 'incorrect', 'That code is wrong or was already used; enter the current code from your app.');

/**
 * A person's second factors (docs/sign-in.md): TOTP with its recovery codes, the workspace policy that
 * requires one, and an admin's reset. Passkeys are passkeys.service.ts. Each change tells the person
 * (or the workspace's admins) in its transaction.
 */
export function createMfaService(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  uow: UnitOfWork;
  /** The users module's: a current member of a workspace, and every current member. */
  users: {
    memberOf(db: Db, workspaceId: string, userId: string): Promise<{ email: string; role: string } | undefined>;
    listAll(workspaceId: string): Promise<{ id: string; email: string }[]>;
  };
  /** The person's current memberships, oldest workspace first (console-auth's). */
  memberships: (trx: Db, email: string) => Promise<{ workspace_id: string; user_id: string }[]>;
  /** Whether `password` is this person's console password (console-auth's). */
  checkPassword: (email: string, password: string) => Promise<boolean>;
  /** Checks a passkey given as the second factor, in the sign-in's change (passkeys.service.ts). */
  passkeyFactor?: (c: Change, email: string, response: unknown) => Promise<boolean>;
  /** Seals TOTP seeds at rest (src/lib/sealed.ts); a seed is opened only to check a code. */
  sealer: Sealer;
}) {
  const { db, clock, uow, sealer } = deps;

  /** A person's change to their own second factors (signed in, or in the enrol stage of a sign-in). */
  const write = <T>(email: string, fn: (c: Change) => Promise<T>, client?: Client) =>
    uow.as(personActorOf(email, client)).run(fn);

  /** Tells a person about a change to their own sign-in, once, in their oldest workspace (as "password changed"). */
  async function tellPerson(c: Change, email: string, type: SecurityNotice['type'], data: SecurityNotice['data']) {
    const [first] = await deps.memberships(c.trx, email);
    if (!first) return;
    const notice = { type, workspaceId: first.workspace_id, users: [first.user_id], admins: false, data };
    await c.emit({ type: 'security.notice', notice });
  }

  /** Ten new recovery codes in `trx` (the old ones stop working); returns them: the only time they are shown. */
  async function newRecoveryCodes(trx: WriteTx, email: string, at: string): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await repo.replaceRecoveryCodes(
      trx,
      email,
      codes.map((code) => ({
        id: newId('recoveryCode'),
        email,
        ...hashRecoveryCode(code),
        created_at: at,
        used_at: null,
      })),
    );
    return codes;
  }

  /** What the profile shows: TOTP on or not, recovery codes left (never a secret). */
  async function status(email: string) {
    const row = await repo.person(db, email);
    const left = row?.totp_confirmed_at ? (await repo.unusedRecoveryCodes(db, email)).length : 0;
    return { totp_enabled: Boolean(row?.totp_confirmed_at), recovery_codes_left: left };
  }

  /**
   * Starts TOTP enrolment: a new secret, kept unconfirmed until a code proves the app has it. Answers the
   * secret, its otpauth URI and QR code: the only time they leave the server. Throws 409 when TOTP is on.
   */
  async function startTotp(email: string) {
    const secret = newTotpSecret();
    const at = isoAt(clock.now());
    await write(email, async (c) => {
      const { trx } = c;
      const row = await repo.ensurePerson(trx, email, at);
      if (row?.totp_confirmed_at) {
        throw new ConflictError(
          'totp_already_enabled',
          'Two-factor codes are already on; turn them off first to use another app.',
        );
      }
      await repo.setTotp(trx, email, sealer.seal(secret, totpAt(email)), null, at);
    });
    return { secret, ...(await enrolmentOf(secret, email)) };
  }

  /** Confirms enrolment with a code of the app: TOTP is on, and ten recovery codes are answered once. Throws 400, 409. */
  async function confirmTotp(email: string, code: string, client?: Client): Promise<{ recovery_codes: string[] }> {
    const at = isoAt(clock.now());
    return write(
      email,
      async (c) => {
        const { trx, audit } = c;
        const row = await repo.person(trx, email);
        if (!row?.totp_secret || row.totp_confirmed_at) {
          throw new ConflictError(
            'totp_not_pending',
            'Start the setup of two-factor codes first (no setup is waiting).',
          );
        }
        const step = totpStep(sealer.open(row.totp_secret, totpAt(email)), code, clock.now());
        if (step === null) throw wrongCode('code');
        await repo.confirmTotp(trx, email, step, at);
        const recovery_codes = await newRecoveryCodes(trx, email, at);
        await tellPerson(c, email, 'mfa.enabled', { at, factor: { kind: 'totp' } });
        await recordForPerson(trx, audit, email, {
          action: 'user.mfa_enabled',
          changes: { totp: { before: false, after: true } },
        });
        return { recovery_codes };
      },
      client,
    );
  }

  /** Checks a TOTP code once (a replay of an accepted step is refused), in `trx`. */
  async function acceptTotpCode(c: Change, email: string, code: string): Promise<boolean> {
    const { trx } = c;
    const row = await repo.person(trx, email);
    if (!row?.totp_secret || !row.totp_confirmed_at) return false;
    const step = totpStep(sealer.open(row.totp_secret, totpAt(email)), code, clock.now());
    if (step === null) return false;
    const at = isoAt(clock.now());
    if (await repo.acceptTotpStep(trx, email, step, at)) return true;
    // A right code of a step already used: a replay (someone saw or intercepted it). Refused, and the person is told.
    await tellPerson(c, email, 'mfa.code_reused', { at, factor: { kind: 'totp' } });
    return false;
  }

  /** Uses one recovery code, in `trx`; tells the person how many are left. */
  async function spendRecoveryCode(c: Change, email: string, code: string): Promise<boolean> {
    const { trx } = c;
    const unused = await repo.unusedRecoveryCodes(trx, email);
    const match = unused.find((r) => recoveryCodeMatches(code, r));
    const at = isoAt(clock.now());
    if (!match || !(await repo.spendRecoveryCode(trx, match.id, at))) return false;
    await tellPerson(c, email, 'recovery_code.used', {
      at,
      factor: { kind: 'recovery_codes', remaining: unused.length - 1 },
    });
    return true;
  }

  /** The password of a change to the factors, checked before its transaction (scrypt takes about a second). */
  async function checkPassword(email: string, password: string): Promise<void> {
    if (!(await deps.checkPassword(email, password))) {
      throw fieldError('password', 'incorrect', 'The password is incorrect.');
    }
  }

  /** The second half of re-authentication, in the change's transaction: a current code (or a recovery code). */
  async function reauthenticate(c: Change, email: string, input: { code: string }) {
    const ok = /^\d{6}$/.test(input.code.trim())
      ? await acceptTotpCode(c, email, input.code.trim())
      : await spendRecoveryCode(c, email, input.code);
    if (!ok) throw wrongCode('code');
  }

  /** Turns TOTP off (password and a code needed); its recovery codes go with it. Throws 400, 409. */
  async function disableTotp(email: string, input: { password: string; code: string }, client?: Client): Promise<void> {
    await checkPassword(email, input.password);
    const at = isoAt(clock.now());
    await write(
      email,
      async (c) => {
        const { trx, audit } = c;
        const row = await repo.person(trx, email);
        if (!row?.totp_confirmed_at) throw new ConflictError('totp_not_enabled', 'Two-factor codes are not on.');
        await reauthenticate(c, email, input);
        await repo.setTotp(trx, email, null, null, at);
        await repo.replaceRecoveryCodes(trx, email, []);
        await tellPerson(c, email, 'mfa.disabled', { at, factor: { kind: 'totp' } });
        await recordForPerson(trx, audit, email, {
          action: 'user.mfa_disabled',
          changes: { totp: { before: true, after: false } },
        });
      },
      client,
    );
  }

  /**
   * Ten new recovery codes (password and a code needed); the old ones stop working. Recorded as
   * `user.recovery_codes_regenerated`: the codes only as "[redacted]", with how many were left. Throws 400, 409.
   */
  async function regenerateRecoveryCodes(email: string, input: { password: string; code: string }, client?: Client) {
    await checkPassword(email, input.password);
    const at = isoAt(clock.now());
    return write(
      email,
      async (c) => {
        const { trx, audit } = c;
        const row = await repo.person(trx, email);
        if (!row?.totp_confirmed_at) throw new ConflictError('totp_not_enabled', 'Turn on two-factor codes first.');
        await reauthenticate(c, email, input);
        const left = (await repo.unusedRecoveryCodes(trx, email)).length;
        const recovery_codes = await newRecoveryCodes(trx, email, at);
        await tellPerson(c, email, 'recovery_codes.regenerated', { at, factor: { kind: 'recovery_codes' } });
        await recordForPerson(trx, audit, email, {
          action: 'user.recovery_codes_regenerated',
          changes: {
            recovery_codes: { before: REDACTED, after: REDACTED },
            recovery_codes_left: { before: left, after: recovery_codes.length },
          },
        });
        return { recovery_codes };
      },
      client,
    );
  }

  /** The second factors a person can give at sign-in; [] when none. */
  async function factors(email: string): Promise<SecondFactorMethod[]> {
    const row = await repo.person(db, email);
    const out: SecondFactorMethod[] = [];
    if (row?.totp_confirmed_at) out.push('totp', 'recovery_code');
    if ((await repo.passkeys(db, email)).length > 0) out.push('passkey');
    return out;
  }

  /** Checks the second factor of a sign-in in its change: the method it signed in with, or false. */
  async function verify(c: Change, email: string, proof: SecondFactorProof): Promise<SignInMethod | false> {
    if ('code' in proof) return (await acceptTotpCode(c, email, proof.code.trim())) && 'password+totp';
    if ('recovery_code' in proof)
      return (await spendRecoveryCode(c, email, proof.recovery_code)) && 'password+recovery_code';
    return Boolean(await deps.passkeyFactor?.(c, email, proof.passkey)) && 'password+passkey';
  }

  /** Whether a workspace requires a second factor of its members. */
  async function policy(workspaceId: string): Promise<{ require_second_factor: boolean }> {
    return { require_second_factor: (await repo.requiring(db, [workspaceId])).length > 0 };
  }

  /** Admin: requires a second factor of the workspace's members, or not; the admins are told. Throws 403. */
  async function setPolicy(u: Unit<Principal>, require: boolean) {
    const principal = u.actor;
    requireAdmin(principal);
    const at = isoAt(clock.now());
    await u.run(async (c) => {
      const { trx, audit } = c;
      const before = (await repo.requiring(trx, [principal.workspaceId])).length > 0;
      await repo.setPolicy(trx, principal.workspaceId, require, at);
      if (before === require) return;
      audit.record({
        action: 'workspace.settings_changed',
        workspaceId: principal.workspaceId,
        target: { type: 'workspace', id: principal.workspaceId },
        env: null,
        changes: { require_second_factor: { before, after: require } },
      });
      const by = principal.userId
        ? (await deps.users.memberOf(trx, principal.workspaceId, principal.userId))?.email
        : undefined;
      await c.emit({
        type: 'security.notice',
        notice: {
          type: 'workspace.settings_changed',
          workspaceId: principal.workspaceId,
          users: [],
          admins: true,
          data: { at, by, settings: { require_second_factor: require } },
        },
      });
    });
    return { require_second_factor: require };
  }

  /**
   * Admin: removes every second factor of a member (TOTP, recovery codes, passkeys): for a lost phone.
   * The member is told by email; at the next sign-in they set one up again if the workspace requires it.
   * Throws 403, 404.
   */
  async function resetMember(u: Unit<Principal>, userId: string): Promise<void> {
    const principal = u.actor;
    requireAdmin(principal);
    const member = await deps.users.memberOf(db, principal.workspaceId, userId);
    if (!member) throw new NotFoundError('member');
    const email = member.email.toLowerCase();
    const at = isoAt(clock.now());
    await u.run(async (c) => {
      const { trx, audit } = c;
      const by = principal.userId
        ? (await deps.users.memberOf(trx, principal.workspaceId, principal.userId))?.email
        : undefined;
      const had = {
        totp: Boolean((await repo.person(trx, email))?.totp_confirmed_at),
        passkeys: (await repo.passkeys(trx, email)).length,
      };
      await repo.clearFactors(trx, email, at);
      if (had.totp || had.passkeys > 0) {
        audit.record({
          action: 'user.mfa_reset',
          workspaceId: principal.workspaceId,
          target: { type: 'user', id: userId },
          env: null,
          changes: { totp: { before: had.totp, after: false }, passkeys: { before: had.passkeys, after: 0 } },
        });
      }
      await c.emit({
        type: 'security.notice',
        notice: {
          type: 'mfa.reset',
          workspaceId: principal.workspaceId,
          users: [userId],
          admins: false,
          data: { at, by, member: { id: userId, email: member.email, role: member.role } },
        },
      });
    });
  }

  /** Admin: which members have a second factor (the members page). */
  async function membersWithFactor(principal: Principal): Promise<{ user_id: string; second_factor: boolean }[]> {
    requireAdmin(principal);
    const members = await deps.users.listAll(principal.workspaceId);
    const have = await repo.withFactor(
      db,
      members.map((m) => m.email.toLowerCase()),
    );
    return members.map((m) => ({ user_id: m.id, second_factor: have.has(m.email.toLowerCase()) }));
  }

  return {
    /** The secrets it keeps sealed at rest (src/platform/sealed-columns.ts). */
    sealedColumns: [totpSealedColumn],
    status,
    startTotp,
    confirmTotp,
    disableTotp,
    regenerateRecoveryCodes,
    factors,
    verify,
    policy,
    setPolicy,
    resetMember,
    membersWithFactor,
    /** Whether any of these workspaces requires a second factor. */
    requiresSecondFactor: async (workspaceIds: string[]) => (await repo.requiring(db, workspaceIds)).length > 0,
    /** Whether the person has a second factor (TOTP confirmed or a passkey). */
    hasFactor: async (email: string) => (await repo.withFactor(db, [email])).has(email),
    /** The purge-sign-in-steps job's part, written with its unit. */
    purgeChallenges: (u: Unit) => {
      const before = isoAt(clock.now());
      return expireInBatches(u, (trx, limit) => repo.purgeChallenges(trx, before, limit));
    },
  };
}
export type MfaService = ReturnType<typeof createMfaService>;
