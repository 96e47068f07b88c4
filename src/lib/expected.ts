/**
 * What a schema accepts, in words, for error messages that name the fix (docs/api.md#validation):
 * `one of: active, archived`, `an email address such as name@example.com`. Shared by the HTTP
 * validator, the CLI's checks and the settings parser, so all three say it the same way.
 */

type Schema = Record<string, unknown>;

const FORMATS: Record<string, string> = {
  email: 'an email address such as name@example.com',
  uri: 'an absolute URL such as https://example.com/hooks',
  'date-time': 'a date and time in ISO 8601 with a zone, such as 2026-11-22T10:15:30.123Z',
  int32: 'a whole number',
  int64: 'a whole number',
};

const TYPES: Record<string, string> = {
  string: 'a string',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** The allowed values of an enum, a const or a union of consts; undefined for other schemas. */
export function allowedValues(schema: Schema): unknown[] | undefined {
  if (Array.isArray(schema.enum)) return schema.enum;
  if ('const' in schema) return [schema.const];
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (!Array.isArray(branches)) return undefined;
  const values = branches.map(allowedValues);
  return values.every((v) => v !== undefined) ? values.flat() : undefined;
}

/** "one of: a, b", a format or form in words, or the accepted types; undefined when unknown. */
export function expected(schema: Schema | undefined): string | undefined {
  if (!schema) return undefined;
  if (typeof schema['x-expected'] === 'string') return schema['x-expected'];
  const values = allowedValues(schema);
  if (values) return values.length === 1 ? JSON.stringify(values[0]) : `one of: ${values.join(', ')}`;
  if (typeof schema.format === 'string' && FORMATS[schema.format]) return FORMATS[schema.format];
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (Array.isArray(branches)) {
    const parts = branches.map(expected).filter((p): p is string => p !== undefined);
    return parts.length === branches.length ? [...new Set(parts)].join(' or ') : undefined;
  }
  if (typeof schema.type === 'string') {
    const type = TYPES[schema.type] ?? schema.type;
    const { minimum, maximum } = schema as { minimum?: number; maximum?: number };
    if (minimum !== undefined && maximum !== undefined) return `${type} from ${minimum} to ${maximum}`;
    if (minimum !== undefined) return `${type} of at least ${minimum}`;
    return type;
  }
  return undefined;
}
