import type { Db } from '../db/dialect.js';
import { isSealed, type SealedAt, type Sealer, SecretsKeyError } from '../lib/sealed.js';
import type { Unit, WriteTx } from './unit-of-work.js';

/** A stored secret as its owner reads it to seal it again: where it belongs and its stored value. */
export interface StoredSecret {
  at: SealedAt;
  stored: string;
}

/**
 * A column of secrets sealed at rest (src/lib/sealed.ts), as its owning module's repository reads and
 * writes it; the owners' columns are listed in src/services.ts.
 */
export interface SealedColumn {
  /** `table.column`. */
  column: string;
  /** Up to `limit` values to seal: clear ones when `kid` is null, else those not sealed under `kid`. */
  toSeal(db: Db, kid: string | null, limit: number): Promise<StoredSecret[]>;
  /** Writes `next` where the row still holds `s.stored` (a change that replaced it meanwhile wins); true if written. */
  replace(trx: WriteTx, s: StoredSecret, next: string): Promise<boolean>;
  /** One value sealed under a key not in `kids` (none: undefined). */
  sealedUnderOther(db: Db, kids: readonly string[]): Promise<string | undefined>;
}

/** Rows sealed per transaction: a kill loses at most one batch's work, which the next run does again. */
export const SEAL_BATCH = 200;

/**
 * Refuses (SecretsKeyError naming SECRETS_KEY) when a stored secret is sealed under a key the sealer does not
 * hold: a missing or wrong key must stop start-up, never let the service run without its secrets.
 */
export async function checkSealedColumns(
  db: Db,
  sealer: Pick<Sealer, 'kids'>,
  columns: readonly SealedColumn[],
  source: string,
): Promise<void> {
  for (const col of columns) {
    const other = await col.sealedUnderOther(db, sealer.kids);
    if (other === undefined) continue;
    const kid = other.split(':')[1];
    throw new SecretsKeyError(
      `Stored secrets (${col.column}) are sealed with key ${kid}, which ${source} does not hold: set SECRETS_KEY to ` +
        'the key they were sealed with (docs/settings.md#secrets-at-rest). The service does not start without it.',
    );
  }
}

/**
 * Seals every value of `columns` to seal (clear ones when `kid` is null; else every one not under `kid`, the
 * sealer's primary: `wsvc secrets rotate-key`), in transactions of `batch` rows written through `u`. Resumable:
 * a killed run left committed batches sealed and the rest as it was. `onBatch` hears each batch's count.
 */
export async function sealColumns(
  u: Unit,
  db: Db,
  sealer: Sealer,
  columns: readonly SealedColumn[],
  opts: { kid: string | null; batch?: number; onBatch?: (column: string, sealed: StoredSecret[]) => void },
): Promise<number> {
  const batch = opts.batch ?? SEAL_BATCH;
  let total = 0;
  for (const col of columns) {
    // A row a concurrent change replaced is skipped in this batch; its new value is sealed under the primary key.
    const skipped = new Set<string>();
    for (;;) {
      const rows = (await col.toSeal(db, opts.kid, batch + skipped.size)).filter(
        (s) => !skipped.has(`${s.at.row}\0${s.stored}`),
      );
      if (rows.length === 0) break;
      const written = await u.run(async (c) => {
        const done: StoredSecret[] = [];
        for (const s of rows.slice(0, batch)) {
          const clear = isSealed(s.stored) ? sealer.open(s.stored, s.at) : s.stored;
          if (await col.replace(c.trx, s, sealer.seal(clear, s.at))) done.push(s);
          else skipped.add(`${s.at.row}\0${s.stored}`);
        }
        return done;
      });
      total += written.length;
      opts.onBatch?.(col.column, written);
    }
  }
  return total;
}
