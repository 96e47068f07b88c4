import { randomBytes } from 'node:crypto';
import { type Config, dunningDays, exportsDir, publicUrl, secretsKeys, stripeOn } from './config.js';
import type { Storage } from './db/database.js';
import type { Db } from './db/dialect.js';
import type { AuditActor } from './kernel/audit-actions.js';
import type { Clock } from './kernel/clock.js';
import { type Actor, type SystemActor, systemActor } from './kernel/principal.js';
import { createSender, type Send } from './lib/http-send.js';
import { createSealer, type Sealer } from './lib/sealed.js';
import { createSignal } from './lib/signal.js';
import { createAuditService } from './modules/audit/audit.service.js';
import { createAuditSubscriber } from './modules/audit/audit-append.js';
import { createAuditSequencer } from './modules/audit/audit-sequencer.js';
import { createBillingService } from './modules/billing/billing.service.js';
import { loadPlans } from './modules/billing/plans.js';
import { createStripeGateway, type PaymentGateway } from './modules/billing/stripe-gateway.js';
import { createConsoleAuthService, createSignInReads } from './modules/console-auth/console-auth.service.js';
import { sessionCheck } from './modules/console-auth/session-check.js';
import { createDeliveryWorker, type WorkerLogger } from './modules/delivery-engine/delivery.worker.js';
import { createEventsService } from './modules/events/events.service.js';
import { byEnvironment } from './modules/exports/export-archive.js';
import { createExportsService } from './modules/exports/exports.service.js';
import { createIdempotencyService } from './modules/idempotency/idempotency.service.js';
import { createIntegrationsService } from './modules/integrations/integrations.service.js';
import { apiKeyCheck } from './modules/keys/key-check.js';
import { createKeyRegistry } from './modules/keys/key-registry.service.js';
import { createKeysService } from './modules/keys/keys.service.js';
import { createMembersService } from './modules/members/members.service.js';
import { createMfaService } from './modules/mfa/mfa.service.js';
import { createPasskeysService } from './modules/mfa/passkeys.service.js';
import { createNotificationsService, type MailTransport } from './modules/notifications/notifications.service.js';
import { smtpTransport } from './modules/notifications/smtp.js';
import { createOperatorEvents } from './modules/operator-events/operator-events.service.js';
import { createResourcesService } from './modules/resources/resources.service.js';
import { createSsoService, type SsoFetch } from './modules/sso/sso.service.js';
import { createUsageService } from './modules/usage/usage.service.js';
import { memberRole, systemCheck } from './modules/users/user-check.js';
import { createUserErasure } from './modules/users/user-erasure.js';
import { createUsersService } from './modules/users/users.service.js';
import { createDeliveriesService } from './modules/webhooks/deliveries.service.js';
import { createEndpointHealth } from './modules/webhooks/endpoint-health.js';
import { createOutbox } from './modules/webhooks/outbox.js';
import { createWebhooksService } from './modules/webhooks/webhooks.service.js';
import { createWorkspaceDeletion } from './modules/workspaces/workspace-deletion.service.js';
import { createWorkspacesService } from './modules/workspaces/workspaces.service.js';
import { checkSealedColumns, type SealedColumn, type StoredSecret, sealColumns } from './platform/sealed-columns.js';
import { createUnitOfWork, type PrincipalChecks, type Unit } from './platform/unit-of-work.js';

/** Work the worker process repeats (retention purges); each writes as the actor `scheduler:<id>`. */
export interface PeriodicJob {
  /** Stable id, kebab-case: names its actor (`scheduler:<id>`) in the unit of work. */
  id: string;
  /** What it does, for logs. */
  name: string;
  everyMs: number;
  /** Returns how many records it handled (removed, rolled up, sent), for the log line. */
  run(): Promise<number>;
}

const quiet: WorkerLogger = { info() {}, warn() {} };

/**
 * The composition root: builds every service once, in an order the type checker proves (each is built from
 * those above it; no callback reaches one built later), registers the subscribers of changes with the unit of
 * work, and builds the delivery worker and the periodic jobs. It shows which module reaches which other
 * module's data (each through that module's service, never its repository). Routes, the CLI and the worker all
 * call these. Nothing runs until a caller starts it (worker.ts).
 */
export function createServices(deps: {
  storage: Storage;
  clock: Clock;
  config: Config;
  /** Where the delivery worker logs (default: nowhere). */
  log?: WorkerLogger;
  /** DNS resolution for the webhook URL check at webhook creation (tests inject one); the system's by default. */
  resolveHost?: (host: string) => Promise<string[]>;
  /** Where emails go instead of SMTP_URL's server (tests); neither: the local mailbox. */
  mailTransport?: MailTransport;
  /** How integrations POST to Slack and Discord (tests inject one); the delivery engine's sender by default. */
  integrationSend?: Send;
  /** How single sign-on reaches identity providers (tests put a hand in the middle); fetch by default. */
  ssoFetch?: SsoFetch;
  /** Stripe as the tests reach it (their own gateway); by default built from the STRIPE_* settings. */
  paymentGateway?: PaymentGateway;
  /** The sealer of stored secrets (tests); by default from SECRETS_KEY or the key file (docs/settings.md#secrets-at-rest). */
  sealer?: Sealer;
}) {
  const { db, dialect } = deps.storage;
  const { clock, config } = deps;
  const log = deps.log ?? quiet;
  // Secrets at rest (src/lib/sealed.ts): PostgreSQL without SECRETS_KEY stops here, naming the setting.
  const sealingKeys = deps.sealer ? undefined : secretsKeys(config);
  if (sealingKeys?.createdFile) {
    log.info(
      { path: sealingKeys.createdFile },
      `created the secrets key file ${sealingKeys.createdFile}: keep it with every backup (a backup without it cannot sign)`,
    );
  }
  const sealer = deps.sealer ?? createSealer(sealingKeys?.keys ?? []);
  // Rung after a commit that queued deliveries; this process's delivery worker listens.
  const deliveriesDue = createSignal();

  // The domains. None of them opens a change: each writing function takes the door (a Unit) it is given.
  const events = createEventsService({ db });
  const users = createUsersService({ db, dialect, clock });
  const keyRegistry = createKeyRegistry({ db, dialect, clock, users });
  const keys = createKeysService({ db, clock, registry: keyRegistry });
  const resources = createResourcesService({ db, clock });
  const health = createEndpointHealth({ disableAfterMs: config.WEBHOOK_DISABLE_AFTER_H * 3_600_000 });
  const outbox = createOutbox({
    dialect,
    deliveriesDue,
    events,
    health,
    sealer,
    retentionDays: config.EVENT_RETENTION_DAYS,
  });
  // Instance-wide events for the operator (docs/api.md#operator-events), delivered by the same worker.
  const operatorEvents = createOperatorEvents({
    db,
    dialect,
    clock,
    deliveriesDue,
    receiver:
      config.OPERATOR_WEBHOOK_URL && config.OPERATOR_WEBHOOK_SECRET
        ? { url: config.OPERATOR_WEBHOOK_URL, secret: config.OPERATOR_WEBHOOK_SECRET }
        : undefined,
    retentionDays: config.EVENT_RETENTION_DAYS,
  });
  const webhooks = createWebhooksService({
    db,
    dialect,
    clock,
    urlGuard: { allowInsecure: config.WEBHOOK_ALLOW_INSECURE_URLS, resolve: deps.resolveHost },
    outbox,
    sealer,
  });
  const deliveries = createDeliveriesService({ db, dialect, clock, outbox, webhooks });
  const integrations = createIntegrationsService({
    db,
    clock,
    urlGuard: { allowInsecure: false, resolve: deps.resolveHost },
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    sealer,
    send:
      deps.integrationSend ??
      createSender({ timeoutMs: config.WEBHOOK_TIMEOUT_MS, allowInsecure: config.WEBHOOK_ALLOW_INSECURE_URLS }),
  });
  const notifications = createNotificationsService({
    db,
    clock,
    admins: users.admins,
    userRow: users.row,
    publicUrl: () => publicUrl(config),
    mailFrom: config.MAIL_FROM,
    disableAfterH: config.WEBHOOK_DISABLE_AFTER_H,
    transport: deps.mailTransport ?? (config.SMTP_URL ? smtpTransport(config.SMTP_URL) : undefined),
    log,
    leaseMs: config.MAIL_LEASE_MS,
  });
  const usage = createUsageService({ db, clock, requestLogRetentionDays: config.REQUEST_LOG_RETENTION_DAYS });
  const billing = createBillingService({
    db,
    clock,
    plans: loadPlans(config.PLANS_FILE),
    usage,
    // A downgrade is checked against what the live environment holds (docs/billing.md#plan-changes).
    counts: { resources: (t, d) => resources.countIn(t, d), webhooks: (t, d) => webhooks.countIn(t, d) },
    enforceLimits: config.PLAN_LIMITS === 'on',
    // Payments with Stripe (docs/billing.md#payments-with-stripe): only with both settings (config.ts refuses half).
    gateway:
      deps.paymentGateway ??
      (stripeOn(config)
        ? createStripeGateway({
            secretKey: config.STRIPE_SECRET_KEY as string,
            webhookSecret: config.STRIPE_WEBHOOK_SECRET as string,
            apiBase: config.STRIPE_API_BASE,
          })
        : null),
    dunningDays: dunningDays(config),
    consoleUrl: () => publicUrl(config),
  });

  // The audit log (docs/api.md#audit-log): each change's entries, appended last in its transaction, name its actor.
  const describeActor = async (trx: Db, actor: Actor): Promise<AuditActor> => {
    switch (actor.kind) {
      case 'api_key': {
        const name = actor.keyName ?? (await keyRegistry.row(trx, actor.keyId))?.name ?? actor.keyId;
        return { type: 'key', id: actor.keyId, name, user_id: actor.userId };
      }
      case 'session': {
        const u = await users.row(trx, actor.userId);
        return { type: 'user', id: actor.userId, name: u?.name || u?.email || actor.userId };
      }
      case 'system':
        return { type: 'system', id: actor.name, name: actor.name };
      default:
        throw new Error(`a ${actor.kind} actor's audit entry must name the user concerned`);
    }
  };
  const sequencer = createAuditSequencer();

  // The unit of work: the one door to a change. Its subscribers react to what a change emits, in this order, in the
  // change's transaction: plan limits refuse first; the outbox records webhook events and their deliveries (and tells
  // integrations of each); notifications write their rows (and tell integrations); the operator's events theirs; the
  // audit log closes the change.
  const checks: PrincipalChecks = {
    api_key: apiKeyCheck(dialect, clock),
    session: sessionCheck(dialect, users),
    system: systemCheck(),
    // Someone signing in, or a person on their own sign-in: the change itself checks the credential they present.
    anonymous: async () => true,
    person: async () => true,
  };
  const uow = createUnitOfWork({
    db,
    dialect,
    checks,
    roleOf: memberRole,
    subscribers: [
      billing.subscriber,
      outbox.subscriber,
      integrations.subscriber,
      notifications.subscriber,
      operatorEvents.subscriber,
      createAuditSubscriber({
        clock,
        describe: describeActor,
        sequencer,
        // The entries stay pending (numbered at the next read of the log); the change stands.
        onPending: (err) => log.warn({ err }, 'audit entries left pending: numbered at the next read of the audit log'),
      }),
    ],
    onAfterCommitError: (err) => log.warn({ err }, 'work after a commit failed; the change stands'),
  });

  // What acts as actors of its own making (sign-in, second factors, single sign-on) is built with the unit of work.
  const audit = createAuditService({ db, clock, uow, sequencer, retentionDays: config.AUDIT_RETENTION_DAYS });
  const erasure = createUserErasure({ db, dialect, clock, uow, flushAudit: sequencer.flush });
  const idempotency = createIdempotencyService({ db, dialect, clock });
  const signInReads = createSignInReads({ db, passwordCost: config.PASSWORD_HASH_COST });
  const passkeys = createPasskeysService({
    db,
    dialect,
    uow,
    clock,
    publicUrl: () => publicUrl(config),
    memberships: signInReads.membershipsIn,
  });
  const mfa = createMfaService({
    db,
    dialect,
    clock,
    uow,
    users,
    memberships: signInReads.membershipsIn,
    checkPassword: signInReads.checkPassword,
    passkeyFactor: passkeys.secondFactor,
    sealer,
  });
  const sso = createSsoService({
    db,
    dialect,
    clock,
    uow,
    users,
    memberByEmail: signInReads.memberIn,
    publicUrl: () => publicUrl(config),
    allowHttpIssuer: config.SSO_ALLOW_HTTP_ISSUER,
    fetch: deps.ssoFetch,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    sealer,
  });
  const consoleAuth = createConsoleAuthService({
    db,
    dialect,
    clock,
    uow,
    publicUrl: () => publicUrl(config),
    sessions: { idleMin: config.CONSOLE_SESSION_IDLE_MIN, maxH: config.CONSOLE_SESSION_MAX_H },
    passwordCost: config.PASSWORD_HASH_COST,
    // Second factors, the workspaces' policy and single sign-on decide the steps after a password (docs/sign-in.md).
    gate: { factors: mfa.factors, requiresSecondFactor: mfa.requiresSecondFactor, ssoOnly: sso.ssoOnly },
  });
  const members = createMembersService({ users, links: consoleAuth });
  const workspaces = createWorkspacesService({ db, dialect, clock, users, keys: keyRegistry, links: consoleAuth });
  const meter = usage.meterWith(uow.as(systemActor('meter')), {
    flushMs: config.USAGE_FLUSH_MS,
    trackBillable: config.PLAN_LIMITS === 'on',
    recordUse: keyRegistry.recordUse,
    deletingAmong: workspaces.deletingAmong,
    onFlushError: (err) => log.warn({ err }, 'usage flush failed; kept for the next one'),
  });
  const delivery = createDeliveryWorker({
    outbox,
    operator: operatorEvents,
    unit: uow.as(systemActor('worker')),
    clock,
    config,
    deliveriesDue,
    log,
  });
  // Workspace exports (docs/data-lifecycle.md#export): each kind of data read in batches through its owner's service.
  const exports = createExportsService({
    db,
    clock,
    dir: exportsDir(config),
    sources: [
      { kind: 'members', batch: users.exportBatch },
      { kind: 'keys', batch: keys.exportBatch },
      { kind: 'resources', batch: byEnvironment(resources.exportBatch) },
      { kind: 'webhooks', batch: byEnvironment(webhooks.exportBatch) },
      { kind: 'events', batch: byEnvironment(events.exportBatch) },
      {
        kind: 'deliveries',
        batch: byEnvironment((ws, env, after, limit) => deliveries.exportBatch(ws, env, after, limit)),
      },
      { kind: 'usage', batch: usage.exportBatch },
      { kind: 'invoices', batch: billing.exportBatch },
    ],
    audit,
    workerId: `exp_run_${randomBytes(6).toString('hex')}`,
  });
  const workspaceDeletion = createWorkspaceDeletion({
    db,
    dialect,
    clock,
    graceDays: config.WORKSPACE_DELETION_GRACE_DAYS,
    keys: keyRegistry,
    users,
    archives: exports,
  });
  /** The door of a periodic job: its own system actor, `scheduler:<id>`. */
  const scheduler = (id: string) => uow.as(systemActor(`scheduler:${id}`));
  // Secrets at rest (docs/settings.md#secrets-at-rest): each owner's sealed columns (src/platform/sealed-columns.ts).
  const sealedColumns: SealedColumn[] = [
    ...webhooks.sealedColumns,
    ...mfa.sealedColumns,
    ...sso.sealedColumns,
    ...integrations.sealedColumns,
  ];
  const keySource = sealingKeys?.source ?? 'the sealer given';
  const secrets = {
    sealer,
    sealedColumns,
    /** The key file this start made (SQLite, the first start): the server logs its path. */
    createdKeyFile: sealingKeys?.createdFile,
    /**
     * Start-up, after the migrations: refuses (SecretsKeyError naming SECRETS_KEY) when a stored secret is sealed
     * under a key not held; then seals the secrets stored clear (by earlier versions), in resumable batches.
     */
    async prepare(onBatch?: (column: string, sealed: StoredSecret[]) => void): Promise<number> {
      await checkSealedColumns(db, sealer, sealedColumns, keySource);
      return sealColumns(scheduler('seal-secrets'), db, sealer, sealedColumns, { kid: null, onBatch });
    },
    /**
     * `wsvc secrets rotate-key` (docs/settings.md#rotating-the-key): seals every stored secret again under the first
     * key, in resumable batches, while the service runs (every process holding both keys); then records
     * `secrets.key_rotated` in every workspace. `onProgress` hears the running count per column.
     */
    async rotate(u: Unit<SystemActor>, onProgress?: (column: string, sealed: number) => void): Promise<number> {
      await checkSealedColumns(db, sealer, sealedColumns, keySource);
      const perWorkspace = new Map<string, number>();
      const perColumn = new Map<string, number>();
      const n = await sealColumns(u, db, sealer, sealedColumns, {
        kid: sealer.primaryKid,
        onBatch: (column, sealed) => {
          for (const s of sealed) perWorkspace.set(s.at.scope, (perWorkspace.get(s.at.scope) ?? 0) + 1);
          perColumn.set(column, (perColumn.get(column) ?? 0) + sealed.length);
          onProgress?.(column, perColumn.get(column) ?? 0);
        },
      });
      for (const w of await workspaces.list()) {
        await u.run(async ({ audit }) =>
          audit.record({
            action: 'secrets.key_rotated',
            target: { type: 'secrets_key', id: sealer.primaryKid },
            env: null,
            workspaceId: w.id,
            changes: {
              key_id: { before: null, after: sealer.primaryKid },
              secrets_sealed_again: { before: null, after: perWorkspace.get(w.id) ?? 0 },
            },
          }),
        );
      }
      return n;
    },
  };
  const jobs: PeriodicJob[] = [
    {
      id: 'purge-events',
      name: 'purge-events: events and delivery logs older than EVENT_RETENTION_DAYS, in batches',
      everyMs: 60 * 60_000,
      run: () => outbox.purgeExpired(scheduler('purge-events'), clock.now()),
    },
    {
      id: 'purge-operator-deliveries',
      name: 'purge-operator-deliveries: operator event deliveries older than EVENT_RETENTION_DAYS',
      everyMs: 60 * 60_000,
      run: () => operatorEvents.purgeExpired(scheduler('purge-operator-deliveries')),
    },
    {
      id: 'purge-idempotency',
      name: 'purge-idempotency: idempotency records older than 24 h',
      everyMs: 10 * 60_000,
      run: () => idempotency.purgeExpired(scheduler('purge-idempotency')),
    },
    {
      id: 'send-notifications',
      name: 'send-notifications: emails sent (or kept in the local mailbox)',
      everyMs: 5_000,
      run: () => notifications.sendDue(scheduler('send-notifications')),
    },
    {
      id: 'integrations',
      name: 'integrations: Slack and Discord messages sent',
      everyMs: 5_000,
      run: () => integrations.sendDue(scheduler('integrations')),
    },
    {
      id: 'purge-integration-messages',
      name: 'purge-integration-messages: Slack and Discord messages sent or given up more than 30 days ago',
      everyMs: 60 * 60_000,
      run: () => integrations.purgeExpired(scheduler('purge-integration-messages')),
    },
    {
      id: 'purge-notifications',
      name: 'purge-notifications: notifications older than 90 days (the feed keeps 90 days)',
      everyMs: 60 * 60_000,
      run: () => notifications.purgeExpired(scheduler('purge-notifications')),
    },
    {
      id: 'purge-sign-in-steps',
      name: 'purge-sign-in-steps: sign-in failures older than 15 min, expired pending sign-ins, passkey challenges and SSO sign-ins',
      everyMs: 10 * 60_000,
      run: async () => {
        const u = scheduler('purge-sign-in-steps');
        return (await consoleAuth.purgeFailures(u)) + (await mfa.purgeChallenges(u)) + (await sso.purge(u));
      },
    },
    {
      id: 'usage-rollup',
      name: 'usage-rollup: minutes into hours after 48 h, hours into days after 90 days, request log after REQUEST_LOG_RETENTION_DAYS',
      everyMs: 10 * 60_000,
      run: () => usage.rollup(scheduler('usage-rollup')),
    },
    {
      id: 'billing-invoices',
      name: 'billing-invoices: invoices finalized for periods that ended an hour ago',
      everyMs: 5 * 60_000,
      run: () => billing.finalizeDue(scheduler('billing-invoices')),
    },
    // Payments with Stripe (docs/billing.md#payments-with-stripe): these two run only when both settings are given.
    ...(billing.paymentsOn
      ? [
          {
            id: 'billing-payments',
            name: 'billing-payments: finalized invoices charged with Stripe, unanswered attempts sent again, retries due',
            everyMs: 60_000,
            run: () => billing.chargeDue(scheduler('billing-payments')),
          },
          {
            id: 'billing-settle-payments',
            name: 'billing-settle-payments: PaymentIntents still processing after 15 minutes read back from Stripe',
            everyMs: 5 * 60_000,
            run: () => billing.settleProcessing(scheduler('billing-settle-payments')),
          },
        ]
      : []),
    {
      id: 'key-expiry-notices',
      name: 'key-expiry-notices: owners and admins told of keys that stop working within 7 days, once per key',
      everyMs: 5 * 60_000,
      run: () => keyRegistry.notifyExpiring(scheduler('key-expiry-notices')),
    },
    {
      id: 'billing-usage-notices',
      name: 'billing-usage-notices: admins told at 50, 80 and 100 % of the included requests, once per period each',
      everyMs: 60_000,
      run: () => billing.notifyUsage(scheduler('billing-usage-notices')),
    },
    {
      id: 'exports',
      name: 'exports: workspace archives written, and those past their 24 h deleted',
      everyMs: 5_000,
      run: async () => {
        const u = scheduler('exports');
        return (await exports.runDue(u)) + (await exports.expireDue(u));
      },
    },
    {
      id: 'purge-audit',
      name: 'purge-audit: audit entries older than AUDIT_RETENTION_DAYS, the chain anchored at the last one deleted',
      everyMs: 60 * 60_000,
      run: () => audit.purgeExpired(scheduler('purge-audit')),
    },
    {
      id: 'workspace-deletions',
      name: 'workspace-deletions: rows of workspaces whose deletion grace period has ended, in batches',
      everyMs: 10 * 60_000,
      run: () => workspaceDeletion.runDue(scheduler('workspace-deletions')),
    },
  ];
  return {
    audit,
    exports,
    keyRegistry,
    keys,
    users,
    resources,
    events,
    webhooks,
    deliveries,
    workspaces,
    workspaceDeletion,
    idempotency,
    consoleAuth,
    mfa,
    passkeys,
    sso,
    members,
    outbox,
    operatorEvents,
    usage: { ...usage, meter },
    billing,
    notifications,
    integrations,
    delivery,
    jobs,
    deliveriesDue,
    checks,
    uow,
    secrets,
    erasure,
  };
}
export type Services = ReturnType<typeof createServices>;
