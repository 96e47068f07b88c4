import { type Static, Type } from '@sinclair/typebox';
import { ROLES } from '../../kernel/roles.js';
import { OrderQueryProps, PageQueryProps, RoleSchema, Timestamp, UserName } from '../../kernel/schemas.js';

export { ROLES, RoleSchema, UserName };

/** docs/api.md#users: every field of a user, plus timezone (null until set) and name (null until set). */
export const UserSchema = Type.Object(
  {
    id: Type.String({ examples: ['usr_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    email: Type.String({ description: 'Immutable.' }),
    name: Type.Union([Type.String(), Type.Null()]),
    role: RoleSchema,
    timezone: Type.Union([Type.String(), Type.Null()], { description: 'IANA name, or null when never set.' }),
    workspace_id: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'User', title: 'User' },
);
export type User = Static<typeof UserSchema>;

export const PatchMeBody = Type.Object(
  {
    name: Type.Optional(UserName),
    timezone: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'IANA timezone name, e.g. Europe/Paris.' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Only name and timezone; email, role and the rest are refused. {} is a no-op.',
  },
);
export type PatchMeInput = Static<typeof PatchMeBody>;

export const ListUsersQuery = Type.Object({ ...PageQueryProps, ...OrderQueryProps }, { additionalProperties: false });

export const CreateUserInput = Type.Object(
  {
    workspaceId: Type.String({ minLength: 1 }),
    email: Type.String({ format: 'email', maxLength: 254 }),
    role: RoleSchema,
    name: Type.Optional(UserName),
  },
  { additionalProperties: false },
);
export type CreateUserInput = Static<typeof CreateUserInput>;
