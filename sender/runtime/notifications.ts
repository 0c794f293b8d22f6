/**
 * The seller's notification side from a configuration, as `svc start` and `svc approve`
 * both build it: the outbox on the sender schema, the media-buy channels fed by the
 * caller's delivery numbers and clock, and the NotificationCore the task handlers call.
 * One place, so both processes honour the same retry horizon, allow-list and channel
 * settings (service spec "Seller notification core").
 */
import type { BrandProfile } from '../../shared/brand.js';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import { channelOptionsFromConfig } from '../channels/from-config.js';
import { MediaBuyChannels } from '../channels/media-buy-channels.js';
import type { DeliveryDataSource } from '../channels/types.js';
import { NotificationCore } from '../core/notification-core.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import { Outbox } from '../outbox/outbox.js';

/**
 * Where the delivery reports' numbers and time come from (the agents' core: its clock paces
 * the reports, its simulator fills them); null until it exists.
 */
export interface ReportSource {
  clock: { nowMs(): number };
  deliverySource: DeliveryDataSource;
}

export interface SenderNotificationsOptions {
  pool: Pool;
  queue: DeliveryQueue;
  schema: string;
  config: Config;
  profile: BrandProfile;
  /** Hosts beyond SVC_SENDER_ALLOW_HOSTS the sender may reach (loopback tests). */
  allowHosts?: string[];
  logger: Logger;
  reportSource: () => ReportSource | null;
}

export interface SenderNotifications {
  outbox: Outbox;
  channels: MediaBuyChannels;
  notifications: NotificationCore;
  /** SVC_SENDER_ALLOW_HOSTS and the extra hosts: what the delivery worker may reach too. */
  allowHosts: string[];
}

export function senderNotifications(o: SenderNotificationsOptions): SenderNotifications {
  const { pool, queue, schema, config, profile, logger } = o;
  const allowHosts = [
    ...config.SVC_SENDER_ALLOW_HOSTS.split(',').filter(Boolean),
    ...(o.allowHosts ?? []),
  ];
  const outbox = new Outbox({
    pool,
    queue,
    schema,
    horizonSeconds: config.SVC_RETRY_HORIZON_SECONDS,
    retentionSeconds: config.SVC_RETENTION,
  });
  const channels = new MediaBuyChannels({
    pool,
    schema,
    sink: outbox,
    profile,
    ...channelOptionsFromConfig(config),
    reportingClock: {
      now: () => o.reportSource()?.clock.nowMs() ?? Date.now(),
      tickIntervalMs: config.SVC_CHANNEL_TICK_MS,
    },
    allowHosts,
    dataSource: {
      getDelivery: (id, period) => {
        const source = o.reportSource();
        if (!source) throw new Error('delivery data asked for before the agents started');
        return source.deliverySource.getDelivery(id, period);
      },
    },
    logger,
  });
  const notifications = new NotificationCore({
    pool,
    schema,
    queue,
    profile,
    protocolVersion: config.SVC_PROTOCOL_VERSION,
    allowHosts,
    channels,
    sink: outbox,
    horizonSeconds: config.SVC_RETRY_HORIZON_SECONDS,
    logger,
  });
  return { outbox, channels, notifications, allowHosts };
}
