import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import ipaddr from 'ipaddr.js';
import { expected } from './lib/expected.js';
import { newSecretsKey, parseSecretsKeys, SecretsKeyError } from './lib/sealed.js';
import { loadPlans, PlansFileError } from './modules/billing/plans.js';

/** Every setting the service reads from the environment, with its default (docs/settings.md). */
const ConfigSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', 'x-expected': 'a host name or IP address to listen on' }),
  HTTP_HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 10_000 }),
  HTTP_REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 3_600_000, default: 30_000 }),
  DATABASE_URL: Type.String({
    pattern: '^(sqlite:.+|postgres(ql)?://.+)$',
    'x-expected': 'sqlite:<file path> (such as sqlite:./data/workspace.db) or postgres://user@host:5432/database',
    default: 'sqlite:./data/workspace.db',
  }),
  DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 5000 }),
  DATABASE_QUERY_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 6000 }),
  DATABASE_CONNECT_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 5000 }),
  REDIS_URL: Type.Optional(
    Type.String({ pattern: '^rediss?://.+', 'x-expected': 'redis://host:6379[/db] or rediss://… (TLS)' }),
  ),
  REDIS_COMMAND_TIMEOUT_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 500 }),
  REDIS_KEY_PREFIX: Type.String({
    pattern: '^[A-Za-z0-9:_.-]*$',
    default: 'wsvc:',
    'x-expected': 'letters, digits and : _ . - only',
  }),
  RATE_LIMIT_LIVE: Type.Integer({ minimum: 1, default: 6000 }),
  RATE_LIMIT_TEST: Type.Integer({ minimum: 1, default: 1500 }),
  RATE_LIMIT_WINDOW_S: Type.Integer({ minimum: 1, default: 60 }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  WEBHOOK_ALLOW_INSECURE_URLS: Type.Boolean({ default: false }),
  /** Single sign-on may use an http:// issuer (docs/sign-in.md#single-sign-on): local development and tests only. */
  SSO_ALLOW_HTTP_ISSUER: Type.Boolean({ default: false }),
  WEBHOOK_MAX_RETRIES: Type.Integer({ minimum: 0, maximum: 20, default: 5 }),
  WEBHOOK_RETRY_BASE_MS: Type.Integer({ minimum: 0, default: 30000 }),
  WEBHOOK_RETRY_FACTOR: Type.Number({ minimum: 1, default: 4 }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 15000 }),
  WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1024, default: 64 }),
  WEBHOOK_ENDPOINT_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1024, default: 8 }),
  /** Where people reach the console; builds every link (default http://127.0.0.1:<PORT>). */
  PUBLIC_URL: Type.Optional(
    Type.String({
      pattern: '^https?://[^\\s/]+(/[^\\s]*)?$',
      'x-expected': 'the http:// or https:// address people open the console at, such as https://console.example.com',
    }),
  ),
  WEBHOOK_POLL_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 1000 }),
  /** An endpoint whose attempts (at least 10) have all failed for this many hours is disabled (docs/api.md#endpoint-health). */
  WEBHOOK_DISABLE_AFTER_H: Type.Integer({ minimum: 1, maximum: 8760, default: 120 }),
  /**
   * Which proxies in front may name the client in X-Forwarded-For (docs/operations.md#behind-a-proxy):
   * off, a hop count, or a list of proxy addresses and CIDR ranges.
   */
  TRUST_PROXY: Type.String({
    pattern: '^(off|[0-9]{1,2}|[0-9A-Za-z:./]+(,\\s*[0-9A-Za-z:./]+)*)$',
    default: 'off',
    'x-expected':
      'off, the number of proxies in front (such as 1), or a comma-separated list of proxy addresses or CIDR ranges (such as 10.0.0.5,10.1.0.0/16)',
  }),
  /**
   * scrypt's cost of console password hashes, as log2 N (docs/settings.md): 17 is OWASP's (128 MiB, about a second
   * of one core). Lower only where passwords protect nothing, as the test suite does (vitest.config.ts).
   */
  PASSWORD_HASH_COST: Type.Integer({ minimum: 10, maximum: 18, default: 17 }),
  /** Console sessions end after this many minutes without a request (docs/console.md#sessions). */
  CONSOLE_SESSION_IDLE_MIN: Type.Integer({ minimum: 1, maximum: 24 * 60, default: 30 }),
  /** …and this many hours after sign-in, whatever happens. */
  CONSOLE_SESSION_MAX_H: Type.Integer({ minimum: 1, maximum: 30 * 24, default: 12 }),
  /** Counts requests to keys and logs their failures (docs/usage.md); off: neither. */
  USAGE_METERING: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  /** How often each process writes what it counted; a crash loses at most this much. */
  USAGE_FLUSH_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 5000 }),
  /** Where notification emails go (docs/operations.md#email); unset: the local mailbox (`wsvc mail list`). */
  SMTP_URL: Type.Optional(
    Type.String({
      pattern: '^smtps?://.+',
      'x-expected': 'smtp://user:password@host:587 or smtps://user:password@host:465',
    }),
  ),
  /**
   * How long a claimed email is reserved for the worker sending it (docs/notifications.md#the-crash-window):
   * renewed before each send and every third of it while the send runs, so only a dead worker's
   * claims lapse; a worker killed after the SMTP server accepted an email sends it again after this.
   */
  MAIL_LEASE_MS: Type.Integer({ minimum: 1000, maximum: 3_600_000, default: 120_000 }),
  /** How long audit entries are kept (docs/api.md#audit-log): the purge job deletes older ones, keeping the chain's anchor. */
  AUDIT_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 36_500, default: 400 }),
  /**
   * The folder of workspace export archives (docs/data-lifecycle.md#export); unset: `exports/` beside the SQLite
   * file, or `./data/exports` with PostgreSQL. Processes that share a database must share this folder.
   */
  EXPORTS_DIR: Type.Optional(Type.String({ minLength: 1, 'x-expected': 'the path of a folder' })),
  WORKSPACE_DELETION_GRACE_DAYS: Type.Integer({ minimum: 1, maximum: 365, default: 30 }),
  /** How long events and their deliveries with the attempts are kept (docs/api.md#events). */
  EVENT_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 36_500, default: 30 }),
  /** How long failed requests are kept in the request log (docs/usage.md#request-log). */
  REQUEST_LOG_RETENTION_DAYS: Type.Integer({ minimum: 1, maximum: 36_500, default: 7 }),
  /** The From of every email. */
  MAIL_FROM: Type.String({
    minLength: 3,
    maxLength: 320,
    default: 'Workspace Service <no-reply@localhost>',
    'x-expected': 'an address, such as "Workspace Service <no-reply@example.com>"',
  }),
  /** Serves GET /metrics to `Authorization: Bearer <METRICS_TOKEN>`; unset: no /metrics. */
  METRICS_TOKEN: Type.Optional(
    Type.String({ minLength: 16, maxLength: 512, 'x-expected': 'a secret of at least 16 characters' }),
  ),
  /**
   * Enforces the plans' resource and webhook limits on creation and the free plan's request cap
   * (docs/billing.md#plan-limits). Off by default for now: existing deployments, tests and the
   * benchmark go beyond what the free plan allows.
   */
  PLAN_LIMITS: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  /** A JSON file of plans replacing the defaults (docs/billing.md#plans-file); checked at start-up. */
  PLANS_FILE: Type.Optional(Type.String({ minLength: 1, 'x-expected': 'the path of a JSON plans file' })),
  /**
   * Where the instance-wide operator events go (docs/api.md#operator-events), signed with OPERATOR_WEBHOOK_SECRET and
   * delivered by the same engine as the endpoints' events; unset: none are written. Set both or neither.
   */
  OPERATOR_WEBHOOK_URL: Type.Optional(
    Type.String({
      pattern: '^https?://[^\\s/]+(/[^\\s]*)?$',
      'x-expected': "the http:// or https:// address of the operator's receiver, such as https://ops.example.com/hooks",
    }),
  ),
  /** The Standard Webhooks secret that signs operator events: `whsec_` and base64 of 24 to 64 bytes. */
  OPERATOR_WEBHOOK_SECRET: Type.Optional(
    Type.String({
      pattern: '^whsec_[A-Za-z0-9+/]{32,88}={0,2}$',
      'x-expected':
        'whsec_ followed by base64 of 24 to 64 random bytes (make one with `echo whsec_$(openssl rand -base64 32)`)',
    }),
  ),
  /**
   * The key(s) that seal stored secrets (docs/settings.md#secrets-at-rest): base64 of 32 bytes, comma-separated, the
   * sealing one first. Required on PostgreSQL; on SQLite unset means the key file beside the database.
   */
  SECRETS_KEY: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/=_-]+(\\s*,\\s*[A-Za-z0-9+/=_-]+)*$',
      'x-expected': 'one or more base64 keys of 32 bytes, comma-separated (make one with `openssl rand -base64 32`)',
    }),
  ),
  /** Payments with Stripe (docs/billing.md#payments-with-stripe): on only with both this and STRIPE_WEBHOOK_SECRET. */
  STRIPE_SECRET_KEY: Type.Optional(
    Type.String({ pattern: '^(sk|rk)_[A-Za-z0-9_]+$', 'x-expected': 'a Stripe secret key (sk_live_… or sk_test_…)' }),
  ),
  /** The signing secret of the Stripe webhook endpoint that posts to /stripe/webhook. */
  STRIPE_WEBHOOK_SECRET: Type.Optional(
    Type.String({
      pattern: '^whsec_[A-Za-z0-9_]+$',
      'x-expected': 'the webhook signing secret Stripe shows (whsec_…)',
    }),
  ),
  /** Where the Stripe client sends its requests (a stand-in in tests); unset: Stripe's own API. */
  STRIPE_API_BASE: Type.Optional(
    Type.String({
      pattern: '^https?://[^\\s/]+/?$',
      'x-expected': 'an http:// or https:// origin, such as http://127.0.0.1:12111',
    }),
  ),
  /** Days after an invoice's first failed charge at which it is charged again; after the last failure it is uncollectible. */
  DUNNING_SCHEDULE: Type.String({
    pattern: '^[0-9]{1,3}(,[0-9]{1,3})*$',
    default: '1,3,5,7',
    'x-expected': 'increasing whole days after the first failure, comma-separated, such as 1,3,5,7',
  }),
});

export type Config = Readonly<Static<typeof ConfigSchema>>;
export const CONFIG_KEYS = Object.keys(ConfigSchema.properties) as (keyof Config)[];

/** The console's public base URL, without a trailing slash (docs/console.md). */
export function publicUrl(config: Config): string {
  return (config.PUBLIC_URL ?? `http://127.0.0.1:${config.PORT}`).replace(/\/+$/, '');
}

/** Fastify's `trustProxy` from TRUST_PROXY: false (off), a hop count, or the trusted proxies' addresses. */
export function trustProxy(config: Config): false | number | string[] {
  const v = config.TRUST_PROXY.trim();
  if (v === 'off' || v === '0') return false;
  if (/^[0-9]+$/.test(v)) return Number(v);
  return v.split(',').map((a) => a.trim());
}

/** The problem with a TRUST_PROXY list entry (an address, a CIDR range, or proxy-addr's loopback, linklocal, uniquelocal). */
function proxyEntryProblem(entry: string): string | undefined {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return undefined;
  try {
    if (entry.includes('/')) ipaddr.parseCIDR(entry);
    else ipaddr.parse(entry);
    return undefined;
  } catch {
    return `TRUST_PROXY has ${JSON.stringify(entry)}, which is not an IP address or CIDR range`;
  }
}

/** Settings whose value is a secret as a whole: an invalid one is described, never echoed. */
const SECRET_SETTINGS = new Set<string>([
  'METRICS_TOKEN',
  'SECRETS_KEY',
  'OPERATOR_WEBHOOK_SECRET',
  'STRIPE_SECRET_KEY',
  'STRIPE_WEBHOOK_SECRET',
]);

/**
 * An invalid value as an error message shows it (docs/operations.md#logs: no credential in any log
 * line, and stderr is the log under a container): a secret setting by its length only, and the
 * password of a URL's user-info as `***` (`postgres://postgres:***@db/x`).
 */
function shownValue(key: string, value: unknown): string {
  const text = String(value);
  if (SECRET_SETTINGS.has(key)) return `a value of ${[...text].length} characters (not shown)`;
  const userInfo = /^([a-z][a-z0-9+.-]*:)(\/*)([^/?#\s]*)@/i.exec(text);
  if (!userInfo) return JSON.stringify(text);
  const [whole, scheme, slashes, info = ''] = userInfo;
  // After `//` a user name alone is kept (`postgres://postgres@db`); a password never is.
  const colon = info.indexOf(':');
  const masked = colon >= 0 ? `${info.slice(0, colon)}:***` : slashes === '//' ? info : '***';
  return JSON.stringify(`${scheme}${slashes}${masked}@${text.slice(whole.length)}`);
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses settings once from `env` (and `overrides`); throws ConfigError naming every bad one. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const raw: Record<string, unknown> = {};
  for (const key of CONFIG_KEYS) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) raw[k] = v;
  const withDefaults = Value.Default(ConfigSchema, raw);
  const converted = Value.Convert(ConfigSchema, withDefaults) as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of CONFIG_KEYS) {
    const sub = ConfigSchema.properties[key];
    const value = converted[key];
    if (
      value === undefined &&
      !(
        key === 'REDIS_URL' ||
        key === 'PUBLIC_URL' ||
        key === 'METRICS_TOKEN' ||
        key === 'SMTP_URL' ||
        key === 'PLANS_FILE' ||
        key === 'EXPORTS_DIR' ||
        key === 'SECRETS_KEY' ||
        key === 'OPERATOR_WEBHOOK_URL' ||
        key === 'OPERATOR_WEBHOOK_SECRET' ||
        key === 'STRIPE_SECRET_KEY' ||
        key === 'STRIPE_WEBHOOK_SECRET' ||
        key === 'STRIPE_API_BASE'
      )
    ) {
      problems.push(`${key} is required`);
      continue;
    }
    if (value === undefined) continue;
    if (!Value.Check(sub, value)) {
      problems.push(`${key} must be ${expected(sub) ?? 'a valid value'}; got ${shownValue(key, raw[key])}`);
    }
  }
  if (problems.length === 0) {
    const proxies = trustProxy(converted as Config);
    if (Array.isArray(proxies))
      for (const e of proxies) problems.push(...[proxyEntryProblem(e)].filter((p) => p !== undefined));
    // The plans file is read and checked here, so a bad one stops start-up naming the plan and field.
    try {
      loadPlans(converted.PLANS_FILE as string | undefined);
    } catch (err) {
      if (!(err instanceof PlansFileError)) throw err;
      problems.push(...err.problems);
    }
  }
  // Operator events are signed: an address without its secret, or a secret without an address, is a mistake.
  const operatorUrl = converted.OPERATOR_WEBHOOK_URL !== undefined;
  const operatorSecret = converted.OPERATOR_WEBHOOK_SECRET !== undefined;
  if (operatorUrl !== operatorSecret) {
    problems.push(
      operatorUrl
        ? 'OPERATOR_WEBHOOK_SECRET is required with OPERATOR_WEBHOOK_URL: the secret that signs operator events'
        : 'OPERATOR_WEBHOOK_URL is required with OPERATOR_WEBHOOK_SECRET: where operator events are sent',
    );
  }
  if (problems.length === 0 && converted.SECRETS_KEY !== undefined) {
    try {
      parseSecretsKeys(String(converted.SECRETS_KEY));
    } catch (err) {
      if (!(err instanceof SecretsKeyError)) throw err;
      problems.push(err.message);
    }
  }
  problems.push(...stripeProblems(converted));
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(converted as Config);
}

/** Payments with Stripe need both settings; half of them stops start-up naming the missing one. */
function stripeProblems(c: Record<string, unknown>): string[] {
  const key = c.STRIPE_SECRET_KEY !== undefined;
  const hook = c.STRIPE_WEBHOOK_SECRET !== undefined;
  const out: string[] = [];
  if (key && !hook) {
    out.push('STRIPE_WEBHOOK_SECRET is required when STRIPE_SECRET_KEY is set (payments with Stripe need both)');
  }
  if (hook && !key) {
    out.push('STRIPE_SECRET_KEY is required when STRIPE_WEBHOOK_SECRET is set (payments with Stripe need both)');
  }
  const days = String(c.DUNNING_SCHEDULE ?? '')
    .split(',')
    .map(Number);
  if (days.some((d, i) => i > 0 && d <= (days[i - 1] ?? 0)) || days[0] === 0) {
    out.push(`DUNNING_SCHEDULE must be increasing whole days of at least 1; got ${JSON.stringify(c.DUNNING_SCHEDULE)}`);
  }
  return out;
}

/** Payments with Stripe are on (both settings given). */
export const stripeOn = (c: Config): boolean =>
  c.STRIPE_SECRET_KEY !== undefined && c.STRIPE_WEBHOOK_SECRET !== undefined;

/** DUNNING_SCHEDULE as days after the first failure. */
export const dunningDays = (c: Config): number[] => c.DUNNING_SCHEDULE.split(',').map(Number);

/** Warnings about settings that are valid but unsafe outside development, logged at start-up. */
export function settingWarnings(config: Config): string[] {
  const out: string[] = [];
  if (config.WEBHOOK_ALLOW_INSECURE_URLS) {
    out.push(
      'WEBHOOK_ALLOW_INSECURE_URLS is on: webhooks may use http:// and reach loopback and private addresses ' +
        '(link-local and cloud metadata addresses, such as 169.254.169.254, stay refused). ' +
        'For local development and tests only; turn it off in production (docs/api.md#webhook-urls).',
    );
  }
  if (config.SSO_ALLOW_HTTP_ISSUER) {
    out.push(
      'SSO_ALLOW_HTTP_ISSUER is on: single sign-on may talk to an identity provider over http://. ' +
        'For local development and tests only; turn it off in production (docs/sign-in.md#single-sign-on).',
    );
  }
  if (publicUrl(config).startsWith('https:') && trustProxy(config) === false) {
    out.push(
      "PUBLIC_URL is https but TRUST_PROXY is off: behind a TLS proxy every client has the proxy's address, " +
        'so the per-address sign-in limit counts them all as one. Set TRUST_PROXY (docs/operations.md#behind-a-proxy).',
    );
  }
  return out;
}

/** Where the keys that seal stored secrets came from, and whether the key file was made just now. */
export interface SecretsKeys {
  keys: Buffer[];
  /** `SECRETS_KEY`, `the key file <path>`, or `a key for this process only` (an in-memory database). */
  source: string;
  /** The key file made by this start (the first on SQLite): say so in the log. */
  createdFile?: string;
}

/** The key file beside a SQLite database file: `<database>.key` (docs/settings.md#secrets-at-rest). */
export function secretsKeyFile(databaseUrl: string): string | undefined {
  if (!databaseUrl.startsWith('sqlite:')) return undefined;
  const path = databaseUrl.slice('sqlite:'.length);
  return path === ':memory:' ? undefined : `${path}.key`;
}

/**
 * The keys that seal stored secrets: SECRETS_KEY when set; else, on SQLite, the key file beside the database,
 * made (mode 0600) on the first start; an in-memory database a key of its own. PostgreSQL without SECRETS_KEY
 * throws SecretsKeyError naming the setting: every process must hold the same key, which no file can give.
 */
export function secretsKeys(config: Pick<Config, 'SECRETS_KEY' | 'DATABASE_URL'>): SecretsKeys {
  if (config.SECRETS_KEY) return { keys: parseSecretsKeys(config.SECRETS_KEY), source: 'SECRETS_KEY' };
  if (!config.DATABASE_URL.startsWith('sqlite:')) {
    throw new SecretsKeyError(
      'SECRETS_KEY is required with PostgreSQL: the key that seals stored secrets (webhook signing secrets, ' +
        'TOTP seeds, the SSO client secret, chat URLs). Make one with `openssl rand -base64 32` and give every ' +
        'process the same (docs/settings.md#secrets-at-rest).',
    );
  }
  const file = secretsKeyFile(config.DATABASE_URL);
  if (!file) return { keys: [Buffer.from(newSecretsKey(), 'base64')], source: 'a key for this process only' };
  let createdFile: string | undefined;
  try {
    writeFileSync(file, `${newSecretsKey()}\n`, { flag: 'wx', mode: 0o600 });
    createdFile = file;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const keys = parseSecretsKeys(readFileSync(file, 'utf8'), `the key file ${file}`);
  return { keys, source: `the key file ${file}`, createdFile };
}

/** Where export archives are written (EXPORTS_DIR; docs/settings.md): by default `exports/` beside the SQLite file. */
export function exportsDir(config: Pick<Config, 'EXPORTS_DIR' | 'DATABASE_URL'>): string {
  if (config.EXPORTS_DIR) return config.EXPORTS_DIR;
  if (config.DATABASE_URL.startsWith('sqlite:')) {
    const path = config.DATABASE_URL.slice('sqlite:'.length);
    if (path !== ':memory:') return join(dirname(path), 'exports');
    return join(tmpdir(), 'wsvc-exports');
  }
  return join('data', 'exports');
}
