import { Ajv, type ErrorObject } from 'ajv';
import ajvFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { type ErrorDetail, ValidationError } from '../kernel/errors.js';
import { allowedValues, expected } from '../lib/expected.js';

// ajv-formats is CommonJS with `exports.default`; under NodeNext its default import is the module.
const addFormats = ajvFormats.default;

function makeAjv(coerceTypes: boolean | 'array') {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    // docs/api.md#validation: unknown fields are refused, never silently dropped.
    removeAdditional: false,
    allErrors: true,
    // Errors carry their schema, so messages can name the allowed values (lib/expected.ts).
    verbose: true,
    strict: false,
  });
  addFormats(ajv);
  return ajv;
}

/**
 * Bodies are validated without type coercion (docs/api.md#errors: `"name": 123` is a 400, not "123"); query
 * strings and path params, which are always text, are coerced to the schema's types.
 */
export function installValidators(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => {
    // One compile per distinct schema of a request part, kept for the process: the same schemas
    // recur across routes, and an app built again in one process (tests) reuses them (src/http/serializers.ts says why).
    const key = `${httpPart}:${JSON.stringify(schema)}`;
    let validate = validators.get(key);
    if (!validate) {
      validate = compileValidator(schema, httpPart);
      validators.set(key, validate);
    }
    return validate;
  });
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv('array');
const validators = new Map<string, ReturnType<typeof compileValidator>>();

function compileValidator(schema: unknown, httpPart: string | undefined) {
  if (httpPart === 'body') return bodyAjv.compile(schema as object);
  if (httpPart === 'params') return textAjv.compile(withoutStringForms(schema) as object);
  const validate = textAjv.compile(schema as object);
  if (httpPart !== 'querystring') return validate;
  return storableQuery(strictIntegers(schema as QuerySchema, validate));
}

/**
 * docs/api.md#validation: nothing is silently ignored. An authenticated route that declares no body schema takes no
 * body (empty or `{}` only), and one that declares no query schema takes no query parameters;
 * anything else is a 400 naming each field, like a declared schema's `additionalProperties`.
 * One hook for every route, including routes added later. It runs after the declared schemas
 * (so the parts are still checked path, body, query) and must be installed before the
 * idempotency hook, so that a refused request claims no `Idempotency-Key` (docs/api.md#idempotency).
 */
export function installNoUndeclaredInput(app: FastifyInstance): void {
  // Callback style: no promise per request for a synchronous check (docs/performance.md#callback-style-hooks).
  app.addHook('preHandler', (request, _reply, done) => {
    if (!request.routeOptions.config?.scope) return done();
    const schema = request.routeOptions.schema ?? {};
    if (schema.body === undefined && request.body !== undefined) {
      const details = undeclared(request.body, 'body');
      if (details.length > 0) return done(invalidPart('body', details));
    }
    if (schema.querystring === undefined) {
      const details = undeclared(request.query, 'query');
      if (details.length > 0) return done(invalidPart('query', details));
    }
    done();
  });
}

/** The error for one request part (`body`, `query`, `params`) with its details. */
export function invalidPart(where: string, details: ErrorDetail[]): ValidationError {
  return new ValidationError(`The ${where} has ${details.length} invalid value(s).`, details);
}

/** Details for a part that must be empty: each key is an unknown field; a non-object, the part itself. */
function undeclared(value: unknown, root: string): ErrorDetail[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return [{ field: root, issue: 'invalid_type', message: `${root} must be empty or {}.` }];
  }
  const errors: ErrorObject[] = Object.keys(value).map((key) => ({
    keyword: 'additionalProperties',
    instancePath: '',
    schemaPath: '#/additionalProperties',
    params: { additionalProperty: key },
  }));
  return toDetails(errors, root);
}

/**
 * Path ids document their form (pattern, length) in the schema, but a path id that does not have
 * it names nothing: the service answers 404 `not_found`, the same as for an unknown id
 * (docs/api.md#ids), instead of a 400 that would tell ids of other kinds apart.
 */
function withoutStringForms(schema: unknown): unknown {
  const s = schema as { properties?: Record<string, Record<string, unknown>> };
  if (!s.properties) return schema;
  const properties = Object.fromEntries(
    Object.entries(s.properties).map(([name, { pattern: _p, minLength: _min, maxLength: _max, ...rest }]) => [
      name,
      rest,
    ]),
  );
  return { ...s, properties };
}

type QuerySchema = { properties?: Record<string, { type?: unknown }> };
type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };
const DECIMAL_INTEGER = /^-?(0|[1-9][0-9]*)$/;

/**
 * docs/api.md#lists-and-paging: integer query values must be written as plain decimal integers. Ajv's coercion alone
 * would also take `0x10`, `1e1` or ` 5`; those are 400s here, like `1.5` and `abc`.
 */
function strictIntegers(schema: QuerySchema, validate: Validator): Validator {
  const integers = Object.entries(schema.properties ?? {})
    .filter(([, p]) => p.type === 'integer')
    .map(([name]) => name);
  if (integers.length === 0) return validate;
  const wrapped: Validator = (data) => {
    const query = (data ?? {}) as Record<string, unknown>;
    const badNames = integers.filter(
      (name) => typeof query[name] === 'string' && !DECIMAL_INTEGER.test(query[name] as string),
    );
    const errors: ErrorObject[] = badNames.map((name) => ({
      keyword: 'type',
      instancePath: `/${name}`,
      schemaPath: `#/properties/${name}/type`,
      params: { type: 'integer' },
      message: 'must be a decimal integer',
    }));
    // docs/api.md#errors: one detail per problem, so the schema's own checks run too; a value already refused
    // above is not reported twice (Ajv may even have coerced it, e.g. `0x10` to 16).
    const ok = validate(data);
    const bad = new Set(badNames.map((name) => `/${name}`));
    errors.push(...(validate.errors ?? []).filter((e) => !bad.has(e.instancePath)));
    wrapped.errors = errors.length > 0 ? errors : validate.errors;
    return ok && badNames.length === 0;
  };
  return wrapped;
}

/**
 * docs/api.md#validation: a query value with a NUL character or a lone surrogate is a 400 naming it, as in a
 * body: such a string can reach no query (PostgreSQL refuses NUL in text) and matches nothing stored.
 */
function storableQuery(validate: Validator): Validator {
  const wrapped: Validator = (data) => {
    const ok = validate(data);
    const query = (data ?? {}) as Record<string, unknown>;
    const bad = Object.keys(query).filter((name) => {
      const v = query[name];
      return (Array.isArray(v) ? v : [v]).some((x) => typeof x === 'string' && unstorable(x));
    });
    const errors: ErrorObject[] = bad.map((name) => ({
      keyword: 'invalid_character',
      instancePath: `/${name}`,
      schemaPath: '#',
      params: {},
      message: 'contains a NUL character or a lone surrogate',
    }));
    wrapped.errors = errors.length > 0 ? [...errors, ...(validate.errors ?? [])] : validate.errors;
    return ok && errors.length === 0;
  };
  return wrapped;
}

/** Keywords whose failure is best told by what the schema accepts (`must be one of: …`). */
const NAMED_KEYWORDS = new Set(['enum', 'const', 'anyOf', 'format', 'pattern', 'type']);

const ISSUES: Record<string, string> = {
  required: 'required',
  additionalProperties: 'unknown_field',
  maxLength: 'too_long',
  minLength: 'too_short',
  maxItems: 'too_many',
  minItems: 'too_few',
  maxProperties: 'too_many',
  uniqueItems: 'duplicate',
  type: 'invalid_type',
  enum: 'invalid_value',
  const: 'invalid_value',
  anyOf: 'invalid_value',
  minimum: 'out_of_range',
  maximum: 'out_of_range',
  exclusiveMinimum: 'out_of_range',
  exclusiveMaximum: 'out_of_range',
  multipleOf: 'invalid_value',
  pattern: 'invalid_format',
  format: 'invalid_format',
  propertyNames: 'invalid_key',
  invalid_character: 'invalid_character',
};

/** Maps Ajv errors to error `details`, one per problem, with dotted field paths (`root`: the whole part). */
export function toDetails(errors: ErrorObject[], root = 'body'): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  const seen = new Set<string>();
  // Errors from inside propertyNames carry the key name and say what is wrong with it; the
  // propertyNames error that follows reports it once, with that reason.
  const keyProblems = new Map<string, ErrorObject>();
  for (const e of errors) if (e.propertyName !== undefined) keyProblems.set(e.propertyName, e);
  // A union (anyOf) fails with one error per branch and then its own: report the union once, unless
  // the value has the type of exactly one branch (`label: "a\nb"` against string-or-null): then that
  // branch's own errors say what is wrong.
  const { unions, promoted } = unionErrors(errors);
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    if (!promoted.has(e) && unions.some((u) => e.schemaPath.startsWith(u))) continue;
    if (e.keyword === 'anyOf' && !unions.includes(`${e.schemaPath}/`)) continue;
    if (e.propertyName !== undefined) continue;
    let path = e.instancePath
      .split('/')
      .slice(1)
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    let message: string;
    let issue: string | undefined;
    if (e.keyword === 'required') {
      path = [...path, String(e.params.missingProperty)];
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      path = [...path, String(e.params.additionalProperty)];
      message = 'is not a field this endpoint accepts';
    } else if (e.keyword === 'propertyNames') {
      const key = String(e.params.propertyName);
      const inner = keyProblems.get(key);
      const problem = inner?.keyword;
      if (key === '' || problem === 'minLength') {
        // An empty key cannot be named as `metadata.`; the field is the object itself.
        issue = 'empty_key';
        message = 'has an empty key; keys must be at least 1 character';
      } else {
        path = [...path, key];
        issue = problem === 'maxLength' ? 'key_too_long' : 'invalid_key';
        message =
          problem === 'maxLength' ? `is a key longer than ${inner?.params.limit} characters` : 'is not an allowed key';
      }
    } else {
      const schema = (e.parentSchema ?? {}) as Record<string, unknown>;
      const words = NAMED_KEYWORDS.has(e.keyword) ? expected(schema) : undefined;
      if (e.keyword === 'pattern' && typeof schema['x-issue'] === 'string') {
        // A pattern that stands for one rule names its own issue and form (kernel/schemas.ts, SingleLine: control_character).
        issue = schema['x-issue'];
        message = `must be ${schema['x-issue-expected']}`;
      } else if (e.keyword === 'pattern' && typeof schema['x-expected'] !== 'string')
        message = 'is not in the expected form';
      else message = words ? `must be ${words}` : (e.message ?? 'is invalid');
      if (e.keyword === 'anyOf' && !allowedValues((e.parentSchema ?? {}) as Record<string, unknown>)) {
        issue = 'invalid_type';
      }
    }
    const field = path.join('.') || root;
    issue ??= ISSUES[e.keyword] ?? 'invalid_value';
    const key = `${field}|${issue}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ field, issue, message: `${field} ${message}.` });
  }
  return out;
}

/**
 * The schema paths (with a trailing `/`) of the unions to report once, and the branch errors to
 * report instead of their union: those of the one branch that failed on something other than its type.
 */
function unionErrors(errors: ErrorObject[]): { unions: string[]; promoted: Set<ErrorObject> } {
  const unions: string[] = [];
  const promoted = new Set<ErrorObject>();
  for (const u of errors.filter((e) => e.keyword === 'anyOf')) {
    const prefix = `${u.schemaPath}/`;
    const branches = new Map<string, ErrorObject[]>();
    for (const e of errors) {
      if (!e.schemaPath.startsWith(prefix) || e.instancePath !== u.instancePath) continue;
      const branch = e.schemaPath.slice(prefix.length).split('/')[0] ?? '';
      branches.set(branch, [...(branches.get(branch) ?? []), e]);
    }
    const typed = [...branches.values()].filter((list) => list.every((e) => e.keyword !== 'type'));
    const [only] = typed;
    if (typed.length === 1 && only) for (const e of only) promoted.add(e);
    else unions.push(prefix);
  }
  return { unions, promoted };
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** A string no database here stores as sent: one with a NUL character or a lone surrogate. */
const unstorable = (s: string) => s.includes('\u0000') || LONE_SURROGATE.test(s);

/**
 * Strings are stored exactly as sent (docs/api.md#validation), which a NUL character or a lone
 * UTF-16 surrogate cannot be (a text column of one of the databases refuses NUL; both store UTF-8).
 * One detail per offending string or key, in document order. An explicit stack, not recursion: the
 * depth of a body never reaches the call stack.
 */
export function unstorableStrings(value: unknown): ErrorDetail[] {
  const bad = unstorable;
  const field = (p: readonly string[]) => p.join('.') || 'body';
  const out: ErrorDetail[] = [];
  // Each item is a value to look at, or a key's detail to report when reached (document order).
  type Item = { value: unknown; path: readonly string[] } | { detail: ErrorDetail };
  const stack: Item[] = [{ value, path: [] }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    if ('detail' in item) {
      out.push(item.detail);
      continue;
    }
    const { value: v, path } = item;
    if (typeof v === 'string') {
      if (bad(v)) {
        const message = `${field(path)} contains a NUL character or a lone surrogate.`;
        out.push({ field: field(path), issue: 'invalid_character', message });
      }
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    const isArray = Array.isArray(v);
    const entries: [string, unknown][] = isArray ? v.map((x, i) => [String(i), x]) : Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, child] = entries[i] as [string, unknown];
      stack.push({ value: child, path: [...path, k] });
      if (!isArray && bad(k)) {
        const message = `${field(path)} has a key with a NUL character or a lone surrogate.`;
        stack.push({ detail: { field: field(path), issue: 'invalid_character', message } });
      }
    }
  }
  return out;
}
