/** Largest request body kept in the request log, in bytes (docs/usage.md#request-log). */
export const MAX_LOGGED_BODY_BYTES = 8 * 1024;
/** Longest path kept in the request log, in characters. */
const MAX_LOGGED_PATH = 2048;

const REDACTED = '[redacted]';
/** Parts of a member name that say secret wherever they appear in it (`newPassword`, `clientsecret`, `x-api-key`). */
const SECRET_STEM = /passw|passphrase|pwd|secret|token|credential|cookie|authoriz|api[_-]?key|privatekey/i;
/** Words that say secret when they stand alone in a member name (`key`, `private_key`, `sessionId`, `pin_code`). */
const SECRET_WORDS = new Set(['pass', 'key', 'keys', 'auth', 'session', 'sid', 'otp', 'pin', 'private', 'signature']);
/** A name's words: split at anything but letters and digits, and where a lower-case letter meets an upper-case one. */
const WORD_BREAK = /[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])/;
/** Values that look like a key or a secret wherever they appear, inside strings too. */
const SECRET_VALUE =
  /\b(?:svc|wsk)_(?:live|test)_[A-Za-z0-9]+|whsec_[A-Za-z0-9+/=_-]+|sk_(?:live|test)_[A-Za-z0-9]+|\b(?:Bearer|Basic)\s+[^\s"\\]+/g;
/** The user-info of a URL (`https://ada:pw@host`, `https://token@host`), JSON's escaped `\/` included. */
const URL_USER_INFO = /\b([a-z][a-z0-9+.-]*:(?:\\?\/){2})[^/\\?#@\s"]+@/gi;
/** A path segment that is a 256-bit token (sessions, links): 43 base64url characters. */
const TOKEN_SEGMENT = /^[A-Za-z0-9_-]{43}$/;

/** Whether a member name says secret (docs/usage.md#request-log): its value is never kept. */
export function isSecretName(name: string): boolean {
  return SECRET_STEM.test(name) || name.split(WORD_BREAK).some((w) => SECRET_WORDS.has(w.toLowerCase()));
}

/**
 * The body to log: the values of members named like a secret, URL user-info and secret-looking
 * values replaced, cut to 8 KiB; null for none. A string is the body as received (it may not be
 * JSON): it is redacted as text, so its form is kept.
 */
export function loggableBody(body: unknown): string | null {
  if (body === undefined || body === null || body === '') return null;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const clean = redactMembers(text).replace(URL_USER_INFO, `$1${REDACTED}@`).replace(SECRET_VALUE, REDACTED);
  if (Buffer.byteLength(clean) <= MAX_LOGGED_BODY_BYTES) return clean;
  // Cut on a character boundary: the last partial UTF-8 sequence is dropped.
  return Buffer.from(clean)
    .subarray(0, MAX_LOGGED_BODY_BYTES)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}

/**
 * The path to log, without its query string (never kept): a segment that is or holds a key, a
 * webhook secret or a 256-bit token, once %-decoded, becomes `[redacted]`.
 */
export function loggablePath(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return path
    .split('/')
    .map((segment) => (secretSegment(segment) ? REDACTED : segment))
    .join('/')
    .slice(0, MAX_LOGGED_PATH);
}

function secretSegment(segment: string): boolean {
  if (segment === '') return false;
  let decoded = segment;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    // Broken %-encoding: checked as it came.
  }
  SECRET_VALUE.lastIndex = 0;
  return TOKEN_SEGMENT.test(decoded) || SECRET_VALUE.test(decoded) || decoded.includes('@');
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN = new Set([0x7b, 0x5b]);
const CLOSE = new Set([0x7d, 0x5d]);
const SCALAR_END = new Set([0x2c, 0x7d, 0x5d, 0x20, 0x09, 0x0a, 0x0d]);
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** Index just past the string whose opening quote is at `i` (or the end of a cut-off text). */
function endOfString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === BACKSLASH) j++;
    else if (c === QUOTE) return j + 1;
  }
  return text.length;
}

/** Index just past the value starting at `i`: a string, a balanced object or array, or a scalar. */
function endOfValue(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === QUOTE) return endOfString(text, i);
  if (!OPEN.has(first)) {
    let j = i;
    while (j < text.length && !SCALAR_END.has(text.charCodeAt(j))) j++;
    return j;
  }
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) j = endOfString(text, j) - 1;
    else if (OPEN.has(c)) depth++;
    else if (CLOSE.has(c) && --depth === 0) return j + 1;
  }
  return text.length;
}

function memberName(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

/**
 * Replaces the value of every member named like a secret with `"[redacted]"` in JSON text, valid
 * or not: one pass over the text, no parsing, no recursion (a value is skipped by counting brackets).
 * `null` and `""` are kept: they show a secret that was left out, not one given.
 */
function redactMembers(text: string): string {
  let out = '';
  let copied = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) !== QUOTE) continue;
    const end = endOfString(text, i);
    let j = end;
    while (j < text.length && isSpace(text.charCodeAt(j))) j++;
    if (text.charCodeAt(j) !== COLON || !isSecretName(memberName(text.slice(i + 1, end - 1)))) {
      i = end - 1;
      continue;
    }
    j++;
    while (j < text.length && isSpace(text.charCodeAt(j))) j++;
    const valueEnd = endOfValue(text, j);
    const value = text.slice(j, valueEnd);
    if (j < text.length && value !== 'null' && value !== '""') {
      out += `${text.slice(copied, j)}"${REDACTED}"`;
      copied = valueEnd;
    }
    i = Math.max(valueEnd, end) - 1;
  }
  return copied === 0 ? text : out + text.slice(copied);
}
