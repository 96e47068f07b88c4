import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets at rest (docs/settings.md#secrets-at-rest): every secret the service must read back (a webhook's
 * signing secrets, a TOTP seed, an SSO client secret, a Slack or Discord URL) is stored sealed with
 * AES-256-GCM under a key-encryption key, as `v1:<kid>:<iv>:<ciphertext>:<tag>` (base64url parts).
 * `kid` names the key (a digest of it), so more than one key can be live: the first seals, all open.
 * The column, the scope (the workspace, or the person) and the row are the associated data: a value
 * copied to another row, column or workspace does not open.
 */

/** Where a sealed value belongs: bound into it as associated data. */
export interface SealedAt {
  /** `table.column`, such as `webhooks.secret`. */
  column: string;
  /** The workspace id, or the person's email for a person's own secret. */
  scope: string;
  /** The row's key (its id). */
  row: string;
}

/** A value that cannot be opened: another key, another row, tampered, or not sealed at all. */
export class SecretsKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretsKeyError';
  }
}

export interface Sealer {
  /** The kid of the key that seals new values (the first one). */
  readonly primaryKid: string;
  /** Every live key's kid, the primary first. */
  readonly kids: readonly string[];
  seal(clear: string, at: SealedAt): string;
  /** The clear value; throws SecretsKeyError when it cannot be opened (never returns a stored value as it is). */
  open(stored: string, at: SealedAt): string;
  /** Like `open`, for a nullable column. */
  openOrNull(stored: string | null | undefined, at: SealedAt): string | null;
}

const VERSION = 'v1';
const KEY_BYTES = 32;
/** What every sealed value starts with. */
export const SEALED_VERSION_PREFIX = `${VERSION}:`;
/** The length of a kid. */
export const KID_LENGTH = 12;

/** Whether a stored value is sealed (any key); a clear value is not. */
export function isSealed(stored: string): boolean {
  return stored.startsWith(`${VERSION}:`);
}

/** The kid of a sealed value, or undefined for a clear one. */
export function kidOf(stored: string): string | undefined {
  if (!isSealed(stored)) return undefined;
  return stored.split(':')[1];
}

/** The prefix of every value sealed under `kid` (for queries: `like 'v1:<kid>:%'`). */
export function sealedPrefix(kid: string): string {
  return `${VERSION}:${kid}:`;
}

/** A key's id: the first 12 characters of the base64url SHA-256 of a label and the key; says nothing of the key. */
export function kidOfKey(key: Buffer): string {
  return createHash('sha256').update('wsvc secrets key id\0').update(key).digest('base64url').slice(0, KID_LENGTH);
}

/** A new random key, base64 (the form of SECRETS_KEY and of the key file). */
export function newSecretsKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/**
 * Keys from SECRETS_KEY's form: one or more base64 keys of 32 bytes, comma-separated, the sealing one
 * first. Throws SecretsKeyError naming `setting` (never echoing a key).
 */
export function parseSecretsKeys(value: string, setting = 'SECRETS_KEY'): Buffer[] {
  const parts = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (parts.length === 0) throw new SecretsKeyError(`${setting} holds no key`);
  return parts.map((p, i) => {
    const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(p) ? Buffer.from(p, 'base64') : Buffer.alloc(0);
    if (key.length !== KEY_BYTES) {
      throw new SecretsKeyError(
        `${setting}'s key ${i + 1} is not ${KEY_BYTES} bytes in base64 (make one with \`openssl rand -base64 32\`)`,
      );
    }
    return key;
  });
}

function aad(at: SealedAt): Buffer {
  return Buffer.from(`${VERSION}\0${at.column}\0${at.scope}\0${at.row}`, 'utf8');
}

/** How many opened values are kept in memory (a delivery's signing opens its secrets without AES once warm). */
const CACHE_MAX = 10_000;

/** A sealer over `keys` (the first seals; every one opens). */
export function createSealer(keys: readonly Buffer[]): Sealer {
  if (keys.length === 0) throw new SecretsKeyError('no secrets key');
  const byKid = new Map<string, Buffer>();
  for (const k of keys) if (!byKid.has(kidOfKey(k))) byKid.set(kidOfKey(k), k);
  const primary = keys[0] as Buffer;
  const primaryKid = kidOfKey(primary);
  // Keyed by the stored value (unique: a fresh IV each time), with where it was opened: a hit at another place is
  // no hit (it goes to AES-GCM, which refuses it).
  const opened = new Map<string, SealedAt & { clear: string }>();

  function open(stored: string, at: SealedAt): string {
    const hit = opened.get(stored);
    if (hit !== undefined && hit.row === at.row && hit.scope === at.scope && hit.column === at.column) return hit.clear;
    const parts = stored.split(':');
    if (parts.length !== 5 || parts[0] !== VERSION) {
      throw new SecretsKeyError(`${at.column} of ${at.row} is not sealed; start the service to seal stored secrets`);
    }
    const [, kid, iv, ct, tag] = parts as [string, string, string, string, string];
    const key = byKid.get(kid);
    if (!key) {
      throw new SecretsKeyError(
        `${at.column} of ${at.row} is sealed with key ${kid}, which SECRETS_KEY (or the key file) does not hold`,
      );
    }
    let clear: string;
    try {
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      d.setAAD(aad(at));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      clear = Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
    } catch {
      throw new SecretsKeyError(`${at.column} of ${at.row} does not open: moved from another row, or altered`);
    }
    if (opened.size >= CACHE_MAX) opened.clear();
    opened.set(stored, { column: at.column, scope: at.scope, row: at.row, clear });
    return clear;
  }

  return {
    primaryKid,
    kids: [...byKid.keys()],
    seal(clear, at) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', primary, iv);
      c.setAAD(aad(at));
      const ct = Buffer.concat([c.update(clear, 'utf8'), c.final()]);
      const tag = c.getAuthTag();
      return [VERSION, primaryKid, iv.toString('base64url'), ct.toString('base64url'), tag.toString('base64url')].join(
        ':',
      );
    },
    open,
    openOrNull(stored, at) {
      return stored === null || stored === undefined ? null : open(stored, at);
    },
  };
}
