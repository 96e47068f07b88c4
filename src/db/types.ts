import type { Generated } from 'kysely';

/** Environment of an API key and of the data it sees (docs/api.md#environments). */
export type Env = 'live' | 'test';
export type Role = 'admin' | 'member' | 'viewer';

// Timestamps are ISO 8601 strings (docs/api.md#timestamps) on both dialects; JSON columns are written as JSON text
// and read back through `readJson` (SQLite returns text, PostgreSQL jsonb returns objects).

export interface WorkspacesTable {
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
}

export interface UsersTable {
  id: string;
  workspace_id: string;
  email: string;
  name: string | null;
  role: Role;
  timezone: string | null;
  created_at: string;
  updated_at: string;
  /** Set when the user was removed from the workspace (docs/api.md#keys-scopes-and-roles: their keys stop working). */
  removed_at?: string | null;
}

/** docs/api.md#environments: the sandbox overlay of a profile, written and read by test keys only. */
export interface UserTestProfilesTable {
  user_id: string;
  name: string | null;
  timezone: string | null;
  updated_at: string;
}

export interface ApiKeysTable {
  id: string;
  workspace_id: string;
  user_id: string;
  env: Env;
  name: string;
  /** Hex SHA-256 of the whole key (docs/api.md#keys-scopes-and-roles); the plaintext is never stored. */
  digest: string;
  /** First characters of the key, for people to recognise it in lists. */
  prefix: string;
  /** JSON array of scopes, or null for every scope (docs/api.md#keys-scopes-and-roles). */
  scopes: string | null;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
  /** When the key stops working (a rolled key's overlap end); null: never (migration 007). */
  expires_at?: string | null;
  /** The user who created the key; null when the CLI did (migration 007). */
  created_by?: string | null;
}

export interface ResourcesTable {
  id: string;
  workspace_id: string;
  env: Env;
  name: string;
  type: 'standard' | 'premium' | 'custom';
  status: 'active' | 'archived';
  metadata: unknown;
  created_at: string;
  updated_at: string;
}

/** Performance (docs/performance.md, change 1): per-slot counts behind GET /resources meta.total (migration 004). */
export interface ResourceCountsTable {
  workspace_id: string;
  env: Env;
  status: ResourcesTable['status'];
  type: ResourcesTable['type'];
  slot: number;
  n: number | string | bigint;
}

export interface WebhooksTable {
  id: string;
  workspace_id: string;
  env: Env;
  url: string;
  events: unknown;
  label: string | null;
  status: 'enabled' | 'disabled';
  secret: string;
  /** After rotate-secret: the old secret, which also signs deliveries until it expires (migration 007). */
  previous_secret?: string | null;
  previous_secret_expires_at?: string | null;
  /** Why the endpoint is disabled (`manual`); null while enabled (migration 007). */
  disabled_reason?: string | null;
  created_at: string;
  updated_at: string;
}

export interface IdempotencyKeysTable {
  workspace_id: string;
  env: Env;
  key: string;
  request_hash: string;
  state: 'processing' | 'done';
  status_code: number | null;
  response_body: string | null;
  locked_until: string;
  expires_at: string;
  created_at: string;
}

/** Outbox row (docs/api.md#events); `payload` is the exact JSON body receivers get (`{id, event, created_at, data}`). */
export interface EventsTable {
  id: string;
  workspace_id: string;
  env: Env;
  type: string;
  resource_id: string | null;
  payload: string;
  created_at: string;
}

/** `cancelled`: still pending when its endpoint was disabled. */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

/** One event to one webhook (docs/api.md#webhook-deliveries); claimed by a worker with a lease (docs/api.md#deployment). */
export interface DeliveriesTable {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  workspace_id: string;
  env: Env;
  status: DeliveryStatus;
  attempt_count: number;
  /** When a pending delivery is due; null once it is final. */
  next_attempt_at: string | null;
  /** A worker's claim: other workers skip the row until this passes. */
  lease_until: string | null;
  leased_by: string | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeliveryAttemptsTable {
  delivery_id: string;
  number: number;
  attempted_at: string;
  duration_ms: number;
  response_status: number | null;
  /** First 1 KiB of the receiver's response body. */
  response_body: string | null;
  error: string | null;
  /** The request headers sent, as JSON text; null for attempts made before migration 009. */
  request_headers?: string | null;
}

/** The console (docs/console.md): one console password per email (lower case), as an scrypt hash with its parameters. */
export interface ConsoleCredentialsTable {
  email: string;
  password_hash: string;
  created_at: string;
  updated_at: string;
}

/** A console sign-in; the cookie holds the token, this row only its SHA-256 digest. */
export interface ConsoleSessionsTable {
  id: string;
  token_digest: string;
  email: string;
  created_at: string;
  last_seen_at: string;
  /** Absolute expiry (30 days after sign-in); the idle expiry is last_seen_at + 12 h. */
  expires_at: string;
  ended_at: string | null;
  user_agent: string | null;
  ip: string | null;
}

export type ConsoleLinkPurpose = 'set_password' | 'invite' | 'reset';

/** A single-use link (set password, invite, reset), stored as the digest of its token. */
export interface ConsoleLinksTable {
  digest: string;
  purpose: ConsoleLinkPurpose;
  email: string;
  workspace_id: string | null;
  user_id: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** One failed sign-in, counted per email and per IP over 15 minutes. */
export interface ConsoleSignInFailuresTable {
  id: string;
  subject: string;
  at: string;
}

export interface MigrationsMarker {
  id: Generated<number>;
}

export interface Database {
  workspaces: WorkspacesTable;
  users: UsersTable;
  user_test_profiles: UserTestProfilesTable;
  api_keys: ApiKeysTable;
  resources: ResourcesTable;
  resource_counts: ResourceCountsTable;
  webhooks: WebhooksTable;
  idempotency_keys: IdempotencyKeysTable;
  events: EventsTable;
  deliveries: DeliveriesTable;
  delivery_attempts: DeliveryAttemptsTable;
  console_credentials: ConsoleCredentialsTable;
  console_sessions: ConsoleSessionsTable;
  console_links: ConsoleLinksTable;
  console_sign_in_failures: ConsoleSignInFailuresTable;
}
