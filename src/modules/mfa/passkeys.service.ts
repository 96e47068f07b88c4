import {
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type { Db, Dialect } from '../../db/dialect.js';
import type { ConsolePasskeysTable, WebauthnPurpose } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { AppError, fieldError, NotFoundError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { anonymousActor } from '../../kernel/principal.js';
import type { SecurityNotice } from '../../platform/domain-events.js';
import type { Change, UnitOfWork, WriteTx } from '../../platform/unit-of-work.js';
import { recordForPerson } from '../console-auth/person-audit.js';
import { type Client, clientActor, personActorOf } from '../console-auth/sign-in-steps.js';
import { mfaRepository as repo } from './mfa.repository.js';

/** A challenge lives 5 minutes and works once. */
const CHALLENGE_TTL_MS = 5 * 60_000;
const RP_NAME = 'Workspace Service';

const refused = (why: string) =>
  new AppError(
    401,
    'passkey_refused',
    `The passkey was not accepted: ${why}. Try again, or sign in with your password.`,
  );

/** What the profile lists of a passkey (never its key material). */
export interface PasskeyInfo {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

const info = (p: ConsolePasskeysTable): PasskeyInfo => ({
  id: p.id,
  name: p.name,
  created_at: p.created_at,
  last_used_at: p.last_used_at,
});

/** The challenge inside a WebAuthn response (its clientDataJSON), to find the stored one; '' when unreadable. */
function challengeOf(response: unknown): string {
  try {
    const data = (response as { response?: { clientDataJSON?: unknown } })?.response?.clientDataJSON;
    if (typeof data !== 'string') return '';
    const parsed = JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as { challenge?: unknown };
    return typeof parsed.challenge === 'string' ? parsed.challenge : '';
  } catch {
    return '';
  }
}

/**
 * Passkeys (WebAuthn, docs/sign-in.md#passkeys): register, list, rename, remove; sign in with one alone
 * (a discoverable credential: no email typed) or give one as the second factor. User verification is
 * required; the relying party id is PUBLIC_URL's host name and the origin PUBLIC_URL's.
 */
export function createPasskeysService(deps: {
  db: Db;
  dialect: Dialect;
  /** Every change, as the person (or, a passkey sign-in before it knows them, as someone signing in). */
  uow: UnitOfWork;
  clock: Clock;
  /** PUBLIC_URL: its host name is the relying party id, its origin the one expected. */
  publicUrl: () => string;
  memberships: (trx: Db, email: string) => Promise<{ workspace_id: string; user_id: string }[]>;
}) {
  const { db, clock } = deps;
  const rp = () => {
    const url = new URL(deps.publicUrl());
    return { id: url.hostname, origin: url.origin };
  };
  /** A person's change to their own passkeys, or (no email yet) a passkey sign-in's. */
  const write = <T>(email: string | null, fn: (c: Change) => Promise<T>, client?: Client) =>
    deps.uow
      .as(
        email === null
          ? client
            ? clientActor('sign-in', client)
            : anonymousActor('sign-in')
          : personActorOf(email, client),
      )
      .run(fn);

  async function tellPerson(c: Change, email: string, type: SecurityNotice['type'], name: string, at: string) {
    const [first] = await deps.memberships(c.trx, email);
    if (!first) return;
    await c.emit({
      type: 'security.notice',
      notice: {
        type,
        workspaceId: first.workspace_id,
        users: [first.user_id],
        admins: false,
        data: { at, factor: { kind: 'passkey', name } },
      },
    });
  }

  async function storeChallenge(challenge: string, purpose: WebauthnPurpose, email: string | null) {
    const now = clock.now();
    await write(email, ({ trx }) =>
      repo.insertChallenge(trx, {
        challenge,
        purpose,
        email,
        created_at: isoAt(now),
        expires_at: isoAt(now + CHALLENGE_TTL_MS),
        used_at: null,
      }),
    );
  }

  /** Uses the response's challenge once, in `trx`; it must be live, of `purpose` and (when given) of `email`. */
  async function takeChallenge(trx: WriteTx, response: unknown, purpose: WebauthnPurpose, email: string | null) {
    const row = await repo.takeStoredChallenge(trx, challengeOf(response), isoAt(clock.now()));
    if (!row || row.purpose !== purpose || (email !== null && row.email !== email)) return undefined;
    return row.challenge;
  }

  /** Options for navigator.credentials.create(): a resident key, user verification required, none of the person's passkeys again. */
  async function registrationOptions(email: string) {
    const now = isoAt(clock.now());
    const person = await write(email, ({ trx }) => repo.ensurePerson(trx, email, now));
    const existing = await repo.passkeys(db, email);
    const options = await generateRegistrationOptions({
      rpName: RP_NAME,
      rpID: rp().id,
      userName: email,
      userID: Buffer.from(person?.webauthn_user_id ?? '', 'base64url'),
      attestationType: 'none',
      timeout: CHALLENGE_TTL_MS,
      excludeCredentials: existing.map((p) => ({
        id: p.credential_id,
        transports: p.transports?.split(',') as AuthenticatorTransport[] | undefined,
      })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    });
    await storeChallenge(options.challenge, 'register', email);
    return options;
  }

  /** Verifies a new passkey (its challenge once, user verification done) and keeps it under `name`. Throws 400. */
  async function register(email: string, response: unknown, name: string, client?: Client): Promise<PasskeyInfo> {
    const at = isoAt(clock.now());
    return write(
      email,
      async (c) => {
        const { trx, audit } = c;
        const challenge = await takeChallenge(trx, response, 'register', email);
        if (!challenge)
          throw fieldError('response', 'expired', 'This passkey request expired or was used; start again.');
        const verified = await verifyRegistrationResponse({
          response: response as RegistrationResponseJSON,
          expectedChallenge: challenge,
          expectedOrigin: rp().origin,
          expectedRPID: rp().id,
          requireUserVerification: true,
        }).catch((e: Error) => {
          throw fieldError('response', 'invalid', `The passkey could not be verified: ${e.message}`);
        });
        if (!verified.verified)
          throw fieldError('response', 'invalid', 'The passkey could not be verified; try again.');
        const credential = verified.registrationInfo.credential;
        const row: ConsolePasskeysTable = {
          id: newId('passkey'),
          email,
          credential_id: credential.id,
          public_key: Buffer.from(credential.publicKey).toString('base64url'),
          counter: credential.counter,
          transports: credential.transports?.join(',') ?? null,
          name,
          created_at: at,
          last_used_at: null,
        };
        await repo.insertPasskey(trx, row);
        await tellPerson(c, email, 'passkey.added', name, at);
        await recordForPerson(trx, audit, email, {
          action: 'user.passkey_added',
          changes: { passkey: { before: null, after: { id: row.id, name } } },
        });
        return info(row);
      },
      client,
    );
  }

  /** Checks an assertion against a stored passkey, in `trx`; the passkey when it holds, else undefined. */
  async function assertionOf(trx: WriteTx, response: unknown, challenge: string, email: string | null) {
    const id = (response as { id?: unknown })?.id;
    const passkey = typeof id === 'string' ? await repo.passkeyByCredential(trx, id) : undefined;
    if (!passkey || (email !== null && passkey.email !== email)) return undefined;
    const result = await verifyAuthenticationResponse({
      response: response as AuthenticationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp().origin,
      expectedRPID: rp().id,
      requireUserVerification: true,
      credential: {
        id: passkey.credential_id,
        publicKey: new Uint8Array(Buffer.from(passkey.public_key, 'base64url')),
        counter: Number(passkey.counter),
        transports: passkey.transports?.split(',') as AuthenticatorTransport[] | undefined,
      },
    }).catch(() => undefined);
    if (!result?.verified) return undefined;
    await repo.recordPasskeyUse(trx, passkey.id, result.authenticationInfo.newCounter, isoAt(clock.now()));
    return passkey;
  }

  /** Options for navigator.credentials.get(): any passkey of this site (sign-in) or the person's (second factor). */
  async function authenticationOptions(purpose: 'sign_in' | 'second_factor', email: string | null) {
    const allow = email ? await repo.passkeys(db, email) : [];
    const options = await generateAuthenticationOptions({
      rpID: rp().id,
      userVerification: 'required',
      timeout: CHALLENGE_TTL_MS,
      allowCredentials: allow.map((p) => ({ id: p.credential_id })),
    });
    await storeChallenge(options.challenge, purpose, email);
    return options;
  }

  /** Signs in with a passkey alone: the email of its person; throws 401 passkey_refused. */
  async function signIn(response: unknown): Promise<string> {
    const email = await write(null, async (c) => {
      const { trx } = c;
      const challenge = await takeChallenge(trx, response, 'sign_in', null);
      if (!challenge) return undefined;
      return (await assertionOf(trx, response, challenge, null))?.email;
    });
    if (!email) throw refused('it is unknown here, was removed, or the request expired');
    return email;
  }

  /** Checks a passkey given as the second factor of `email`, in the sign-in's transaction. */
  async function secondFactor({ trx }: Change, email: string, response: unknown): Promise<boolean> {
    const challenge = await takeChallenge(trx, response, 'second_factor', email);
    return challenge !== undefined && (await assertionOf(trx, response, challenge, email)) !== undefined;
  }

  /** Renames a passkey of the person: `user.passkey_renamed` (the same name again: nothing recorded). Throws 404. */
  async function rename(email: string, id: string, name: string, client?: Client): Promise<void> {
    await write(
      email,
      async (c) => {
        const { trx, audit } = c;
        const p = (await repo.passkeys(trx, email)).find((k) => k.id === id);
        if (!p) throw new NotFoundError('passkey');
        if (p.name === name) return;
        await repo.renamePasskey(trx, email, id, name);
        await recordForPerson(trx, audit, email, {
          action: 'user.passkey_renamed',
          changes: { passkey: { before: { id, name: p.name }, after: { id, name } } },
        });
      },
      client,
    );
  }

  /** Removes a passkey of the person; they are told. Throws 404. */
  async function remove(email: string, id: string, client?: Client): Promise<void> {
    const at = isoAt(clock.now());
    await write(
      email,
      async (c) => {
        const { trx, audit } = c;
        const p = (await repo.passkeys(trx, email)).find((k) => k.id === id);
        if (!p) throw new NotFoundError('passkey');
        await repo.deletePasskey(trx, email, id);
        await tellPerson(c, email, 'passkey.removed', p.name, at);
        await recordForPerson(trx, audit, email, {
          action: 'user.passkey_removed',
          changes: { passkey: { before: { id: p.id, name: p.name }, after: null } },
        });
      },
      client,
    );
  }

  return {
    registrationOptions,
    register,
    authenticationOptions,
    signIn,
    secondFactor,
    rename,
    remove,
    list: async (email: string) => (await repo.passkeys(db, email)).map(info),
  };
}
export type PasskeysService = ReturnType<typeof createPasskeysService>;
