/**
 * The seller side of the agents' notifications, as `svc start` and `svc approve` both build
 * it: the outbox on the sender schema, the media-buy channels fed by the agents' delivery
 * simulator and clock, and the NotificationCore the task handlers call. One place, so both
 * processes honour the same retry horizon, allow-list and channel settings.
 */
import type { BrandProfile } from '../../shared/brand.js';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import {
  channelOptionsFromConfig,
  MediaBuyChannels,
  NotificationCore,
  Outbox,
  type DeliveryQueue,
} from '../../sender/index.js';
import type { AgentsCore } from '../service.js';

export interface SenderWiringOptions {
  pool: Pool;
  queue: DeliveryQueue;
  schema: string;
  config: Config;
  profile: BrandProfile;
  /** Hosts beyond SVC_SENDER_ALLOW_HOSTS the sender may reach (loopback tests). */
  allowHosts?: string[];
  logger: Logger;
  /** The agents' core, once created: its clock paces the reports, its simulator fills them. */
  core: () => AgentsCore | null;
}

export function senderWiring(o: SenderWiringOptions): {
  outbox: Outbox;
  channels: MediaBuyChannels;
  notifications: NotificationCore;
  /** SVC_SENDER_ALLOW_HOSTS and the extra hosts: what the delivery worker may reach too. */
  allowHosts: string[];
} {
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
      now: () => o.core()?.clock.nowMs() ?? Date.now(),
      tickIntervalMs: config.SVC_CHANNEL_TICK_MS,
    },
    allowHosts,
    dataSource: {
      getDelivery: (id, period) => {
        const core = o.core();
        if (!core) throw new Error('delivery data asked for before the agents started');
        return core.deliverySource.getDelivery(id, period);
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
