const IANA_SHAPE = /^(?:[A-Za-z][A-Za-z0-9_+-]*)(?:\/[A-Za-z0-9_+-]+)*$/;
const cache = new Map<string, boolean>();

/** docs/api.md#users: whether `name` is a time zone the IANA database knows (by the runtime's ICU copy). */
export function isIanaTimezone(name: string): boolean {
  const hit = cache.get(name);
  if (hit !== undefined) return hit;
  let ok = false;
  if (IANA_SHAPE.test(name)) {
    try {
      // ICU matches names case-insensitively; require the exact spelling it resolves to, or an
      // alias that it accepts with the same case (Asia/Calcutta → Asia/Kolkata).
      const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
      ok = resolved === name || resolved.toLowerCase() !== name.toLowerCase();
    } catch {
      ok = false;
    }
  }
  if (cache.size < 10_000) cache.set(name, ok);
  return ok;
}
