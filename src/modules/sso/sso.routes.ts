import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { anonymousActor } from '../../kernel/principal.js';
import { DataOf } from '../../kernel/schemas.js';
import { clientOf, describeSession } from '../console-auth/console.routes.js';
import { ConsoleSessionSchema } from '../console-auth/console-auth.schemas.js';
import type { ConsoleAuthService } from '../console-auth/console-auth.service.js';
import {
  CallbackBody,
  DiscoverBody,
  SsoSettingsBody,
  SsoSettingsSchema,
  SsoStateSchema,
  SsoWorkspacesSchema,
  StartBody,
  StartedSchema,
} from './sso.schemas.js';
import type { SsoService } from './sso.service.js';

const hide = true;
const NoContent = Type.Null({ description: 'Done' });
/** Binds a single sign-on to the browser that started it (its token's digest is kept with the state). */
const SSO_COOKIE = 'wsvc_sso';
const COOKIE_PATH = '/console/api/sso';

/**
 * Single sign-on in the console (docs/sign-in.md#single-sign-on): the admin's settings, and the sign-in:
 * which workspaces take an email's domain, the start (to the provider), the finish (the provider's answer,
 * posted by the console's callback page).
 */
export const ssoRoutes: FastifyPluginAsyncTypebox<{
  sso: SsoService;
  consoleAuth: ConsoleAuthService;
  secureCookie: boolean;
}> = async (app, { sso, consoleAuth, secureCookie }) => {
  app.get(
    '/sso',
    { config: { console: 'actor' }, schema: { hide, response: { 200: DataOf(SsoStateSchema) } } },
    async (req) => ({
      data: { settings: await sso.settings(req.principal), redirect_uri: sso.redirectUri() },
    }),
  );

  app.put(
    '/sso',
    {
      config: { console: 'actor' },
      schema: { hide, body: SsoSettingsBody, response: { 200: DataOf(SsoSettingsSchema) } },
    },
    async (req) => ({ data: await sso.configure(req.unit(), req.body) }),
  );

  app.delete(
    '/sso',
    { config: { console: 'actor' }, schema: { hide, response: { 204: NoContent } } },
    async (req, reply) => {
      await sso.remove(req.unit());
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/sso/discover',
    {
      config: { console: 'public' },
      schema: { hide, body: DiscoverBody, response: { 200: DataOf(SsoWorkspacesSchema) } },
    },
    async (req) => ({ data: await sso.discover(req.body.email) }),
  );

  app.post(
    '/sso/start',
    { config: { console: 'public' }, schema: { hide, body: StartBody, response: { 200: DataOf(StartedSchema) } } },
    async (req, reply) => {
      const out = await sso.start(req.body.workspace_id, req.body.email);
      reply.setCookie(SSO_COOKIE, out.browser, {
        httpOnly: true,
        sameSite: 'lax',
        secure: secureCookie,
        path: COOKIE_PATH,
        maxAge: 600,
      });
      return { data: { authorization_url: out.url } };
    },
  );

  app.post(
    '/sso/callback',
    {
      config: { console: 'public' },
      schema: { hide, body: CallbackBody, response: { 201: DataOf(ConsoleSessionSchema) } },
    },
    async (req, reply) => {
      reply.clearCookie(SSO_COOKIE, { httpOnly: true, sameSite: 'lax', secure: secureCookie, path: COOKIE_PATH });
      const who = await sso.finish(req.body.query, req.cookies[SSO_COOKIE]);
      const out = await consoleAuth.openSession(req.unitAs(anonymousActor('sso')), who.email, clientOf(req), {
        method: 'sso',
        workspaceId: who.workspaceId,
      });
      app.consoleCookie.set(reply, out.token);
      return reply.code(201).send({ data: await describeSession(consoleAuth, out) });
    },
  );
};
