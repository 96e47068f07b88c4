import { type Static, Type } from '@sinclair/typebox';
import { Email, RoleSchema, Timestamp } from '../../kernel/schemas.js';
import { SECOND_FACTOR_METHODS, SESSION_STAGES } from '../../kernel/sign-in-methods.js';

export { Email };

/** docs/console.md: 10..200 code points (checked by the service, which counts code points, not UTF-16 units). */
const Password = Type.String({ minLength: 1, maxLength: 800 });

export const MembershipSchema = Type.Object({
  workspace_id: Type.String(),
  workspace_name: Type.String(),
  user_id: Type.String(),
  role: RoleSchema,
  name: Type.Union([Type.String(), Type.Null()]),
  timezone: Type.Union([Type.String(), Type.Null()]),
});
export type Membership = Static<typeof MembershipSchema>;

/** What the console learns about the signed-in person (GET/POST /console/api/session). */
export const ConsoleSessionSchema = Type.Object({
  email: Type.String(),
  session_id: Type.String(),
  csrf_token: Type.String({ description: 'Send as X-CSRF-Token on every non-GET console request.' }),
  expires_at: Timestamp,
  method: Type.String({ description: 'How the session signed in: password, password+totp, passkey, sso…' }),
  stage: Type.Union(
    SESSION_STAGES.map((s) => Type.Literal(s)),
    {
      description: 'enrol: a workspace requires a second factor; add one before anything else.',
    },
  ),
  memberships: Type.Array(MembershipSchema),
});
export type ConsoleSession = Static<typeof ConsoleSessionSchema>;

export const SecondFactorMethodSchema = Type.Union(SECOND_FACTOR_METHODS.map((m) => Type.Literal(m)));
/** A right password whose second factor is still to come (POST /console/api/session, 202). */
export const SecondFactorNeededSchema = Type.Object({
  second_factor_required: Type.Literal(true),
  token: Type.String({ description: 'Send with the second factor within 5 minutes; works once.' }),
  methods: Type.Array(SecondFactorMethodSchema),
  expires_at: Timestamp,
});
export type SecondFactorNeeded = Static<typeof SecondFactorNeededSchema>;

export const SignInBody = Type.Object({ email: Email, password: Password }, { additionalProperties: false });
export const ForgotBody = Type.Object({ email: Email }, { additionalProperties: false });
export const SetPasswordBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200 }), password: Password },
  { additionalProperties: false },
);
export const LinkBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export const LinkInfoSchema = Type.Object({ email: Type.String(), expires_at: Type.String() });
export type LinkInfo = Static<typeof LinkInfoSchema>;
export const ChangePasswordBody = Type.Object(
  { current_password: Password, new_password: Password },
  { additionalProperties: false },
);

export const SessionInfoSchema = Type.Object({
  id: Type.String(),
  created_at: Timestamp,
  last_seen_at: Timestamp,
  expires_at: Timestamp,
  user_agent: Type.Union([Type.String(), Type.Null()]),
  ip: Type.Union([Type.String(), Type.Null()]),
  current: Type.Boolean(),
});
export type SessionInfo = Static<typeof SessionInfoSchema>;
