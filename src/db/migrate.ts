import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';
import type { Db, Dialect } from './dialect.js';
import * as core from './migrations/001-core.js';
import * as userRemoval from './migrations/002-user-removal.js';
import * as eventsDeliveries from './migrations/003-events-deliveries.js';
import * as userEmailReuse from './migrations/004-user-email-reuse.js';
import * as resourceCounts from './migrations/005-resource-counts.js';
import * as endpointKeyManagement from './migrations/007-endpoint-key-management.js';
import * as consoleAuth from './migrations/008-console-auth.js';
import * as deliveryLogIndexes from './migrations/009-delivery-log-indexes.js';
import * as usage from './migrations/010-usage.js';
import * as endpointHealth from './migrations/011-endpoint-health.js';
import * as notifications from './migrations/012-notifications.js';
import * as billing from './migrations/013-billing.js';
import * as notificationFeed from './migrations/014-notification-feed.js';
import * as usageNotices from './migrations/015-usage-notices.js';
import * as integrations from './migrations/017-integrations.js';
import * as keyExpiryNotices from './migrations/018-key-expiry-notices.js';
import * as keyRolledFrom from './migrations/019-key-rolled-from.js';
import * as teamSignIn from './migrations/021-team-sign-in.js';
import * as auditLog from './migrations/022-audit-log.js';
import * as auditIndex from './migrations/023-audit-index.js';
import * as auditPending from './migrations/024-audit-pending.js';
import * as receiverVersions from './migrations/025-receiver-versions.js';
import * as keyRecheck from './migrations/026-key-recheck.js';
import * as receiversExpected from './migrations/027-receivers-expected.js';
import * as exhaustedDeliveries from './migrations/028-exhausted-deliveries.js';
import * as operatorDeliveries from './migrations/029-operator-deliveries.js';
import * as exports from './migrations/032-exports.js';
import * as workspaceDeletion from './migrations/033-workspace-deletion.js';
import * as auditCommitments from './migrations/035-audit-commitments.js';
import * as billingCustomers from './migrations/036-billing-customers.js';
import * as invoicePayments from './migrations/037-invoice-payments.js';
import * as stripeEvents from './migrations/038-stripe-events.js';
import * as subscriptionPaymentState from './migrations/039-subscription-payment-state.js';

type DialectMigration = { up(db: Kysely<unknown>, dialect: Dialect): Promise<void> };

/** Every migration in order. Names are sorted by Kysely, so keep the numeric prefix. */
const MIGRATIONS: Record<string, DialectMigration> = {
  '001-core': core,
  '002-user-removal': userRemoval,
  '003-events-deliveries': eventsDeliveries,
  '004-user-email-reuse': userEmailReuse,
  '005-resource-counts': resourceCounts,
  '007-endpoint-key-management': endpointKeyManagement,
  '008-console-auth': consoleAuth,
  '009-delivery-log-indexes': deliveryLogIndexes,
  '010-usage': usage,
  '011-endpoint-health': endpointHealth,
  '012-notifications': notifications,
  '013-billing': billing,
  '014-notification-feed': notificationFeed,
  '015-usage-notices': usageNotices,
  '017-integrations': integrations,
  '018-key-expiry-notices': keyExpiryNotices,
  '019-key-rolled-from': keyRolledFrom,
  '021-team-sign-in': teamSignIn,
  '022-audit-log': auditLog,
  '023-audit-index': auditIndex,
  '024-audit-pending': auditPending,
  '025-receiver-versions': receiverVersions,
  '026-key-recheck': keyRecheck,
  '027-receivers-expected': receiversExpected,
  '028-exhausted-deliveries': exhaustedDeliveries,
  '029-operator-deliveries': operatorDeliveries,
  '032-exports': exports,
  '033-workspace-deletion': workspaceDeletion,
  '035-audit-commitments': auditCommitments,
  '036-billing-customers': billingCustomers,
  '037-invoice-payments': invoicePayments,
  '038-stripe-events': stripeEvents,
  '039-subscription-payment-state': subscriptionPaymentState,
};

class StaticProvider implements MigrationProvider {
  constructor(private readonly dialect: Dialect) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const out: Record<string, Migration> = {};
    for (const [name, m] of Object.entries(MIGRATIONS)) {
      out[name] = { up: (db) => m.up(db, this.dialect) };
    }
    return out;
  }
}

/** Applies every pending migration; returns the names applied. Throws if one fails. */
export async function migrateToLatest(db: Db, dialect: Dialect): Promise<string[]> {
  const migrationTableSchema = dialect.currentSchema ? await dialect.currentSchema(db) : undefined;
  const migrator = new Migrator({ db, provider: new StaticProvider(dialect), migrationTableSchema });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
