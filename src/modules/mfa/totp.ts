import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';

/** RFC 6238 as the console uses it (docs/sign-in.md#two-factor-codes): SHA-1, 6 digits, 30-second steps. */
export const TOTP_PERIOD_S = 30;
const DIGITS = 6;
/** Codes of one step either side of now are accepted (clocks of phones drift); two steps are not. */
const WINDOW = 1;
const ISSUER = 'Workspace Service';

/** A new 160-bit TOTP secret (RFC 4226's recommended length), base32. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

function totpOf(secret: string, label = ''): TOTP {
  return new TOTP({
    issuer: ISSUER,
    label,
    algorithm: 'SHA1',
    digits: DIGITS,
    period: TOTP_PERIOD_S,
    secret: Secret.fromBase32(secret),
  });
}

/** The 30-second step that contains `ms` (the TOTP counter). */
export function stepAt(ms: number): number {
  return Math.floor(ms / 1000 / TOTP_PERIOD_S);
}

/**
 * The step of `code` if it is the code of `secret` at `now` or one step either side, else null.
 * The caller accepts it only if that step is later than the last one accepted (a code works once).
 */
export function totpStep(secret: string, code: string, now: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const delta = totpOf(secret).validate({ token: code, timestamp: now, window: WINDOW });
  return delta === null ? null : stepAt(now) + delta;
}

/** The code of `secret` at `ms` (tests, and the console's own checks). */
export function totpCode(secret: string, ms: number): string {
  return totpOf(secret).generate({ timestamp: ms });
}

/**
 * What an authenticator app needs: the otpauth:// URI and the same as a QR code, an SVG drawn here
 * (no request leaves the machine).
 */
export async function enrolmentOf(secret: string, account: string): Promise<{ uri: string; qr_svg: string }> {
  const uri = totpOf(secret, account).toString();
  const qr_svg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return { uri, qr_svg };
}
