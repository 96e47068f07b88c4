import { type Config, publicUrl } from './config.js';
import type { Storage } from './db/database.js';
import type { Db } from './db/dialect.js';
import type { AuditActor } from './kernel/audit-actions.js';
import type { Clock } from './kernel/clock.js';
import { type Actor, systemActor } from './kernel/principal.js';
import { createSignal } from './lib/signal.js';
import { createAuditService } from './modules/audit/audit.service.js';
import { createAuditAppender } from './modules/audit/audit-append.js';
import { createAuditSequencer } from './modules/audit/audit-sequencer.js';
import { createWriteRunner, type PrincipalChecks, type WriteTx } from './modules/auth/write-runner.js';
import { createBillingService } from './modules/billing/billing.service.js';
import { loadPlans } from './modules/billing/plans.js';
import { createConsoleAuthService } from './modules/console-auth/console-auth.service.js';
import { sessionCheck } from './modules/console-auth/session-check.js';
import { createDeliveryWorker, type WorkerLogger } from './modules/delivery-engine/delivery.worker.js';
import { createSender, type Send } from './modules/delivery-engine/sender.js';
import { createEventsService } from './modules/events/events.service.js';
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
import { createResourcesService } from './modules/resources/resources.service.js';
import { createSsoService, type SsoFetch } from './modules/sso/sso.service.js';
import { createUsageService } from './modules/usage/usage.service.js';
import { memberRole, systemCheck } from './modules/users/user-check.js';
import { createUsersService } from './modules/users/users.service.js';
import { createDeliveriesService } from './modules/webhooks/deliveries.service.js';
import { createEndpointHealth } from './modules/webhooks/endpoint-health.js';
import { createOutbox } from './modules/webhooks/outbox.js';
import { createWebhooksService } from './modules/webhooks/webhooks.service.js';
import { createWorkspacesService } from './modules/workspaces/workspaces.service.js';

/** Work the worker process repeats (retention purges); each writes as the actor `scheduler:<id>`. */
export interface PeriodicJob {
  /** Stable id, kebab-case: names its actor (`scheduler:<id>`) in the write runner. */
  id: string;
  /** What it does, for logs. */
  name: string;
  everyMs: number;
  /** Returns how many records it handled (removed, rolled up, sent), for the log line. */
  run(): Promise<number>;
}

const quiet: WorkerLogger = { info() {}, warn() {} };

/**
 * The composition root: wires every service once, the delivery worker and the periodic jobs
 * included, and shows which module reaches which other module's data (each through that module's
 * service, never its repository). Routes, the CLI and the worker all call these. Nothing runs until
 * a caller starts it (worker.ts).
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
}) {
  const { db, dialect } = deps.storage;
  const clock = deps.clock;
  // Rung after a commit that queued deliveries; this process's delivery worker listens.
  const deliveriesDue = createSignal();
  // The write-time re-check per kind of principal; `session` joins once the users service exists.
  const checks: PrincipalChecks = {
    api_key: apiKeyCheck(dialect, clock),
    system: systemCheck(),
    // Someone signing in, or a person on their own sign-in: the change itself checks the credential they present.
    anonymous: async () => true,
    person: async () => true,
  };
  // The audit log (docs/api.md#audit-log): each write's entries, appended last in its transaction, name its actor.
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
  const appendAudit = createAuditAppender({ clock, describe: describeActor });
  // Numbers each change's entries right after its commit, through the runner it is given to (so created after it).
  const sequencer = createAuditSequencer({ writeAs: () => writeAs });
  const writeAs = createWriteRunner({
    db,
    dialect,
    checks,
    roleOf: memberRole,
    audit: appendAudit,
    // A failure leaves the entries pending (numbered at the next read of the log); it is logged, the change stands.
    sequence: (ids) =>
      sequencer
        .sequence(ids)
        .catch((err: unknown) =>
          (deps.log ?? quiet).warn({ err }, 'audit entries left pending: numbered at the next read of the audit log'),
        ),
  });
  const audit = createAuditService({
    db,
    clock,
    writeAs,
    sequencer,
    retentionDays: deps.config.AUDIT_RETENTION_DAYS,
  });
  // Events; every change to a workspace's webhooks or integrations replaces its receivers' token (receiversChanged).
  const events = createEventsService({ db });
  // This process's own change to a workspace's receivers also drops the webhooks its outbox holds for it, so its
  // next write reads them instead of expecting the old token and running again (docs/performance.md,
  // "The receivers of an event, cached"). The outbox is built below; this runs only in a change's transaction, after.
  const receiversChanged = async (trx: WriteTx, workspaceId: string): Promise<void> => {
    await events.receiversChanged(trx, workspaceId);
    outbox.forget(workspaceId);
  };
  // Slack and Discord (docs/integrations.md): told by the outbox and the notifications service, in their transactions.
  const integrations = createIntegrationsService({
    db,
    clock,
    writeAs,
    receiversChanged,
    urlGuard: { allowInsecure: false, resolve: deps.resolveHost },
    timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS,
    send:
      deps.integrationSend ??
      createSender({
        timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS,
        allowInsecure: deps.config.WEBHOOK_ALLOW_INSECURE_URLS,
      }),
  });
  // The users service tells of member changes through the notifications service, which reads users:
  // the call is bound here, once both exist (it runs only after createServices returns).
  const users = createUsersService({
    db,
    dialect,
    clock,
    writeAs,
    notify: (trx, notice) => notifications.securityNotice(trx, notice),
  });
  checks.session = sessionCheck(dialect, users);
  const notifications = createNotificationsService({
    db,
    clock,
    writeAs,
    admins: users.admins,
    userRow: users.row,
    publicUrl: () => publicUrl(deps.config),
    mailFrom: deps.config.MAIL_FROM,
    disableAfterH: deps.config.WEBHOOK_DISABLE_AFTER_H,
    transport: deps.mailTransport ?? (deps.config.SMTP_URL ? smtpTransport(deps.config.SMTP_URL) : undefined),
    log: deps.log ?? quiet,
    forward: integrations.forward,
    leaseMs: deps.config.MAIL_LEASE_MS,
  });
  const keyRegistry = createKeyRegistry({ db, dialect, clock, users, notifications, writeAs });
  const keys = createKeysService({ db, dialect, clock, writeAs, registry: keyRegistry });
  const health = createEndpointHealth({
    disableAfterMs: deps.config.WEBHOOK_DISABLE_AFTER_H * 3_600_000,
    notify: notifications.endpointNotice,
    receiversChanged,
  });
  const outbox = createOutbox({
    dialect,
    writeAs,
    deliveriesDue,
    events,
    health,
    forwardEvent: integrations.onEvent,
  });
  const resources = createResourcesService({
    db,
    clock,
    outbox,
    checkCreate: (trx, tenant) => billing.checkCreate(trx, tenant, 'resources'),
  });
  const consoleAuth = createConsoleAuthService({
    db,
    dialect,
    clock,
    writeAs,
    users,
    publicUrl: () => publicUrl(deps.config),
    notifications,
    sessions: { idleMin: deps.config.CONSOLE_SESSION_IDLE_MIN, maxH: deps.config.CONSOLE_SESSION_MAX_H },
    passwordCost: deps.config.PASSWORD_HASH_COST,
    // Second factors, the workspaces' policy and single sign-on decide the steps after a password (docs/sign-in.md).
    gate: () => ({
      factors: mfa.factors,
      requiresSecondFactor: mfa.requiresSecondFactor,
      ssoOnly: sso.ssoOnly,
    }),
  });
  const notifySecurity = (
    trx: Parameters<typeof notifications.securityNotice>[0],
    notice: Parameters<typeof notifications.securityNotice>[1],
  ) => notifications.securityNotice(trx, notice);
  const passkeys = createPasskeysService({
    db,
    dialect,
    writeAs,
    clock,
    publicUrl: () => publicUrl(deps.config),
    memberships: consoleAuth.membershipsIn,
    notify: notifySecurity,
  });
  const sso = createSsoService({
    db,
    dialect,
    clock,
    writeAs,
    users,
    memberByEmail: consoleAuth.memberIn,
    notify: notifySecurity,
    publicUrl: () => publicUrl(deps.config),
    allowHttpIssuer: deps.config.SSO_ALLOW_HTTP_ISSUER,
    fetch: deps.ssoFetch,
    timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS,
  });
  const mfa = createMfaService({
    db,
    dialect,
    clock,
    writeAs,
    users,
    memberships: consoleAuth.membershipsIn,
    checkPassword: consoleAuth.checkPassword,
    notify: notifySecurity,
    passkeyFactor: passkeys.secondFactor,
  });
  const members = createMembersService({ writeAs, users, links: consoleAuth, notifications });
  const usage = createUsageService({
    db,
    clock,
    writeAs,
    keys: keyRegistry,
    flushMs: deps.config.USAGE_FLUSH_MS,
    trackBillable: deps.config.PLAN_LIMITS === 'on',
    onFlushError: (err) => (deps.log ?? quiet).warn({ err }, 'usage flush failed; kept for the next one'),
  });
  const billing = createBillingService({
    db,
    clock,
    writeAs,
    plans: loadPlans(deps.config.PLANS_FILE),
    usage,
    // A downgrade is checked against what the live environment holds (docs/billing.md#plan-changes).
    counts: { resources: (t, d) => resources.countIn(t, d), webhooks: (t, d) => webhooks.countIn(t, d) },
    lockWorkspace: (trx, id) => workspaces.lock(trx, id),
    enforceLimits: deps.config.PLAN_LIMITS === 'on',
    // Usage thresholds and issued invoices tell the admins (docs/notifications.md); billing never touches notifications' tables.
    notify: (trx, notice) => notifications.billingNotice(trx, notice),
  });
  const workspaces = createWorkspacesService({
    writeAs,
    db,
    dialect,
    clock,
    users,
    keys: keyRegistry,
    links: consoleAuth,
    billing,
  });
  const webhooks = createWebhooksService({
    db,
    dialect,
    clock,
    writeAs,
    urlGuard: { allowInsecure: deps.config.WEBHOOK_ALLOW_INSECURE_URLS, resolve: deps.resolveHost },
    outbox,
    lockWorkspace: workspaces.lock,
    receiversChanged,
    checkCreate: (trx, tenant) => billing.checkCreate(trx, tenant, 'webhooks'),
  });
  const deliveries = createDeliveriesService({ db, dialect, clock, outbox, webhooks });
  const idempotency = createIdempotencyService({ db, dialect, clock, writeAs });
  const delivery = createDeliveryWorker({
    outbox,
    clock,
    config: deps.config,
    deliveriesDue,
    log: deps.log ?? quiet,
  });
  const jobs: PeriodicJob[] = [
    {
      id: 'purge-events',
      name: 'purge events and delivery logs older than 30 days',
      everyMs: 60 * 60_000,
      run: () => outbox.purgeExpired(systemActor('scheduler:purge-events'), clock.now()),
    },
    {
      id: 'purge-idempotency',
      name: 'purge idempotency records older than 24 h',
      everyMs: 10 * 60_000,
      run: () => idempotency.purgeExpired(systemActor('scheduler:purge-idempotency')),
    },
    {
      id: 'send-notifications',
      name: 'send-notifications: emails sent (or kept in the local mailbox)',
      everyMs: 5_000,
      run: () => notifications.sendDue(systemActor('scheduler:send-notifications')),
    },
    {
      id: 'integrations',
      name: 'integrations: Slack and Discord messages sent',
      everyMs: 5_000,
      run: () => integrations.sendDue(systemActor('scheduler:integrations')),
    },
    {
      id: 'purge-integration-messages',
      name: 'purge-integration-messages: Slack and Discord messages sent or given up more than 30 days ago',
      everyMs: 60 * 60_000,
      run: () => integrations.purgeExpired(systemActor('scheduler:purge-integration-messages')),
    },
    {
      id: 'purge-notifications',
      name: 'purge-notifications: notifications older than 90 days (the feed keeps 90 days)',
      everyMs: 60 * 60_000,
      run: () => notifications.purgeExpired(systemActor('scheduler:purge-notifications')),
    },
    {
      id: 'purge-sign-in-steps',
      name: 'purge-sign-in-steps: sign-in failures older than 15 min, expired pending sign-ins, passkey challenges and SSO sign-ins',
      everyMs: 10 * 60_000,
      run: async () => {
        const actor = systemActor('scheduler:purge-sign-in-steps');
        return (await consoleAuth.purgeFailures(actor)) + (await mfa.purgeChallenges(actor)) + (await sso.purge(actor));
      },
    },
    {
      id: 'usage-rollup',
      name: 'usage-rollup: minutes into hours after 48 h, hours into days after 90 days, request log after 7 days',
      everyMs: 10 * 60_000,
      run: () => usage.rollup(systemActor('scheduler:usage-rollup')),
    },
    {
      id: 'billing-invoices',
      name: 'billing-invoices: invoices finalized for periods that ended an hour ago',
      everyMs: 5 * 60_000,
      run: () => billing.finalizeDue(systemActor('scheduler:billing-invoices')),
    },
    {
      id: 'key-expiry-notices',
      name: 'key-expiry-notices: owners and admins told of keys that stop working within 7 days, once per key',
      everyMs: 5 * 60_000,
      run: () => keyRegistry.notifyExpiring(systemActor('scheduler:key-expiry-notices')),
    },
    {
      id: 'billing-usage-notices',
      name: 'billing-usage-notices: admins told at 50, 80 and 100 % of the included requests, once per period each',
      everyMs: 60_000,
      run: () => billing.notifyUsage(systemActor('scheduler:billing-usage-notices')),
    },
    {
      id: 'purge-audit',
      name: 'purge-audit: audit entries older than AUDIT_RETENTION_DAYS, the chain anchored at the last one deleted',
      everyMs: 60 * 60_000,
      run: () => audit.purgeExpired(systemActor('scheduler:purge-audit')),
    },
  ];
  return {
    audit,
    keyRegistry,
    keys,
    users,
    resources,
    events,
    webhooks,
    deliveries,
    workspaces,
    idempotency,
    consoleAuth,
    mfa,
    passkeys,
    sso,
    members,
    outbox,
    usage,
    billing,
    notifications,
    integrations,
    delivery,
    jobs,
    deliveriesDue,
    checks,
    writeAs,
  };
}
export type Services = ReturnType<typeof createServices>;
