/**
 * The notification types, one row each (supplement §6.7 anchors, §4.6 coalescence, §7.6
 * version deltas; `enums/notification-type.json`): the surface a subscriber registers it
 * on, whether it is a delivery report, the coalescence window this seller keeps, the
 * release it appeared in, its payload schema, and where this seller's capability document
 * advertises it. Every list of types (per surface, delivery reports, advertised event
 * types, coalescence windows, the 3.2 gate on `window_update`) is derived from here, so
 * adding a type is one row plus the code that emits it.
 */

/** Where a subscriber registers the type (supplement §6.7: wrong surface = refused). */
export type NotificationSurface = 'media_buy' | 'account' | 'agent';

/** The first release whose `notification-type` enum names the type. */
export type NotificationRelease = '3.1' | '3.2';

/**
 * Where this seller's capability document lists the type (`agents/common/capabilities.ts`):
 * `capability_changes` (adcp.capability_changes.notifications), `relationship`
 * (media_buy.relationship_notifications), `account` (account.notifications),
 * `ext.impairments` / `ext.account_events` (what the published enums have no place for).
 */
export type AdvertisedIn =
  'capability_changes' | 'relationship' | 'account' | 'ext.impairments' | 'ext.account_events';

export interface NotificationTypeRow {
  surface: NotificationSurface;
  /** A delivery report (`media-buy-delivery-webhook-result.json`): own cadence, never coalesced. */
  deliveryReport: boolean;
  /**
   * The window (seconds) this seller coalesces the type for, at most the §4.6 default;
   * absent when it does not coalesce it (reports) or does not emit it.
   */
  coalescenceSeconds?: number;
  /** Shorter windows per kind (`impairment.fraud`: latency-sensitive, §4.6 "sub-minute / none"). */
  coalescenceByKind?: Readonly<Record<string, number>>;
  since: NotificationRelease;
  /** The published payload schema (under `schemas/<release>/`). */
  payload: string;
  /** The capability-document blocks that list it; absent: registrable, not emitted here. */
  advertised?: readonly AdvertisedIn[];
}

const REPORT = 'media-buy/media-buy-delivery-webhook-result.json';
const FEED = 'core/wholesale-feed-webhook.json';

/** The table. Order is the published enum's; derived lists keep it. */
export const NOTIFICATION_TYPES = {
  scheduled: { surface: 'media_buy', deliveryReport: true, since: '3.1', payload: REPORT },
  final: { surface: 'media_buy', deliveryReport: true, since: '3.1', payload: REPORT },
  delayed: { surface: 'media_buy', deliveryReport: true, since: '3.1', payload: REPORT },
  adjusted: { surface: 'media_buy', deliveryReport: true, since: '3.1', payload: REPORT },
  window_update: { surface: 'media_buy', deliveryReport: true, since: '3.2', payload: REPORT },
  impairment: {
    surface: 'media_buy',
    deliveryReport: false,
    coalescenceSeconds: 300,
    coalescenceByKind: { fraud: 0, brand_safety: 0 },
    since: '3.1',
    payload: 'core/impairment.json',
    advertised: ['ext.impairments'],
  },
  'creative.status_changed': {
    surface: 'account',
    deliveryReport: false,
    coalescenceSeconds: 60,
    since: '3.1',
    payload: 'creative/creative-status-changed-webhook.json',
    advertised: ['ext.account_events'],
  },
  'creative.assignment_changed': {
    surface: 'account',
    deliveryReport: false,
    coalescenceSeconds: 60,
    since: '3.2',
    payload: 'creative/creative-assignment-changed-webhook.json',
    advertised: ['relationship', 'ext.account_events'],
  },
  'indicators.changed': {
    surface: 'account',
    deliveryReport: false,
    since: '3.2',
    payload: 'core/indicators-changed-webhook.json',
  },
  'creative.purged': {
    surface: 'account',
    deliveryReport: false,
    since: '3.1',
    payload: 'creative/creative-purged-webhook.json',
  },
  'account.status_changed': {
    surface: 'account',
    deliveryReport: false,
    coalescenceSeconds: 0,
    since: '3.2',
    payload: 'core/account-status-changed-webhook.json',
    advertised: ['account', 'ext.account_events'],
  },
  'product.created': { surface: 'account', deliveryReport: false, since: '3.1', payload: FEED },
  'product.updated': { surface: 'account', deliveryReport: false, since: '3.1', payload: FEED },
  'product.priced': { surface: 'account', deliveryReport: false, since: '3.1', payload: FEED },
  'product.removed': { surface: 'account', deliveryReport: false, since: '3.1', payload: FEED },
  'signal.created': { surface: 'account', deliveryReport: false, since: '3.1', payload: FEED },
  'signal.updated': { surface: 'account', deliveryReport: false, since: '3.1', payload: FEED },
  'signal.priced': { surface: 'account', deliveryReport: false, since: '3.1', payload: FEED },
  'signal.removed': { surface: 'account', deliveryReport: false, since: '3.1', payload: FEED },
  'wholesale_feed.bulk_change': {
    surface: 'account',
    deliveryReport: false,
    since: '3.1',
    payload: FEED,
  },
  'capabilities.changed': {
    surface: 'agent',
    deliveryReport: false,
    coalescenceSeconds: 0,
    since: '3.2',
    payload: 'core/capabilities-changed-webhook.json',
    advertised: ['capability_changes'],
  },
} as const satisfies Record<string, NotificationTypeRow>;

export type NotificationType = keyof typeof NOTIFICATION_TYPES;
type Rows = typeof NOTIFICATION_TYPES;

/** The types whose row has `surface` S. */
export type NotificationTypeOn<S extends NotificationSurface> = {
  [K in NotificationType]: Rows[K]['surface'] extends S ? K : never;
}[NotificationType];

/** The types whose row is (or is not) a delivery report. */
type ReportTypes = {
  [K in NotificationType]: Rows[K]['deliveryReport'] extends true ? K : never;
}[NotificationType];

const rows = Object.entries(NOTIFICATION_TYPES) as Array<[NotificationType, NotificationTypeRow]>;

/** The types of one surface, in table order, as a non-empty tuple (for z.enum). */
function typesWhere<T extends NotificationType>(
  keep: (row: NotificationTypeRow) => boolean,
): readonly [T, ...T[]] {
  const out = rows.filter(([, row]) => keep(row)).map(([type]) => type as T);
  if (out.length === 0) throw new Error('notification-types: an empty derived list');
  return out as unknown as readonly [T, ...T[]];
}

/** Types a media buy's `push_notification_config` / `reporting_webhook` carries. */
export const MEDIA_BUY_NOTIFICATION_TYPES = typesWhere<NotificationTypeOn<'media_buy'>>(
  (r) => r.surface === 'media_buy',
);
/** Types an account-level subscriber (`sync_accounts` notification_configs[]) may register. */
export const ACCOUNT_NOTIFICATION_TYPES = typesWhere<NotificationTypeOn<'account'>>(
  (r) => r.surface === 'account',
);
/** Types an agent-level subscriber (`sync_agent_notification_configs`) may register. */
export const AGENT_NOTIFICATION_TYPES = typesWhere<NotificationTypeOn<'agent'>>(
  (r) => r.surface === 'agent',
);
/** The delivery reports' `notification_type` values (supplement §6.3). */
export const DELIVERY_NOTIFICATION_TYPES = typesWhere<ReportTypes>((r) => r.deliveryReport);
export type DeliveryNotificationType = ReportTypes;

/** The types one capability-document block lists, in table order. */
export function advertisedTypes(block: AdvertisedIn): NotificationType[] {
  return rows.filter(([, row]) => row.advertised?.includes(block)).map(([type]) => type);
}

/**
 * Coalescence windows (seconds) per event type, and per `type.kind` where a kind has its
 * own (`get_agent_capabilities` coalescence_windows, §4.6).
 */
export function coalescenceWindows(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [type, row] of rows) {
    if (row.coalescenceSeconds === undefined) continue;
    out[type] = row.coalescenceSeconds;
    for (const [kind, seconds] of Object.entries(row.coalescenceByKind ?? {})) {
      out[`${type}.${kind}`] = seconds;
    }
  }
  return out;
}

/** Whether a seller speaking `version` may send the type (3.2 types need 3.2). */
export function existsIn(type: NotificationType, version: NotificationRelease): boolean {
  return NOTIFICATION_TYPES[type].since <= version;
}
