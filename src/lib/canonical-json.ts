/**
 * JSON with object keys sorted at every level, no spaces, and properties whose value is `undefined`
 * left out (`undefined` alone is `null`): equal JSON values give equal text, whatever their keys'
 * order. The audit log's hash chain covers it (docs/api.md#audit-log), and an idempotent request is
 * the same request when its body's text is (docs/api.md#idempotency).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}
