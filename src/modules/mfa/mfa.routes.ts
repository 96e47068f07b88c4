import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { DataOf, IdParam } from '../../kernel/schemas.js';
import { clientOf, describeSession } from '../console-auth/console.routes.js';
import { ConsoleSessionSchema } from '../console-auth/console-auth.schemas.js';
import type { ConsoleAuthService } from '../console-auth/console-auth.service.js';
import { sessionOf } from '../console-auth/console-session.js';
import {
  ConfirmTotpBody,
  MemberFactorSchema,
  NewPasskeyBody,
  PasskeySchema,
  PasskeySignInBody,
  PendingBody,
  PolicyBody,
  PolicySchema,
  ReauthBody,
  RecoveryCodesSchema,
  RenamePasskeyBody,
  SecondFactorBody,
  TotpEnrolmentSchema,
  TwoFactorStatusSchema,
  WebauthnOptionsSchema,
} from './mfa.schemas.js';
import type { MfaService } from './mfa.service.js';
import type { PasskeysService } from './passkeys.service.js';

/** A member of the workspace, by id (the members page's second-factor reset). */
const MemberParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

const hide = true;
const NoContent = Type.Null({ description: 'Done' });
const PasskeyParams = IdParam('pk_', 'pk_01J');

/**
 * Second factors in the console (docs/sign-in.md): the person's own (two-factor codes, recovery codes,
 * passkeys), the second step of sign-in and passkey sign-in, and the workspace's policy and resets (admins).
 */
export const mfaRoutes: FastifyPluginAsyncTypebox<{
  mfa: MfaService;
  passkeys: PasskeysService;
  consoleAuth: ConsoleAuthService;
}> = async (app, { mfa, passkeys, consoleAuth }) => {
  const client = clientOf;
  // Reachable while a workspace's policy holds the session to enrolling a second factor.
  const own = { console: 'session', enrol: true } as const;

  app.get(
    '/two-factor',
    { config: own, schema: { hide, response: { 200: DataOf(TwoFactorStatusSchema) } } },
    async (req) => {
      const { email } = sessionOf(req).session;
      return { data: { ...(await mfa.status(email)), passkeys: await passkeys.list(email) } };
    },
  );

  app.post(
    '/two-factor/totp',
    { config: own, schema: { hide, response: { 201: DataOf(TotpEnrolmentSchema) } } },
    async (req, reply) => reply.code(201).send({ data: await mfa.startTotp(sessionOf(req).session.email) }),
  );

  app.post(
    '/two-factor/totp/confirm',
    { config: own, schema: { hide, body: ConfirmTotpBody, response: { 200: DataOf(RecoveryCodesSchema) } } },
    async (req) => {
      const { email } = sessionOf(req).session;
      const out = await mfa.confirmTotp(email, req.body.code, client(req));
      await consoleAuth.finishEnrolment(email);
      return { data: out };
    },
  );

  app.post(
    '/two-factor/totp/disable',
    { config: { console: 'session' }, schema: { hide, body: ReauthBody, response: { 204: NoContent } } },
    async (req, reply) => {
      await mfa.disableTotp(sessionOf(req).session.email, req.body, client(req));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/two-factor/recovery-codes',
    {
      config: { console: 'session' },
      schema: { hide, body: ReauthBody, response: { 200: DataOf(RecoveryCodesSchema) } },
    },
    async (req) => ({
      data: await mfa.regenerateRecoveryCodes(sessionOf(req).session.email, req.body, client(req)),
    }),
  );

  app.post(
    '/passkeys/options',
    { config: own, schema: { hide, response: { 200: DataOf(WebauthnOptionsSchema) } } },
    async (req) => ({
      data: await passkeys.registrationOptions(sessionOf(req).session.email),
    }),
  );

  app.post(
    '/passkeys',
    { config: own, schema: { hide, body: NewPasskeyBody, response: { 201: DataOf(PasskeySchema) } } },
    async (req, reply) => {
      const { email } = sessionOf(req).session;
      const out = await passkeys.register(email, req.body.response, req.body.name, client(req));
      await consoleAuth.finishEnrolment(email);
      return reply.code(201).send({ data: out });
    },
  );

  app.patch(
    '/passkeys/:id',
    {
      config: { console: 'session' },
      schema: { hide, params: PasskeyParams, body: RenamePasskeyBody, response: { 204: NoContent } },
    },
    async (req, reply) => {
      await passkeys.rename(sessionOf(req).session.email, req.params.id, req.body.name, client(req));
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/passkeys/:id',
    { config: { console: 'session' }, schema: { hide, params: PasskeyParams, response: { 204: NoContent } } },
    async (req, reply) => {
      await passkeys.remove(sessionOf(req).session.email, req.params.id, client(req));
      return reply.code(204).send(null);
    },
  );

  // The second step of a password sign-in (docs/sign-in.md#signing-in).
  app.post(
    '/session/second-factor',
    {
      config: { console: 'public' },
      schema: { hide, body: SecondFactorBody, response: { 201: DataOf(ConsoleSessionSchema) } },
    },
    async (req, reply) => {
      const { token, ...proof } = req.body;
      const out = await consoleAuth.completeSecondFactor(token, (c, email) => mfa.verify(c, email, proof), client(req));
      app.consoleCookie.set(reply, out.token);
      return reply.code(201).send({ data: await describeSession(consoleAuth, out) });
    },
  );

  app.post(
    '/session/second-factor/passkey-options',
    {
      config: { console: 'public' },
      schema: { hide, body: PendingBody, response: { 200: DataOf(WebauthnOptionsSchema) } },
    },
    async (req) => ({
      data: await passkeys.authenticationOptions('second_factor', await consoleAuth.pendingEmail(req.body.token)),
    }),
  );

  // "Sign in with a passkey": no email typed (a discoverable credential).
  app.post(
    '/session/passkey/options',
    { config: { console: 'public' }, schema: { hide, response: { 200: DataOf(WebauthnOptionsSchema) } } },
    async () => ({ data: await passkeys.authenticationOptions('sign_in', null) }),
  );

  app.post(
    '/session/passkey',
    {
      config: { console: 'public' },
      schema: { hide, body: PasskeySignInBody, response: { 201: DataOf(ConsoleSessionSchema) } },
    },
    async (req, reply) => {
      await consoleAuth.throttle(null, req.ip);
      const email = await passkeys.signIn(req.body.response).catch(async (e: unknown) => {
        await consoleAuth.passkeyFailed(req.ip);
        throw e;
      });
      const out = await consoleAuth.openPasskeySession(email, client(req));
      app.consoleCookie.set(reply, out.token);
      return reply.code(201).send({ data: await describeSession(consoleAuth, out) });
    },
  );

  // The workspace's policy and members' factors (admins).
  app.get(
    '/workspace/sign-in-policy',
    { config: { console: 'actor' }, schema: { hide, response: { 200: DataOf(PolicySchema) } } },
    async (req) => ({
      data: await mfa.policy(req.principal.workspaceId),
    }),
  );

  app.put(
    '/workspace/sign-in-policy',
    { config: { console: 'actor' }, schema: { hide, body: PolicyBody, response: { 200: DataOf(PolicySchema) } } },
    async (req) => ({ data: await mfa.setPolicy(req.unit(), req.body.require_second_factor) }),
  );

  app.get(
    '/members/second-factors',
    { config: { console: 'actor' }, schema: { hide, response: { 200: DataOf(Type.Array(MemberFactorSchema)) } } },
    async (req) => ({ data: await mfa.membersWithFactor(req.principal) }),
  );

  app.delete(
    '/members/:id/second-factor',
    { config: { console: 'actor' }, schema: { hide, params: MemberParams, response: { 204: NoContent } } },
    async (req, reply) => {
      await mfa.resetMember(req.unit(), req.params.id);
      return reply.code(204).send(null);
    },
  );
};
