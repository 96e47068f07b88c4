/** Largest request body kept in the request log, in bytes (docs/usage.md#request-log). */
export const MAX_LOGGED_BODY_BYTES = 8 * 1024;

const REDACTED = '[redacted]';
/** Field names whose values are never stored, whatever they look like. */
const SECRET_FIELD = /pass(word)?|secret|token|authorization|api[_-]?key|credential|^key$/i;
/** A JSON member whose name says secret, in text that may not parse: its string value goes. */
const SECRET_MEMBER =
  /("(?:[^"\\]*(?:pass(?:word)?|secret|token|authorization|api[_-]?key|credential)[^"\\]*|key)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi;
/** Values that look like a key or a secret wherever they appear, inside strings too. */
const SECRET_VALUE =
  /svc_(live|test)_[A-Za-z0-9]+|whsec_[A-Za-z0-9+/=_-]+|sk_(live|test)_[A-Za-z0-9]+|Bearer\s+[^\s"]+/g;

/**
 * The body to log: secret fields and secret-looking values replaced, cut to 8 KiB; null for none.
 * A string is the body as received (it may not be JSON): secret members and values are replaced in the text.
 */
export function loggableBody(body: unknown): string | null {
  if (body === undefined || body === null || body === '') return null;
  const text =
    typeof body === 'string' ? body.replace(SECRET_MEMBER, `$1"${REDACTED}"`) : JSON.stringify(redactFields(body, 0));
  const clean = text.replace(SECRET_VALUE, REDACTED);
  if (Buffer.byteLength(clean) <= MAX_LOGGED_BODY_BYTES) return clean;
  // Cut on a character boundary: the last partial UTF-8 sequence is dropped.
  return Buffer.from(clean)
    .subarray(0, MAX_LOGGED_BODY_BYTES)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}

function redactFields(value: unknown, depth: number): unknown {
  if (depth > 64 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactFields(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_FIELD.test(k) && v !== null && v !== '' ? REDACTED : redactFields(v, depth + 1);
  }
  return out;
}
