// Type test, checked by `npm run typecheck` (tsc includes test/): a write that bypasses the write
// runner does not compile. Repository functions that write take a `WriteTx`, which only the runner
// (`writeAs`, checking the principal or system actor last) hands out; a plain transaction or the
// pool is a `Db`. Each `@ts-expect-error` below fails the typecheck if its line ever compiles.
import type { Db, Dialect } from '../../src/db/dialect.js';
import { systemActor } from '../../src/kernel/principal.js';
import type { WriteRunner } from '../../src/modules/auth/write-runner.js';
import { eventsRepository } from '../../src/modules/events/events.repository.js';
import { idempotencyRepository } from '../../src/modules/idempotency/idempotency.repository.js';
import { deliveriesRepository } from '../../src/modules/webhooks/deliveries.repository.js';

declare const db: Db;
declare const dialect: Dialect;
declare const writeAs: WriteRunner;

const claim = { now: '', leaseUntil: '', workerId: 'wrk_1', limit: 1, perEndpoint: 1, busy: new Map<string, number>() };

export async function bypasses(): Promise<void> {
  // The worker's claims in a transaction of its own, as it did before it had an actor: no.
  await dialect.writeTransaction(db, async (trx) => {
    // @ts-expect-error a plain transaction is not a WriteTx
    await deliveriesRepository.claim(trx, claim);
    // @ts-expect-error nor for the outcomes of attempts
    await deliveriesRepository.complete(trx, 'wrk_1', [], '');
  });
  // A purge job straight on the pool: no.
  // @ts-expect-error the pool is not a WriteTx
  await eventsRepository.purgeBefore(db, '');
  // @ts-expect-error nor for idempotency records
  await idempotencyRepository.purgeBefore(db, '');
  // A Db cannot be passed off as a WriteTx by annotation either.
  // @ts-expect-error Db lacks the WriteTx brand
  const forged: Parameters<typeof deliveriesRepository.requeue>[0] = db;
  void forged;
  // An actor the runner does not know by name: no.
  // @ts-expect-error system actors are 'cli', 'worker' or 'scheduler:<job>'
  systemActor('nightly');
}

export async function throughTheRunner(): Promise<void> {
  // The same writes through the runner, as a named system actor, compile.
  await writeAs(systemActor('worker'), (trx) => deliveriesRepository.claim(trx, claim));
  await writeAs(systemActor('scheduler:purge-events'), (trx) => eventsRepository.purgeBefore(trx, ''));
  await writeAs(systemActor('cli'), (trx) => idempotencyRepository.purgeBefore(trx, ''));
}
