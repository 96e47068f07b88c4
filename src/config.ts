import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { expected } from './lib/expected.js';

/** Every setting the service reads from the environment, with its default (README "Settings"). */
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
});

export type Config = Readonly<Static<typeof ConfigSchema>>;
export const CONFIG_KEYS = Object.keys(ConfigSchema.properties) as (keyof Config)[];

/** The console's public base URL, without a trailing slash (docs/console.md). */
export function publicUrl(config: Config): string {
  return (config.PUBLIC_URL ?? `http://127.0.0.1:${config.PORT}`).replace(/\/+$/, '');
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
    if (value === undefined && !(key === 'REDIS_URL' || key === 'PUBLIC_URL')) {
      problems.push(`${key} is required`);
      continue;
    }
    if (value === undefined) continue;
    if (!Value.Check(sub, value)) {
      problems.push(`${key} must be ${expected(sub) ?? 'a valid value'}; got ${JSON.stringify(raw[key])}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(converted as Config);
}

/** Warnings about settings that are valid but unsafe outside development, logged at start-up. */
export function settingWarnings(config: Config): string[] {
  const out: string[] = [];
  if (config.WEBHOOK_ALLOW_INSECURE_URLS) {
    out.push(
      'WEBHOOK_ALLOW_INSECURE_URLS is on: webhooks may use http:// and reach loopback and private addresses. ' +
        'For local development and tests only; turn it off in production (docs/api.md#webhook-urls).',
    );
  }
  return out;
}
