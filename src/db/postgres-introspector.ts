import { type DatabaseIntrospector, type DatabaseMetadataOptions, type Kysely, sql, type TableMetadata } from 'kysely';

/**
 * Kysely's PostgreSQL introspector reads every schema of the database and resolves each schema by
 * name (`has_schema_privilege`, `pg_get_serial_sequence`) while it scans the catalog: a schema dropped
 * by another session during that scan fails the whole query with `schema "…" does not exist`. The
 * migrator asks it whether its own tables exist before every migration, so a process migrating one
 * schema failed whenever another schema of the same database was dropped at that moment (seen in CI,
 * where each test file has its own schema and drops it when done). This one reads only the
 * connection's own schema (`current_schema()`, the one `search_path` names), by oid.
 */
export class OwnSchemaIntrospector implements DatabaseIntrospector {
  // biome-ignore lint/suspicious/noExplicitAny: the introspector reads the catalog, not the app's tables
  constructor(private readonly db: Kysely<any>) {}

  async getSchemas() {
    const { rows } = await sql<{ name: string }>`select current_schema() as name`.execute(this.db);
    return rows.filter((r) => r.name !== null);
  }

  async getTables(options: DatabaseMetadataOptions = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const { rows } = await sql<{
      table: string;
      kind: string;
      schema: string;
      column: string;
      not_null: boolean;
      has_default: boolean;
      identity: string;
      type: string;
      type_schema: string;
    }>`
      select c.relname as "table", c.relkind as kind, ns.nspname as schema, a.attname as "column",
             a.attnotnull as not_null, a.atthasdef as has_default, a.attidentity as identity,
             typ.typname as type, dtns.nspname as type_schema
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
      join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      join pg_catalog.pg_type typ on typ.oid = a.atttypid
      join pg_catalog.pg_namespace dtns on dtns.oid = typ.typnamespace
      where ns.nspname = current_schema() and c.relkind in ('r', 'v', 'p')
      order by c.relname, a.attnum`.execute(this.db);
    const internal = new Set(['kysely_migration', 'kysely_migration_lock']);
    const tables = new Map<string, TableMetadata & { columns: TableMetadata['columns'][number][] }>();
    for (const r of rows) {
      if (!options.withInternalKyselyTables && internal.has(r.table)) continue;
      let t = tables.get(r.table);
      if (!t) {
        t = { name: r.table, isView: r.kind === 'v', schema: r.schema, columns: [] };
        tables.set(r.table, t);
      }
      t.columns.push({
        name: r.column,
        dataType: r.type,
        dataTypeSchema: r.type_schema,
        isNullable: !r.not_null,
        isAutoIncrementing: r.identity !== '',
        hasDefaultValue: r.has_default,
      });
    }
    return [...tables.values()];
  }

  async getMetadata(options?: DatabaseMetadataOptions) {
    return { tables: await this.getTables(options) };
  }
}
