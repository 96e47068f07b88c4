import { createEmailSender } from './email-sender.js';
import { createFeed, createNotificationReads } from './feed.js';
import { createNotices } from './notices.js';
import type { NotificationsDeps } from './notifications-deps.js';
import { createPreferences } from './preferences.js';

export { MAX_SEND_ATTEMPTS } from './email-sender.js';
export type { FeedItem } from './feed.js';
export { FEED_RETENTION_MS } from './feed.js';
export type { BillingNotice, LinkNotice, SecurityNotice } from './notices.js';
export type {
  MailTransport,
  NotificationLogger,
  NotificationsDeps,
  OutgoingMail,
} from './notifications-deps.js';
export type { NotificationPreference } from './preferences.js';

/**
 * The notification outbox (docs/api.md#notifications), one service of four parts: notifications are written in the
 * change that causes them (`subscriber`, registered by the wiring) and sent by the
 * worker (`sendDue`): over SMTP when a transport is given (SMTP_URL), else kept in the local
 * mailbox (`wsvc mail list|show`) with an info log line. A claim is leased, so a notification is
 * sent again only when its sender died between the send and the commit of its outcome.
 */
export function createNotificationsService(deps: NotificationsDeps) {
  const prefs = createPreferences(deps);
  const { preferences, setPreferences } = prefs;
  return {
    ...createNotices(deps, prefs),
    ...createEmailSender(deps),
    ...createFeed(deps),
    preferences,
    setPreferences,
    ...createNotificationReads(deps),
  };
}
export type NotificationsService = ReturnType<typeof createNotificationsService>;
