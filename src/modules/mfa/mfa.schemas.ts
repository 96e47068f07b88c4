import { type Static, Type } from '@sinclair/typebox';
import { Timestamp } from '../../kernel/schemas.js';

/** A WebAuthn response as @simplewebauthn/browser gives it (checked by @simplewebauthn/server, not here). */
const WebauthnResponse = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 1024 }),
    rawId: Type.String({ maxLength: 1024 }),
    type: Type.String({ maxLength: 32 }),
    response: Type.Object({}, { additionalProperties: true }),
  },
  { additionalProperties: true, description: 'The PublicKeyCredential, as JSON.' },
);
/** WebAuthn options for navigator.credentials.create() or .get(), as @simplewebauthn/browser takes them. */
export const WebauthnOptionsSchema = Type.Object({}, { additionalProperties: true });

const Code = Type.String({ minLength: 1, maxLength: 40, description: '6 digits from the app, or a recovery code.' });
const Password = Type.String({ minLength: 1, maxLength: 800 });
const PasskeyName = Type.String({ minLength: 1, maxLength: 60 });

export const PasskeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  created_at: Timestamp,
  last_used_at: Type.Union([Timestamp, Type.Null()]),
});
export type Passkey = Static<typeof PasskeySchema>;

export const TwoFactorStatusSchema = Type.Object({
  totp_enabled: Type.Boolean(),
  recovery_codes_left: Type.Integer(),
  passkeys: Type.Array(PasskeySchema),
});
export type TwoFactorStatus = Static<typeof TwoFactorStatusSchema>;

export const TotpEnrolmentSchema = Type.Object({
  secret: Type.String({ description: 'Base32; shown this once.' }),
  uri: Type.String({ description: 'otpauth:// URI, the content of the QR code.' }),
  qr_svg: Type.String({ description: 'The QR code, an SVG drawn by the server.' }),
});
export type TotpEnrolment = Static<typeof TotpEnrolmentSchema>;

export const RecoveryCodesSchema = Type.Object({
  recovery_codes: Type.Array(Type.String(), { description: 'Shown this once; each works once.' }),
});
export type RecoveryCodes = Static<typeof RecoveryCodesSchema>;

export const ConfirmTotpBody = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 12 }) },
  { additionalProperties: false },
);
export const ReauthBody = Type.Object({ password: Password, code: Code }, { additionalProperties: false });
export const NewPasskeyBody = Type.Object(
  { name: PasskeyName, response: WebauthnResponse },
  { additionalProperties: false },
);
export const RenamePasskeyBody = Type.Object({ name: PasskeyName }, { additionalProperties: false });
export const PasskeySignInBody = Type.Object({ response: WebauthnResponse }, { additionalProperties: false });
export const PendingBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);
/** The second step of a sign-in: the pending token and exactly one second factor. */
export const SecondFactorBody = Type.Union([
  Type.Object(
    { token: Type.String({ maxLength: 100 }), code: Type.String({ minLength: 1, maxLength: 12 }) },
    { additionalProperties: false },
  ),
  Type.Object(
    { token: Type.String({ maxLength: 100 }), recovery_code: Type.String({ minLength: 1, maxLength: 40 }) },
    { additionalProperties: false },
  ),
  Type.Object({ token: Type.String({ maxLength: 100 }), passkey: WebauthnResponse }, { additionalProperties: false }),
]);

export const PolicySchema = Type.Object({
  require_second_factor: Type.Boolean({
    description: 'Members without a second factor set one up at their next sign-in, before any other page.',
  }),
});
export type Policy = Static<typeof PolicySchema>;
export const PolicyBody = Type.Object({ require_second_factor: Type.Boolean() }, { additionalProperties: false });
export const MemberFactorSchema = Type.Object({ user_id: Type.String(), second_factor: Type.Boolean() });
export type MemberFactor = Static<typeof MemberFactorSchema>;
