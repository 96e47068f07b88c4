import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';

/**
 * A software passkey authenticator for HTTP tests: what a browser and a platform authenticator
 * answer to navigator.credentials.create() and .get() (WebAuthn level 2, "none" attestation, an
 * ES256 key, user present and verified), built from the options the server sends. The browser's
 * own (the DevTools virtual authenticator) runs in test/console/team-sign-in.test.ts; this one lets
 * the server's passkey rules run on both databases without Chromium.
 */
export interface SoftAuthenticator {
  /** The answer to navigator.credentials.create(options): a RegistrationResponseJSON. */
  create(options: RegistrationOptions, origin?: string): Record<string, unknown>;
  /** The answer to navigator.credentials.get(options): an AuthenticationResponseJSON, from `credentialId` or the first allowed or held. */
  get(options: AuthenticationOptions, opts?: { credentialId?: string; origin?: string }): Record<string, unknown>;
  /** The ids of the credentials it holds (base64url), oldest first. */
  credentials(): string[];
}

interface RegistrationOptions {
  challenge: string;
  rp: { id?: string };
  user: { id: string };
}
interface AuthenticationOptions {
  challenge: string;
  rpId?: string;
  allowCredentials?: { id: string }[];
}

interface Credential {
  id: Buffer;
  key: KeyObject;
  userHandle: string;
  counter: number;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest();

/** CBOR (RFC 8949) for what attestation objects and COSE keys hold: integers, byte and text strings, maps. */
type Cbor = number | string | Buffer | Map<Cbor, Cbor>;
function cbor(value: Cbor): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
    if (n < 0x10000) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
    const b = Buffer.alloc(5);
    b[0] = (major << 5) | 26;
    b.writeUInt32BE(n, 1);
    return b;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  const parts = [head(5, value.size)];
  for (const [k, v] of value) parts.push(cbor(k), cbor(v));
  return Buffer.concat(parts);
}

function counterBytes(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

// Flags of authenticator data: user present (0x01), user verified (0x04), attested credential data (0x40).
const UP_UV = 0x05;
const UP_UV_AT = 0x45;

export function softAuthenticator(defaultOrigin: string): SoftAuthenticator {
  const held: Credential[] = [];
  const rpIdOf = (id?: string) => id ?? new URL(defaultOrigin).hostname;
  const clientData = (type: string, challenge: string, origin: string) =>
    Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }), 'utf8');
  return {
    create(options, origin = defaultOrigin) {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const jwk = publicKey.export({ format: 'jwk' });
      const cose = cbor(
        new Map<Cbor, Cbor>([
          [1, 2], // kty: EC2
          [3, -7], // alg: ES256
          [-1, 1], // crv: P-256
          [-2, Buffer.from(jwk.x as string, 'base64url')],
          [-3, Buffer.from(jwk.y as string, 'base64url')],
        ]),
      );
      const cred: Credential = { id: randomBytes(32), key: privateKey, userHandle: options.user.id, counter: 0 };
      held.push(cred);
      const idLength = Buffer.alloc(2);
      idLength.writeUInt16BE(cred.id.length);
      const authData = Buffer.concat([
        sha256(rpIdOf(options.rp.id)),
        Buffer.from([UP_UV_AT]),
        counterBytes(cred.counter),
        Buffer.alloc(16), // AAGUID: none
        idLength,
        cred.id,
        cose,
      ]);
      const attestationObject = cbor(
        new Map<Cbor, Cbor>([
          ['fmt', 'none'],
          ['attStmt', new Map()],
          ['authData', authData],
        ]),
      );
      return {
        id: b64url(cred.id),
        rawId: b64url(cred.id),
        type: 'public-key',
        authenticatorAttachment: 'platform',
        clientExtensionResults: {},
        response: {
          clientDataJSON: b64url(clientData('webauthn.create', options.challenge, origin)),
          attestationObject: b64url(attestationObject),
          transports: ['internal'],
        },
      };
    },
    get(options, { credentialId, origin = defaultOrigin } = {}) {
      const allowed = (options.allowCredentials ?? []).map((c) => c.id);
      const cred =
        held.find((c) => b64url(c.id) === credentialId) ??
        (credentialId === undefined
          ? held.find((c) => allowed.length === 0 || allowed.includes(b64url(c.id)))
          : undefined);
      if (!cred) throw new Error('the authenticator holds no such passkey');
      cred.counter += 1;
      const authData = Buffer.concat([sha256(rpIdOf(options.rpId)), Buffer.from([UP_UV]), counterBytes(cred.counter)]);
      const data = clientData('webauthn.get', options.challenge, origin);
      const signature = sign('sha256', Buffer.concat([authData, sha256(data)]), cred.key);
      return {
        id: b64url(cred.id),
        rawId: b64url(cred.id),
        type: 'public-key',
        authenticatorAttachment: 'platform',
        clientExtensionResults: {},
        response: {
          clientDataJSON: b64url(data),
          authenticatorData: b64url(authData),
          signature: b64url(signature),
          userHandle: cred.userHandle,
        },
      };
    },
    credentials: () => held.map((c) => b64url(c.id)),
  };
}
