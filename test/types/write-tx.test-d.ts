// Type test, checked by `npm run typecheck` (tsc includes test/): a write that bypasses the write
// runner does not compile. Repository functions that write take a `WriteTx`, which only the runner
// (`writeAs`, checking the principal or system actor last) hands out; a plain transaction or the
// pool is a `Db`. Each `@ts-expect-error` below fails the typecheck if its line ever compiles.
import type { Db, Dialect } from '../../src/db/dialect.js';
import type { ApiKeysTable, ConsoleSessionsTable, UsersTable } from '../../src/db/types.js';
import { systemActor, type Tenant } from '../../src/kernel/principal.js';
import { consoleAuthRepository } from '../../src/modules/console-auth/console-auth.repository.js';
import { eventsRepository } from '../../src/modules/events/events.repository.js';
import { type IdempotencyRecord, idempotencyRepository } from '../../src/modules/idempotency/idempotency.repository.js';
import { keysRepository } from '../../src/modules/keys/keys.repository.js';
import { mfaRepository } from '../../src/modules/mfa/mfa.repository.js';
import { resourcesRepository } from '../../src/modules/resources/resources.repository.js';
import { usersRepository } from '../../src/modules/users/users.repository.js';
import { deliveriesRepository } from '../../src/modules/webhooks/deliveries.repository.js';
import { webhooksRepository } from '../../src/modules/webhooks/webhooks.repository.js';
import type { UnitOfWork } from '../../src/platform/unit-of-work.js';

declare const db: Db;
declare const dialect: Dialect;
declare const uow: UnitOfWork;
declare const tenant: Tenant;
declare const keyRow: ApiKeysTable;
declare const sessionRow: ConsoleSessionsTable;
declare const userRow: UsersTable;
declare const idempotencyRow: IdempotencyRecord;

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
  // Every module's writes, not only the worker's and the jobs': an API key made on the pool…
  // @ts-expect-error the pool is not a WriteTx
  await keysRepository.insert(db, keyRow);
  // …a console session opened in a transaction of its own (sign-in did, before it had an anonymous actor)…
  await dialect.writeTransaction(db, async (trx) => {
    // @ts-expect-error a plain transaction is not a WriteTx
    await consoleAuthRepository.insertSession(trx, sessionRow);
    // @ts-expect-error nor for a member's role
    await usersRepository.setMembership(trx, userRow.id, { role: 'viewer', updated_at: '' });
  });
  // …an endpoint or a resource deleted, a workspace's second-factor policy set, a user added: no.
  // @ts-expect-error the pool is not a WriteTx
  await webhooksRepository.delete(db, tenant, 'whk_1');
  // @ts-expect-error nor for resources
  await resourcesRepository.delete(db, tenant, 'res_1');
  // @ts-expect-error nor for the console's second factors
  await mfaRepository.setPolicy(db, tenant.workspaceId, true, '');
  // @ts-expect-error nor for users
  await usersRepository.insert(db, userRow);
  // An idempotency record stored beside the runner (an answer given without a write): no.
  // @ts-expect-error the pool is not a WriteTx
  await idempotencyRepository.insertIfAbsent(db, idempotencyRow);
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
  await uow.as(systemActor('worker')).run(({ trx }) => deliveriesRepository.claim(trx, claim));
  await uow.as(systemActor('scheduler:purge-events')).run(({ trx }) => eventsRepository.purgeBefore(trx, ''));
  await uow.as(systemActor('cli')).run(({ trx }) => idempotencyRepository.purgeBefore(trx, ''));
  await uow.as(systemActor('cli')).run(({ trx }) => keysRepository.insert(trx, keyRow), { changesKeys: true });
  await uow.as(systemActor('cli')).run(({ trx }) => consoleAuthRepository.insertSession(trx, sessionRow));
  await uow.as(systemActor('cli')).run(({ trx }) => webhooksRepository.delete(trx, tenant, 'whk_1'));
  await uow.as(systemActor('cli')).run(({ trx }) => mfaRepository.setPolicy(trx, tenant.workspaceId, true, ''));
  // The hooks of a door get its WriteTx: the idempotency record is claimed in the change's own transaction.
  await uow
    .as(systemActor('cli'), {
      before: (trx) => idempotencyRepository.insertIfAbsent(trx, idempotencyRow).then(() => undefined),
    })
    .run(async () => undefined);
}
