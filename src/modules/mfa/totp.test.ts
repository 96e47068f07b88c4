// Backends: sqlite — pure functions, no storage.
// Tier: quick
import { describe, expect, it } from 'vitest';
import { hashRecoveryCode, newRecoveryCode, normalizeRecoveryCode, recoveryCodeMatches } from './recovery-codes.js';
import { enrolmentOf, newTotpSecret, stepAt, totpCode, totpStep } from './totp.js';

// RFC 6238 appendix B's SHA-1 secret ("12345678901234567890"), base32.
const RFC_SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';

describe('TOTP (RFC 6238)', () => {
  it('matches the RFC 6238 test vectors (6 digits of the 8 the RFC lists)', () => {
    expect(totpCode(RFC_SECRET, 59_000)).toBe('287082');
    expect(totpCode(RFC_SECRET, 1_111_111_109_000)).toBe('081804');
    expect(totpCode(RFC_SECRET, 1_234_567_890_000)).toBe('005924');
  });

  it('accepts one step of drift either side, at the exact window boundaries, and refuses two', () => {
    const secret = newTotpSecret();
    const start = 1_800_000_000_000 - (1_800_000_000_000 % 30_000); // the first millisecond of a step
    const now = start + 30_000;
    const code = totpCode(secret, start); // the step before now's
    expect(totpStep(secret, code, now)).toBe(stepAt(start));
    // The last millisecond at which that code is one step old, and the first at which it is two.
    expect(totpStep(secret, code, start + 60_000 - 1)).toBe(stepAt(start));
    expect(totpStep(secret, code, start + 60_000)).toBeNull();
    // A code of the next step is accepted one step early, not two.
    expect(totpStep(secret, totpCode(secret, start + 30_000), start)).toBe(stepAt(start) + 1);
    expect(totpStep(secret, totpCode(secret, start + 60_000), start + 30_000 - 1)).toBeNull();
  });

  it('refuses anything but six digits', () => {
    const secret = newTotpSecret();
    expect(totpStep(secret, '12345', 0)).toBeNull();
    expect(totpStep(secret, `${totpCode(secret, 0)} `, 0)).toBeNull();
  });

  it('draws the QR code here as SVG, with the secret in the otpauth URI', async () => {
    const secret = newTotpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const { uri, qr_svg } = await enrolmentOf(secret, 'ada@example.test');
    expect(uri).toContain(`secret=${secret}`);
    expect(uri).toMatch(/^otpauth:\/\/totp\/Workspace%20Service:ada%40example\.test\?/);
    expect(qr_svg).toMatch(/^<svg /);
  });
});

describe('recovery codes', () => {
  it('are 80 random bits in four groups, stored salted and hashed, forgiving of case, dashes and look-alikes', () => {
    const code = newRecoveryCode();
    expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/);
    const stored = hashRecoveryCode(code);
    expect(stored.digest).not.toContain(normalizeRecoveryCode(code));
    expect(recoveryCodeMatches(code.toLowerCase().replace(/-/g, ' '), stored)).toBe(true);
    expect(recoveryCodeMatches(newRecoveryCode(), stored)).toBe(false);
    expect(normalizeRecoveryCode('o0il-L1')).toBe('00111' + '1');
  });
});
