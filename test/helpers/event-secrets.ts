import type { TSchema } from '@sinclair/typebox';

/**
 * What an event must never carry (docs/api.md#platform-events): key material, a webhook secret, a token, a link,
 * a password or any hash or digest. Used on every type's schema and example (test/events/no-secrets.test.ts) and on
 * every event a real receiver got (test/events/platform-events.test.ts).
 */
const FORBIDDEN_NAME =
  /secret|token|passw|hash|digest|plaintext|prefix|signature|cookie|totp|otp_|salt|url|link|credential/i;
const FORBIDDEN_VALUE: [string, RegExp][] = [
  ['an API key', /svc_(live|test)_/],
  ['a webhook secret', /whsec_/],
  ['a hex digest', /\b[0-9a-f]{40,}\b/i],
  ['a password hash', /\$(argon2|2[aby]\$|scrypt)/],
  ['a link', /\bhttps?:\/\//i],
  ['a bearer token', /bearer\s/i],
];

/** The problems of a `data` schema: a property whose name says it holds a secret, or a `key` that is a string. */
export function schemaSecrets(schema: TSchema, path = 'data'): string[] {
  const problems: string[] = [];
  const s = schema as Record<string, unknown>;
  const props = (s.properties ?? {}) as Record<string, TSchema>;
  for (const [name, sub] of Object.entries(props)) {
    const at = `${path}.${name}`;
    if (FORBIDDEN_NAME.test(name)) problems.push(`${at}: its name says it holds a secret`);
    if (name === 'key' && (sub as { type?: string }).type === 'string') problems.push(`${at}: key material`);
    problems.push(...schemaSecrets(sub, at));
  }
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) {
    for (const sub of (s[k] ?? []) as TSchema[]) problems.push(...schemaSecrets(sub, path));
  }
  if (s.items) problems.push(...schemaSecrets(s.items as TSchema, `${path}[]`));
  if (s.additionalProperties && typeof s.additionalProperties === 'object')
    problems.push(...schemaSecrets(s.additionalProperties as TSchema, `${path}.*`));
  return problems;
}

/** The problems of a value (an example or a delivered event's `data`): secret-looking names or values. */
export function valueSecrets(value: unknown, path = 'data'): string[] {
  if (typeof value === 'string') {
    return FORBIDDEN_VALUE.filter(([, re]) => re.test(value)).map(([what]) => `${path}: looks like ${what}`);
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => valueSecrets(v, `${path}[${i}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([name, v]) => [
    ...(FORBIDDEN_NAME.test(name) ? [`${path}.${name}: its name says it holds a secret`] : []),
    ...(name === 'key' && typeof v === 'string' ? [`${path}.${name}: key material`] : []),
    ...valueSecrets(v, `${path}.${name}`),
  ]);
}
