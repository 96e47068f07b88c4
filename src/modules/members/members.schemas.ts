import { type Static, Type } from '@sinclair/typebox';
import { Email, RoleSchema, Timestamp, UserName } from '../../kernel/schemas.js';

// The members page's console API (docs/console.md#two-apis-two-credentials): invites, role changes, removals.
export const InviteBody = Type.Object(
  { email: Email, role: RoleSchema, name: Type.Optional(UserName) },
  { additionalProperties: false },
);
export const InvitedSchema = Type.Object({
  user_id: Type.String(),
  email: Type.String(),
  role: RoleSchema,
  invite_url: Type.String({ description: 'Single-use link to set a password; shown once.' }),
  expires_at: Timestamp,
});
export type Invited = Static<typeof InvitedSchema>;
export const PendingInviteSchema = Type.Object({
  user_id: Type.String(),
  email: Type.String(),
  role: RoleSchema,
  created_at: Timestamp,
  expires_at: Timestamp,
});
export type PendingInvite = Static<typeof PendingInviteSchema>;
export const SetRoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false });
export const MemberParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
