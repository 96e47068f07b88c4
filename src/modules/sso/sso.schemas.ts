import { type Static, Type } from '@sinclair/typebox';
import { RoleSchema, Timestamp } from '../../kernel/schemas.js';

/** What an admin sets (PUT /console/api/sso). */
export const SsoSettingsBody = Type.Object(
  {
    issuer: Type.String({ minLength: 1, maxLength: 500, description: "The provider's issuer URL (https://…)." }),
    client_id: Type.String({ minLength: 1, maxLength: 300 }),
    client_secret: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description: 'Needed the first time; left out: kept. Never answered.',
      }),
    ),
    allowed_domains: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { minItems: 1, maxItems: 20 }),
    default_role: RoleSchema,
    required: Type.Boolean({
      description: 'Password sign-in refused for this workspace, except for the break-glass admin.',
    }),
    break_glass_user_id: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type SsoSettingsInput = Static<typeof SsoSettingsBody>;

export const SsoSettingsSchema = Type.Object({
  issuer: Type.String(),
  client_id: Type.String(),
  client_secret_set: Type.Literal(true, { description: 'The secret is kept and never shown again.' }),
  allowed_domains: Type.Array(Type.String()),
  default_role: RoleSchema,
  required: Type.Boolean(),
  break_glass_user_id: Type.Union([Type.String(), Type.Null()]),
  redirect_uri: Type.String({ description: 'Register this redirect URI at the provider.' }),
  updated_at: Timestamp,
});
export type SsoSettingsOut = Static<typeof SsoSettingsSchema>;
/** The settings page before anything is set: the redirect URI to register. */
export const SsoStateSchema = Type.Object({
  settings: Type.Union([SsoSettingsSchema, Type.Null()]),
  redirect_uri: Type.String(),
});
export type SsoState = Static<typeof SsoStateSchema>;

export const DiscoverBody = Type.Object(
  { email: Type.String({ minLength: 3, maxLength: 254, format: 'email' }) },
  { additionalProperties: false },
);
export const SsoWorkspacesSchema = Type.Array(
  Type.Object({ workspace_id: Type.String(), workspace_name: Type.String() }),
);
export const StartBody = Type.Object(
  {
    workspace_id: Type.String({ minLength: 1, maxLength: 100 }),
    email: Type.Optional(Type.String({ maxLength: 254 })),
  },
  { additionalProperties: false },
);
export const StartedSchema = Type.Object({ authorization_url: Type.String() });
export const CallbackBody = Type.Object(
  {
    query: Type.String({
      minLength: 1,
      maxLength: 8000,
      description: 'The query string the provider sent the browser back with.',
    }),
  },
  { additionalProperties: false },
);
