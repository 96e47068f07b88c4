import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Team sign-in (docs/sign-in.md): per person (one password per email, so per email) a TOTP
 * authenticator, single-use recovery codes stored hashed, passkeys and the WebAuthn challenges in
 * flight; per workspace the second-factor policy and OpenID Connect single sign-on with the
 * sign-ins in flight; the step of sign-in a password alone has reached; how each session signed in.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  // mfa: one row per person who has begun to set up a second factor or a passkey.
  await db.schema
    .createTable('console_mfa')
    .addColumn('email', 'text', (c) => c.primaryKey())
    .addColumn('webauthn_user_id', 'text', (c) => c.notNull())
    .addColumn('totp_secret', 'text')
    .addColumn('totp_confirmed_at', ts)
    .addColumn('totp_last_step', 'bigint')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('console_recovery_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('salt', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('used_at', ts)
    .execute();
  await db.schema
    .createIndex('console_recovery_codes_email_idx')
    .on('console_recovery_codes')
    .column('email')
    .execute();
  await db.schema
    .createTable('console_passkeys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('credential_id', 'text', (c) => c.notNull().unique())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull())
    .addColumn('transports', 'text')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('last_used_at', ts)
    .execute();
  await db.schema.createIndex('console_passkeys_email_idx').on('console_passkeys').column('email').execute();
  await db.schema
    .createTable('console_webauthn_challenges')
    .addColumn('challenge', 'text', (c) => c.primaryKey())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('email', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('used_at', ts)
    .execute();
  await db.schema
    .createTable('workspace_mfa_policies')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('require_second_factor', 'integer', (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  // sso: one configuration per workspace; the secret is written, never read back out of the service.
  await db.schema
    .createTable('workspace_sso')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('issuer', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_secret', 'text', (c) => c.notNull())
    .addColumn('allowed_domains', 'text', (c) => c.notNull())
    .addColumn('default_role', 'text', (c) => c.notNull())
    .addColumn('required', 'integer', (c) => c.notNull())
    .addColumn('break_glass_user_id', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sso_sign_ins')
    .addColumn('state_digest', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('browser_digest', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('code_verifier', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('used_at', ts)
    .execute();

  // console-auth: a password accepted, the second factor still to come (5 minutes, once).
  await db.schema
    .createTable('console_pending_sign_ins')
    .addColumn('digest', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('ip', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('used_at', ts)
    .execute();
  // How a session signed in; `enrol`: it may only add a second factor (the workspace requires one);
  // workspace_id: a single sign-on session reaches that workspace only.
  await db.schema
    .alterTable('console_sessions')
    .addColumn('method', 'text', (c) => c.notNull().defaultTo('password'))
    .execute();
  await db.schema
    .alterTable('console_sessions')
    .addColumn('stage', 'text', (c) => c.notNull().defaultTo('full'))
    .execute();
  await db.schema.alterTable('console_sessions').addColumn('workspace_id', 'text').execute();
}
