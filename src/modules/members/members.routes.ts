import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { requireAdmin } from '../../kernel/principal.js';
import { DataOf } from '../../kernel/schemas.js';
import { InviteBody, InvitedSchema, MemberParams, PendingInviteSchema, SetRoleBody } from './members.schemas.js';
import type { MembersService } from './members.service.js';

const hide = true;
const NoContent = Type.Null({ description: 'Done' });

/** The members page's console API under /console/api (docs/console.md#two-apis-two-credentials): admins only. */
export const membersRoutes: FastifyPluginAsyncTypebox<{ members: MembersService }> = async (app, { members }) => {
  app.get(
    '/members/invites',
    { config: { console: 'actor' }, schema: { hide, response: { 200: DataOf(Type.Array(PendingInviteSchema)) } } },
    async (req) => {
      requireAdmin(req.principal);
      return { data: await members.pendingInvites(req.principal.workspaceId) };
    },
  );

  app.post(
    '/members',
    { config: { console: 'actor' }, schema: { hide, body: InviteBody, response: { 201: DataOf(InvitedSchema) } } },
    async (req, reply) => {
      const out = await members.inviteAs(req.unit(), req.body);
      const data = {
        user_id: out.user.id,
        email: out.user.email,
        role: out.user.role,
        invite_url: out.invite_url,
        expires_at: out.expires_at,
      };
      return reply.code(201).send({ data });
    },
  );

  app.patch(
    '/members/:id',
    { config: { console: 'actor' }, schema: { hide, params: MemberParams, body: SetRoleBody } },
    async (req) => ({ data: await members.setRole(req.unit(), req.params.id, req.body.role) }),
  );

  app.delete(
    '/members/:id',
    { config: { console: 'actor' }, schema: { hide, params: MemberParams, response: { 204: NoContent } } },
    async (req, reply) => {
      await members.remove(req.unit(), req.params.id);
      return reply.code(204).send(null);
    },
  );
};
