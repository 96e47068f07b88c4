import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { RequestOrigin } from '../../kernel/audit-actions.js';
import { fieldError } from '../../kernel/errors.js';
import { DataOf, IdParam } from '../../kernel/schemas.js';
import {
  ChangePasswordBody,
  ConsoleSessionSchema,
  ForgotBody,
  LinkBody,
  LinkInfoSchema,
  SecondFactorNeededSchema,
  SessionInfoSchema,
  SetPasswordBody,
  SignInBody,
} from './console-auth.schemas.js';
import type { Client, ConsoleAuthService, OpenSession } from './console-auth.service.js';
import { sessionOf } from './console-session.js';

/** The answer of sign-in and of GET /session: the person, how they signed in, the workspaces the session reaches. */
export async function describeSession(consoleAuth: ConsoleAuthService, open: OpenSession) {
  return {
    email: open.session.email,
    session_id: open.session.id,
    csrf_token: open.csrfToken,
    expires_at: open.session.expires_at,
    method: open.session.method,
    stage: open.session.stage,
    memberships: await consoleAuth.sessionMemberships(open.session),
  };
}

/** The client of a request as sign-in and the audit log see it: its address (TRUST_PROXY honoured), user agent, request id. */
export function clientOf(req: { ip: string; origin: RequestOrigin; headers: { 'user-agent'?: string } }): Client {
  return { ip: req.ip, userAgent: req.headers['user-agent'], origin: req.origin };
}

const hide = true;
const NoContent = Type.Null({ description: 'Done' });

/**
 * The console's own API (docs/console.md): sign-in, sessions and passwords (members: members.routes.ts; keys go through /v1/keys). Everything else the
 * console shows goes through the /v1 routes mounted again under /console/api/v1 (app.ts).
 */
export const consoleRoutes: FastifyPluginAsyncTypebox<{
  consoleAuth: ConsoleAuthService;
  /** Whether any workspace exists (the workspaces service's `any`, wired in app.ts). */
  hasWorkspace: () => Promise<boolean>;
  /** Erases the person of this email, as themselves (the users module's erasure, wired in app.ts); 409 `last_admin`. */
  eraseSelf: (email: string) => Promise<unknown>;
}> = async (app, { consoleAuth, hasWorkspace, eraseSelf }) => {
  const describe = (open: OpenSession) => describeSession(consoleAuth, open);

  // A fresh install: the sign-in page says to create the first workspace with the CLI (docs/console.md).
  app.get(
    '/first-run',
    {
      config: { console: 'public' },
      schema: { hide, response: { 200: DataOf(Type.Object({ has_workspace: Type.Boolean() })) } },
    },
    async () => ({ data: { has_workspace: await hasWorkspace() } }),
  );

  app.get(
    '/session',
    { config: { console: 'session', enrol: true }, schema: { hide, response: { 200: DataOf(ConsoleSessionSchema) } } },
    async (req) => ({ data: await describe(sessionOf(req)) }),
  );

  app.post(
    '/session',
    {
      config: { console: 'public' },
      schema: {
        hide,
        body: SignInBody,
        response: { 201: DataOf(ConsoleSessionSchema), 202: DataOf(SecondFactorNeededSchema) },
      },
    },
    async (req, reply) => {
      const out = await consoleAuth.signIn({ email: req.body.email, password: req.body.password, ...clientOf(req) });
      // A second factor to come (docs/sign-in.md#signing-in): no session yet, only the pending sign-in's token.
      if ('secondFactor' in out) {
        return reply.code(202).send({ data: { second_factor_required: true as const, ...out.secondFactor } });
      }
      app.consoleCookie.set(reply, out.token);
      return reply.code(201).send({ data: await describe(out) });
    },
  );

  app.delete(
    '/session',
    { config: { console: 'session', enrol: true }, schema: { hide, response: { 204: NoContent } } },
    async (req, reply) => {
      await consoleAuth.signOut(sessionOf(req).session, clientOf(req));
      app.consoleCookie.clear(reply);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/password/forgot',
    { config: { console: 'public' }, schema: { hide, body: ForgotBody, response: { 202: NoContent } } },
    async (req, reply) => {
      // The link goes by email once email exists, never to the log; operators use `wsvc users reset-link`.
      const { userIds } = await consoleAuth.forgotPassword(req.body.email, clientOf(req));
      if (userIds.length > 0) req.log.info({ user_ids: userIds }, 'password reset requested');
      return reply.code(202).send(null);
    },
  );

  app.post(
    '/password/set',
    {
      config: { console: 'public' },
      schema: {
        hide,
        body: SetPasswordBody,
        response: { 200: DataOf(ConsoleSessionSchema), 202: DataOf(SecondFactorNeededSchema) },
      },
    },
    // Setting a password signs the person in: the cookie and the answer are sign-in's (202 with a second factor to come).
    async (req, reply) => {
      const out = await consoleAuth.redeemLink(req.body.token, req.body.password, clientOf(req));
      if ('secondFactor' in out) {
        return reply.code(202).send({ data: { second_factor_required: true as const, ...out.secondFactor } });
      }
      app.consoleCookie.set(reply, out.token);
      return { data: await describe(out) };
    },
  );

  // A POST, not a GET: the token stays out of URLs and request logs.
  app.post(
    '/password/link',
    { config: { console: 'public' }, schema: { hide, body: LinkBody, response: { 200: DataOf(LinkInfoSchema) } } },
    async (req) => ({ data: await consoleAuth.describeLink(req.body.token) }),
  );

  app.post(
    '/password/change',
    { config: { console: 'session' }, schema: { hide, body: ChangePasswordBody, response: { 204: NoContent } } },
    async (req, reply) => {
      await consoleAuth.changePassword(
        sessionOf(req).session,
        req.body.current_password,
        req.body.new_password,
        clientOf(req),
      );
      return reply.code(204).send(null);
    },
  );

  // Delete my account (docs/data-lifecycle.md#deleting-your-own-account): the person types their email to confirm.
  app.post(
    '/account/delete',
    {
      config: { console: 'session' },
      schema: { hide, body: Type.Object({ email: Type.String({ maxLength: 320 }) }), response: { 204: NoContent } },
    },
    async (req, reply) => {
      const { session } = sessionOf(req);
      if (req.body.email.trim().toLowerCase() !== session.email.toLowerCase()) {
        throw fieldError('email', 'invalid_value', 'Type the email you signed in with to confirm.');
      }
      await eraseSelf(session.email);
      app.consoleCookie.clear(reply);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/sessions',
    { config: { console: 'session' }, schema: { hide, response: { 200: DataOf(Type.Array(SessionInfoSchema)) } } },
    async (req) => {
      const { session } = sessionOf(req);
      const rows = await consoleAuth.sessions(session.email);
      return { data: rows.map((r) => ({ ...r, current: r.id === session.id })) };
    },
  );

  app.delete(
    '/sessions/:id',
    {
      config: { console: 'session' },
      schema: { hide, params: IdParam('ses_', 'ses_01J'), response: { 204: NoContent } },
    },
    async (req, reply) => {
      await consoleAuth.endSession(sessionOf(req).session.email, req.params.id, clientOf(req));
      if (req.params.id === sessionOf(req).session.id) app.consoleCookie.clear(reply);
      return reply.code(204).send(null);
    },
  );
};
