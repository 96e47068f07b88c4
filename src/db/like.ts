import { type RawBuilder, sql } from 'kysely';

/** A LIKE pattern (with its ESCAPE clause) for text containing `needle` as it is: its `%`, `_` and `\` escaped. */
export function containing(needle: string): RawBuilder<string> {
  return sql<string>`${`%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`} escape '\\'`;
}
