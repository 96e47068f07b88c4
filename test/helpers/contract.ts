import { Ajv, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

/**
 * The served OpenAPI document as a response validator: every response a test receives through
 * the helpers is checked against it (documented status, declared headers, body schema), so a
 * drift between the server and its document fails the test that saw it. Operations are found
 * from the document itself, so routes added later are covered without edits here.
 */

const addFormats = ajvFormats.default;
type Json = Record<string, unknown>;
interface Operation {
  responses: Record<string, { headers?: Record<string, Json>; content?: Record<string, { schema: Json }> }>;
}
interface Route {
  path: string;
  re: RegExp;
  methods: Record<string, Operation>;
}

export interface Contract {
  doc: Json;
  routes: Route[];
  /** Problems with one response; empty when it matches the document. */
  check(method: string, url: string, res: LightMyRequestResponse): string[];
  /** The documented statuses of an operation, or undefined when no operation matches. */
  statuses(method: string, url: string): string[] | undefined;
  /** The operation a request reaches, if any. */
  match(method: string, url: string): { route: Route; op: Operation | undefined } | undefined;
}

const cache = new Map<string, Contract>();

/** The contract of this app's served document (compiled once per distinct document). */
export async function contractOf(app: FastifyInstance, inject = app.inject.bind(app)): Promise<Contract> {
  const res = await inject({ method: 'GET', url: '/v1/openapi.json' });
  const text = res.body;
  let contract = cache.get(text);
  if (!contract) {
    contract = buildContract(JSON.parse(text));
    cache.set(text, contract);
  }
  return contract;
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

function buildContract(doc: Json): Contract {
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
  const compiled = new Map<string, ValidateFunction>();
  const validator = (ref: string) => {
    let v = compiled.get(ref);
    if (!v) {
      v = ajv.compile({ $ref: `openapi.json#${ref}` });
      compiled.set(ref, v);
    }
    return v;
  };
  const headerDefs = ((doc.components as Json)?.headers ?? {}) as Record<string, Json>;
  const resolveHeader = (h: Json): Json =>
    typeof h.$ref === 'string' ? (headerDefs[h.$ref.split('/').pop() as string] as Json) : h;

  const routes: Route[] = Object.entries(doc.paths as Record<string, Record<string, Operation>>).map(
    ([path, methods]) => ({
      path,
      re: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
      methods,
    }),
  );
  // OpenAPI: a concrete path matches before a templated one (`/deliveries/retry` before `/deliveries/{delivery_id}`).
  const templates = (p: string) => (p.match(/\{/g) ?? []).length;
  routes.sort((a, b) => templates(a.path) - templates(b.path));

  const match = (method: string, url: string) => {
    // As the server sees it: `.` and `..` segments resolved.
    const path = new URL(url.split('?')[0] as string, 'http://h').pathname;
    const route = routes.find((r) => r.re.test(path));
    if (!route) return undefined;
    const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
    return { route, op: route.methods[m] };
  };

  const errorBody = (body: unknown): string[] => {
    const v = validator('/components/schemas/Error');
    return v(body) ? [] : [`error body does not match Error: ${ajv.errorsText(v.errors)}`];
  };

  function check(method: string, url: string, res: LightMyRequestResponse): string[] {
    const head = method.toUpperCase() === 'HEAD';
    const found = match(method, url);
    const parse = (): { ok: true; body: unknown } | { ok: false } => {
      try {
        return { ok: true, body: JSON.parse(res.body) };
      } catch {
        return { ok: false };
      }
    };
    if (!found?.op) {
      // Not an operation of the document: only the shared 404/405 error answers are checked here.
      const path = new URL(url.split('?')[0] as string, 'http://h').pathname;
      if (!path.startsWith('/v1/') || path.startsWith('/v1/openapi.json') || head) return [];
      if (res.statusCode !== 404 && res.statusCode !== 405 && res.statusCode < 400) return [];
      const parsed = parse();
      const problems = parsed.ok ? errorBody(parsed.body) : ['error answer without a JSON body'];
      if (res.statusCode === 405 && !res.headers.allow) problems.push('405 without Allow');
      return problems;
    }
    const status = String(res.statusCode);
    const m = head ? 'get' : method.toLowerCase();
    const key = found.op.responses[status] ? status : `${status[0]}XX`;
    const response = found.op.responses[key];
    const where = `${method.toUpperCase()} ${found.route.path} → ${status}`;
    if (!response) return [`${where}: status not documented`];
    const problems: string[] = [];
    for (const [name, raw] of Object.entries(response.headers ?? {})) {
      const def = resolveHeader(raw);
      const value = res.headers[name.toLowerCase()];
      if (value === undefined) {
        if (def.required) problems.push(`${where}: header ${name} missing`);
        continue;
      }
      const schema = def.schema as Json;
      const typed = schema.type === 'integer' && /^-?\d+$/.test(String(value)) ? Number(value) : value;
      const v = ajv.compile(schema);
      if (!v(typed)) problems.push(`${where}: header ${name}=${String(value)} ${ajv.errorsText(v.errors)}`);
    }
    const content = response.content?.['application/json'];
    // A file answered as bytes (an export's archive): its content type must be the documented one.
    const other = Object.keys(response.content ?? {}).find((type) => type !== 'application/json');
    if (!content && other && !head) {
      const type = String(res.headers['content-type'] ?? '');
      if (!type.startsWith(other)) problems.push(`${where}: content-type ${type}, documented ${other}`);
      return problems;
    }
    if (head || !content) {
      if (res.body !== '' && !head) problems.push(`${where}: body sent where none is documented`);
      return problems;
    }
    if (!String(res.headers['content-type'] ?? '').startsWith('application/json')) {
      problems.push(`${where}: content-type ${String(res.headers['content-type'])}`);
    }
    const parsed = parse();
    if (!parsed.ok) return [...problems, `${where}: body is not JSON`];
    const v = validator(
      `/${pointer('paths', found.route.path, m, 'responses', key, 'content', 'application/json', 'schema')}`,
    );
    if (!v(parsed.body)) problems.push(`${where}: body ${ajv.errorsText(v.errors)}`);
    return problems;
  }

  return {
    doc,
    routes,
    check,
    match,
    statuses(method, url) {
      const found = match(method, url);
      return found?.op ? Object.keys(found.op.responses) : undefined;
    },
  };
}
