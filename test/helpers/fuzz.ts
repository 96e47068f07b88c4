import fc from 'fast-check';

/**
 * fast-check arbitraries derived from the served OpenAPI document: for each operation, requests
 * whose path ids, query parameters, headers and bodies come from the operation's own schemas,
 * mixed with boundary values (min-1, max+1, empty, too long) and hostile input (wrong types,
 * unknown fields, random JSON, broken JSON, other content types, other methods, bad keys).
 */

// biome-ignore lint/suspicious/noExplicitAny: walks an untyped JSON document
type Json = Record<string, any>;
export interface FuzzOperation {
  method: string;
  path: string;
  op: Json;
}
export interface FuzzRequest {
  operation: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}
export interface FuzzContext {
  doc: Json;
  /** Real ids by prefix (`res_`, `wh_`, …), refreshed as the run creates objects. */
  ids: Map<string, string[]>;
  /** Authorization header values: valid keys of several roles and environments, and bad ones. */
  auth: string[];
}

const MAX_STRING = 300;

/** encodeURIComponent, with lone surrogates sent as the raw bytes a broken client would send. */
function encode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return s.replace(/[\ud800-\udfff]/g, '%ED%A0%80').replace(/[^%\w.~-]/g, (c) => encodeURIComponent(c));
  }
}

function deref(doc: Json, schema: Json): Json {
  let s = schema;
  while (s && typeof s.$ref === 'string') {
    s = s.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: Json, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return s ?? {};
}

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '%',
    '../..',
    '\u0000',
    '\ud800',
    'null',
    '0',
    '-1',
    '1e1',
    '0x10',
    '<script>',
    "' OR 1=1 --",
  ),
);

/** Values for a JSON schema: mostly valid, some at or past the boundaries, some of the wrong type. */
export function anyValueOf(doc: Json, raw: Json, depth = 0): fc.Arbitrary<unknown> {
  const schema = deref(doc, raw);
  const wrong = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    hostileString,
    fc.constant([]),
    fc.constant({}),
  );
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return fc.oneof(...branches.map((b: Json) => anyValueOf(doc, b, depth + 1)));
  if (schema.const !== undefined) return fc.oneof({ weight: 5, arbitrary: fc.constant(schema.const) }, wrong);
  if (schema.enum) return fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...schema.enum) }, wrong);
  switch (schema.type) {
    case 'string':
      return fc.oneof({ weight: 6, arbitrary: stringOf(schema) }, { weight: 1, arbitrary: wrong });
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? -1_000_000;
      const max = schema.maximum ?? 1_000_000;
      return fc.oneof(
        { weight: 6, arbitrary: fc.integer({ min: Math.max(min, -1e9), max: Math.min(max, 1e9) }) },
        fc.constantFrom(min - 1, max + 1, 2 ** 53, 0.5),
        wrong,
      );
    }
    case 'boolean':
      return fc.oneof(fc.boolean(), wrong);
    case 'array': {
      const maxItems = Math.min((schema.maxItems ?? 10) + 1, 60);
      return fc.oneof(
        { weight: 6, arbitrary: fc.array(anyValueOf(doc, schema.items ?? {}, depth + 1), { maxLength: maxItems }) },
        wrong,
      );
    }
    case 'object':
      return depth > 4 ? fc.constant({}) : objectOf(doc, schema, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringOf(schema: Json): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 64, MAX_STRING);
  const options: fc.Arbitrary<string>[] = [
    fc.string({ minLength: min, maxLength: max }),
    fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 80) }),
  ];
  if (schema.pattern) options.push(fc.stringMatching(new RegExp(schema.pattern)));
  if (schema.format === 'email') options.push(fc.emailAddress());
  if (schema.format === 'date-time') options.push(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));
  if (schema.format === 'uri') options.push(fc.webUrl({ validSchemes: ['https', 'http'] }));
  if (schema.maxLength) options.push(fc.constantFrom('x'.repeat(schema.maxLength), 'x'.repeat(schema.maxLength + 1)));
  options.push(hostileString);
  return fc.oneof(...options);
}

function objectOf(doc: Json, schema: Json, depth: number): fc.Arbitrary<unknown> {
  const props: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, p] of Object.entries<Json>(schema.properties ?? {})) props[name] = anyValueOf(doc, p, depth + 1);
  const known = fc.record(props, { requiredKeys: [] });
  const extra =
    schema.additionalProperties && typeof schema.additionalProperties === 'object'
      ? fc.dictionary(
          stringOf(schema.propertyNames ?? { maxLength: 41 }),
          anyValueOf(doc, schema.additionalProperties, depth + 1),
          {
            maxKeys: Math.min((schema.maxProperties ?? 5) + 1, 60),
          },
        )
      : fc.constant({});
  const unknown = fc.oneof(
    { weight: 8, arbitrary: fc.constant({}) },
    fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
  );
  return fc.tuple(known, extra, unknown).map(([k, e, u]) => ({ ...(u as Json), ...(e as Json), ...(k as Json) }));
}

/** Real and pattern-made ids go in as they are; hostile ones were encoded (or left raw) already. */
const encodePathValue = (v: string) => (/^[\w%.~-]*$/.test(v) ? v : encode(v));

/** Values that satisfy the schema, so that requests also reach the handlers and succeed. */
export function validValueOf(doc: Json, raw: Json, name = '', depth = 0): fc.Arbitrary<unknown> {
  const schema = deref(doc, raw);
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return fc.oneof(...branches.map((b: Json) => validValueOf(doc, b, name, depth + 1)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'string': {
      if (name === 'url') return fc.webUrl({ validSchemes: ['https'] }).filter((u) => u.length <= 2048);
      if (name === 'timezone') return fc.constantFrom('UTC', 'Europe/Paris', 'America/Argentina/Buenos_Aires');
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
      const min = schema.minLength ?? 0;
      return fc.string({
        unit: 'grapheme-ascii',
        minLength: Math.max(min, 1),
        maxLength: Math.min(schema.maxLength ?? 40, 40),
      });
    }
    case 'integer':
    case 'number':
      return fc.integer({ min: Math.max(schema.minimum ?? 0, -1e6), max: Math.min(schema.maximum ?? 1000, 1e6) });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.uniqueArray(validValueOf(doc, schema.items ?? {}, name, depth + 1), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 5, 5),
        selector: (v) => JSON.stringify(v),
      });
    case 'object': {
      const props: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, p] of Object.entries<Json>(schema.properties ?? {}))
        props[key] = validValueOf(doc, p, key, depth + 1);
      const extra =
        schema.additionalProperties && typeof schema.additionalProperties === 'object' && depth < 4
          ? fc.dictionary(
              fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 20 }),
              validValueOf(doc, schema.additionalProperties, '', depth + 1),
              { maxKeys: 5 },
            )
          : fc.constant({});
      return fc
        .tuple(fc.record(props, { requiredKeys: schema.required ?? [] }), extra)
        .map(([k, e]) => ({ ...(e as Json), ...(k as Json) }));
    }
    default:
      return fc.constant(null);
  }
}

/** A JSON text nested `depth` levels deep. */
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

const hostileBody = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null'),
  fc.integer({ min: 1, max: 60 }).map(nested),
  fc.constantFrom(
    '{',
    '{"a":1,}',
    "{'a':1}",
    'nul',
    '{"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{}}}',
    '\u0000',
  ),
  fc.string({ maxLength: 50 }),
);

function pathParam(ctx: FuzzContext, schema: Json): fc.Arbitrary<string> {
  const prefix = /^\^([a-z]+_)/.exec(schema.pattern ?? '')?.[1];
  const real = prefix ? (ctx.ids.get(prefix) ?? []) : [];
  const others = [...ctx.ids.values()].flat();
  return fc.oneof(
    { weight: 6, arbitrary: fc.nat().map((i) => real[i % Math.max(real.length, 1)] ?? 'x') },
    { weight: 2, arbitrary: schema.pattern ? fc.stringMatching(new RegExp(schema.pattern)) : fc.string() },
    { weight: 1, arbitrary: others.length > 0 ? fc.constantFrom(...others) : fc.constant('res_x') },
    { weight: 2, arbitrary: hostileString.map((s) => encode(s) || 'x') },
    { weight: 1, arbitrary: fc.constantFrom('%zz', 'x'.repeat(250), '..', '%2F') },
  );
}

/** Every operation of the document (`/v1` only). */
export function operationsOf(doc: Json): FuzzOperation[] {
  const out: FuzzOperation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const method of ['get', 'put', 'post', 'patch', 'delete']) {
      if (item[method] && path.startsWith('/v1/')) out.push({ method: method.toUpperCase(), path, op: item[method] });
    }
  }
  return out;
}

/** Requests for one operation (see the file comment). */
export function requestsFor(ctx: FuzzContext, operation: FuzzOperation): fc.Arbitrary<FuzzRequest> {
  return fc.oneof({ weight: 2, arbitrary: hostileRequestsFor(ctx, operation) }, validRequestsFor(ctx, operation));
}

/** Well-formed requests with the first (admin, live) key: they reach the handler. */
function validRequestsFor(ctx: FuzzContext, { method, path, op }: FuzzOperation): fc.Arbitrary<FuzzRequest> {
  const params = (op.parameters ?? []).map((p: Json) => deref(ctx.doc, p));
  const pathParams: Record<string, fc.Arbitrary<string>> = {};
  for (const p of params.filter((p: Json) => p.in === 'path')) {
    const prefix = /^\^([a-z]+_)/.exec(p.schema.pattern ?? '')?.[1] ?? '';
    pathParams[p.name] = fc.nat().map((i) => {
      const real = ctx.ids.get(prefix) ?? [];
      return real[i % Math.max(real.length, 1)] ?? `${prefix}00000000000000000000000000`;
    });
  }
  const queryParams: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of params.filter((p: Json) => p.in === 'query' && p.name !== 'cursor')) {
    queryParams[p.name] = validValueOf(ctx.doc, p.schema, p.name);
  }
  const bodySchema = op.requestBody?.content?.['application/json']?.schema;
  return fc
    .record({
      pathValues: fc.record(pathParams),
      query: fc.record(queryParams, { requiredKeys: [] }),
      body: bodySchema ? validValueOf(ctx.doc, bodySchema).map((v) => JSON.stringify(v)) : fc.constant(undefined),
    })
    .map((r) => {
      let url = path.replace(/\{([^}]+)\}/g, (_m, name: string) => r.pathValues[name] as string);
      const query = Object.entries(r.query)
        .map(([k, v]) => `${k}=${encode(String(v))}`)
        .join('&');
      if (query) url += `?${query}`;
      const headers: Record<string, string> = { authorization: ctx.auth[0] as string };
      if (r.body !== undefined) headers['content-type'] = 'application/json';
      return { operation: `${method} ${path}`, method, url, headers, payload: r.body };
    });
}

function hostileRequestsFor(ctx: FuzzContext, { method, path, op }: FuzzOperation): fc.Arbitrary<FuzzRequest> {
  const params = (op.parameters ?? []).map((p: Json) => deref(ctx.doc, p));
  const pathParams: Record<string, fc.Arbitrary<string>> = {};
  for (const p of params.filter((p: Json) => p.in === 'path')) pathParams[p.name] = pathParam(ctx, p.schema);
  const queryParams: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of params.filter((p: Json) => p.in === 'query')) queryParams[p.name] = anyValueOf(ctx.doc, p.schema);
  const bodySchema = op.requestBody?.content?.['application/json']?.schema;
  const body: fc.Arbitrary<string | undefined> = bodySchema
    ? fc.oneof(
        { weight: 7, arbitrary: anyValueOf(ctx.doc, bodySchema).map((v) => JSON.stringify(v) ?? 'null') },
        { weight: 2, arbitrary: hostileBody },
        fc.constant(undefined),
      )
    : fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, fc.constantFrom('{}', '{"x":1}', '[]'), hostileBody);
  const otherMethod = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS');
  return fc
    .record({
      method: fc.oneof({ weight: 12, arbitrary: fc.constant(method) }, otherMethod),
      pathValues: fc.record(pathParams),
      query: fc.record(queryParams, { requiredKeys: [] }),
      extraQuery: fc.oneof(
        { weight: 10, arbitrary: fc.constant('') },
        fc.constantFrom('&foo=1', '&limit=1&limit=2', '&cursor=', '&offset=1&cursor=abc'),
      ),
      body,
      contentType: fc.oneof(
        { weight: 12, arbitrary: fc.constant('application/json') },
        fc.constantFrom('text/plain', 'application/json; charset=utf-8', 'application/xml', ''),
      ),
      auth: fc.oneof({ weight: 3, arbitrary: fc.constant(ctx.auth[0] as string) }, fc.constantFrom(...ctx.auth)),
      idempotencyKey: fc.option(fc.oneof(fc.uuid(), fc.string({ maxLength: 300 }), fc.constantFrom('', 'same-key')), {
        freq: 3,
      }),
      requestId: fc.option(fc.oneof(fc.string({ maxLength: 140 }), fc.constant('trace-1')), { freq: 5 }),
    })
    .map((r) => {
      let url = path.replace(/\{([^}]+)\}/g, (_m, name: string) => encodePathValue(r.pathValues[name] as string));
      const query = Object.entries(r.query)
        .map(([k, v]) => `${k}=${encode(typeof v === 'string' ? v : JSON.stringify(v))}`)
        .join('&');
      if (query || r.extraQuery) url += `?${query}${r.extraQuery}`;
      const headers: Record<string, string> = {};
      if (r.auth) headers.authorization = r.auth;
      if (r.body !== undefined && r.contentType) headers['content-type'] = r.contentType;
      if (r.idempotencyKey !== null && /^[\x20-\x7e]*$/.test(r.idempotencyKey)) {
        headers['idempotency-key'] = r.idempotencyKey;
      }
      if (r.requestId !== null && /^[\x20-\x7e]*$/.test(r.requestId)) headers['x-request-id'] = r.requestId;
      return { operation: `${method} ${path}`, method: r.method, url, headers, payload: r.body };
    });
}
