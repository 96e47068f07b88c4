import type { Db } from '../../db/dialect.js';
import type { NotificationsTable } from '../../db/types.js';
import { isoAt } from '../../kernel/clock.js';
import { fieldError } from '../../kernel/errors.js';
import { type FeedCategory, OPTIONAL_CATEGORIES, type OptionalCategory } from '../../kernel/notification-types.js';
import type { Principal } from '../../kernel/principal.js';
import type { Unit } from '../../platform/unit-of-work.js';
import { notificationsRepository as repo } from './notifications.repository.js';
import type { NotificationsDeps } from './notifications-deps.js';

const ALL_CHANNELS = 'email,in_app';

/** One category's channels for a person. */
export interface NotificationPreference {
  category: FeedCategory;
  email: boolean;
  in_app: boolean;
  /** true: cannot be turned off (security). */
  locked: boolean;
}

/** Each person's channels per category (docs/notifications.md#preferences): read, set, and applied to new rows. */
export function createPreferences(deps: NotificationsDeps) {
  const { db, clock } = deps;

  /**
   * Each recipient's channels for an optional category, on rows about to be written: none → no row;
   * no email → written `skipped` (the feed only); no in-app → kept out of the feed (`channels`).
   */
  async function applyPreferences(
    trx: Db,
    rows: NotificationsTable[],
    category: OptionalCategory,
  ): Promise<NotificationsTable[]> {
    const prefs = new Map(
      (await repo.preferencesOf(trx, [...new Set(rows.map((r) => r.user_id))], category)).map((p) => [
        p.user_id,
        p.channels,
      ]),
    );
    const out: NotificationsTable[] = [];
    for (const r of rows) {
      const channels = prefs.get(r.user_id) ?? ALL_CHANNELS;
      if (channels === '') continue;
      const email = channels.includes('email');
      out.push({
        ...r,
        channels: channels === ALL_CHANNELS ? null : channels,
        ...(email ? {} : { status: 'skipped', next_attempt_at: null, last_error: 'email turned off' }),
      });
    }
    return out;
  }

  /** The caller's channels per category (security first, always on). */
  async function preferences(p: Principal): Promise<NotificationPreference[]> {
    const rows = p.userId === null ? [] : await repo.preferencesOfUser(db, p.userId);
    const chosen = new Map(rows.map((r) => [r.category, r.channels]));
    return [
      { category: 'security', email: true, in_app: true, locked: true },
      ...OPTIONAL_CATEGORIES.map((category) => {
        const channels = chosen.get(category) ?? ALL_CHANNELS;
        return { category, email: channels.includes('email'), in_app: channels.includes('in_app'), locked: false };
      }),
    ];
  }

  /** Sets the caller's channels for the categories given; turning security off is 400 and changes nothing. */
  async function setPreferences(
    u: Unit<Principal>,
    input: { category: NotificationPreference['category']; email: boolean; in_app: boolean }[],
  ): Promise<NotificationPreference[]> {
    if (input.some((i) => i.category === 'security' && !(i.email && i.in_app))) {
      throw fieldError('preferences', 'locked', 'Security notifications cannot be turned off.');
    }
    const p = u.actor;
    const userId = p.userId;
    if (userId === null) return preferences(p);
    const at = isoAt(clock.now());
    await u.run(async ({ trx }) => {
      for (const i of input) {
        if (i.category === 'security') continue;
        const channels = [i.email ? 'email' : '', i.in_app ? 'in_app' : ''].filter(Boolean).join(',');
        await repo.upsertPreference(trx, { user_id: userId, category: i.category, channels, updated_at: at });
      }
    });
    return preferences(p);
  }

  return { applyPreferences, preferences, setPreferences };
}
export type Preferences = ReturnType<typeof createPreferences>;
