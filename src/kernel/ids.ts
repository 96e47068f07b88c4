import { randomBytes } from 'node:crypto';

/** Id prefixes. */
export const ID_PREFIX = {
  workspace: 'ws_',
  user: 'usr_',
  resource: 'res_',
  webhook: 'wh_',
  event: 'evt_',
  delivery: 'dlv_',
  key: 'key_',
  request: 'req_',
  session: 'ses_',
  notification: 'ntf_',
  mail: 'mail_',
  invoice: 'inv_',
  subscriptionChange: 'sbc_',
  integration: 'int_',
  integrationMessage: 'imsg_',
  passkey: 'pk_',
  recoveryCode: 'rc_',
  audit: 'aud_',
  operatorDelivery: 'odlv_',
  export: 'exp_',
} as const;
export type IdKind = keyof typeof ID_PREFIX;

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

// Performance (docs/performance.md#request-ids-and-loggers): the `ulid` package asks the CSPRNG for every character (16 calls per id, ~4 % of a GET by
// id under load, for its request id). Same format, from a pooled buffer of CSPRNG bytes instead.
let pool = Buffer.alloc(0);
let poolAt = 0;
function randomPart(): string {
  if (poolAt + 16 > pool.length) {
    pool = randomBytes(4096);
    poolAt = 0;
  }
  let s = '';
  // 256 is a multiple of 32: the low 5 bits of a uniform byte are uniform.
  for (let i = 0; i < 16; i++) s += CROCKFORD[(pool[poolAt++] as number) & 31];
  return s;
}

function encodeTime(ms: number): string {
  let s = '';
  for (let i = 0; i < 10; i++) {
    s = CROCKFORD[ms % 32] + s;
    ms = Math.floor(ms / 32);
  }
  return s;
}

/** The random part plus one, in base 32 (monotonic ids within one millisecond). */
function increment(part: string): string {
  const chars = part.split('');
  for (let i = chars.length - 1; i >= 0; i--) {
    const v = CROCKFORD.indexOf(chars[i] as string);
    if (v < 31) {
      chars[i] = CROCKFORD[v + 1] as string;
      return chars.join('');
    }
    chars[i] = '0';
  }
  throw new Error('id random part overflow within one millisecond');
}

let lastTime = -1;
let lastTimeText = '';
let lastRandom = '';

/** A ULID: 48-bit time then 80 random bits, strictly increasing within this process (like ulid's monotonicFactory). */
export function ulid(now: number = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = increment(lastRandom);
    return lastTimeText + lastRandom;
  }
  lastTime = now;
  lastTimeText = encodeTime(now);
  lastRandom = randomPart();
  return lastTimeText + lastRandom;
}

/** A new id: prefix + ULID (time-sortable, monotonic within this process). */
export function newId(kind: IdKind, now: number = Date.now()): string {
  return ID_PREFIX[kind] + ulid(now);
}

const COUNTER_CHARS = 8;
const COUNTER_LIMIT = 32 ** COUNTER_CHARS;

/**
 * Performance (docs/performance.md#request-ids-and-loggers): request ids without a ULID per request. `req_` + 26 Crockford
 * characters, like every id (docs/api.md#ids):
 * an 18-character prefix made once (the time this generator started, then 40 bits from the CSPRNG) and
 * an 8-character counter. Two processes differ in their prefix (same start millisecond and the same 40
 * random bits: about one chance in 10^12); one generator counts 32^8 requests before taking a new prefix.
 * Ids of one generator sort in the order they were made.
 */
export function requestIdGenerator(now: () => number = Date.now): () => string {
  let prefix = '';
  let n = COUNTER_LIMIT;
  return () => {
    if (n >= COUNTER_LIMIT) {
      prefix = ID_PREFIX.request + encodeTime(now()) + randomPart().slice(0, 8);
      n = 0;
    }
    let v = n++;
    let tail = '';
    for (let i = 0; i < COUNTER_CHARS; i++) {
      tail = CROCKFORD[v & 31] + tail;
      v = Math.floor(v / 32);
    }
    return prefix + tail;
  };
}

const ULID_RE = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** Whether `value` has the shape of an id of `kind` (used to 404 early without a query). */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = ID_PREFIX[kind];
  return value.startsWith(prefix) && ULID_RE.test(value.slice(prefix.length));
}
