import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/** Workspaces, users, API keys, resources, webhooks and idempotency records. */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  const json = sql.raw(dialect.types.json);

  await db.schema
    .createTable('workspaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('users_workspace_email_key', ['workspace_id', 'email'])
    .execute();
  await db.schema.createIndex('users_workspace_id_idx').on('users').columns(['workspace_id', 'id']).execute();

  await db.schema
    .createTable('user_test_profiles')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text')
    .addColumn('timezone', 'text')
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull().unique())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('revoked_at', ts)
    .addColumn('last_used_at', ts)
    .execute();
  await db.schema.createIndex('api_keys_workspace_idx').on('api_keys').columns(['workspace_id', 'id']).execute();

  await db.schema
    .createTable('resources')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('metadata', json, (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  // Every list filter of GET /resources is an equality prefix followed by id order (keyset paging).
  await db.schema.createIndex('resources_scope_idx').on('resources').columns(['workspace_id', 'env', 'id']).execute();
  await db.schema
    .createIndex('resources_status_idx')
    .on('resources')
    .columns(['workspace_id', 'env', 'status', 'id'])
    .execute();
  await db.schema
    .createIndex('resources_type_idx')
    .on('resources')
    .columns(['workspace_id', 'env', 'type', 'id'])
    .execute();
  await db.schema
    .createIndex('resources_status_type_idx')
    .on('resources')
    .columns(['workspace_id', 'env', 'status', 'type', 'id'])
    .execute();

  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', json, (c) => c.notNull())
    .addColumn('label', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhooks_scope_idx').on('webhooks').columns(['workspace_id', 'env', 'id']).execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('locked_until', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['workspace_id', 'env', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expiry_idx').on('idempotency_keys').column('expires_at').execute();
}
