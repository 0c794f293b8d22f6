/**
 * `svc approve`: the operator's decision on a pending buy, from a separate process. The
 * task webhook it causes goes into the sender's outbox (PostgreSQL + the delivery queue);
 * the running service's worker delivers it.
 */
import { brandProfile } from '../../shared/brand.js';
import type { Config } from '../../shared/config.js';
import { createLogger } from '../../shared/infra/logger.js';
import { createPool } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { commandServices } from '../../shared/infra/command-services.js';
import { pingRedis } from '../../shared/infra/services.js';
import {
  DEFAULT_SENDER_SCHEMA,
  DeliveryQueue,
  deploymentQueuePrefix,
  senderNotifications,
} from '../../sender/index.js';
import { createAgentsCore, type AgentsCore } from '../service.js';

/** A queue that dispatches nothing: the outbox rows wait for the reconciler. */
const reconcilerOnlyQueue = {
  dispatch: async () => {},
  dispatchBatch: async () => {},
  close: async () => {},
};

export async function operatorAction(
  config: Config,
  mediaBuyId: string,
  reject: string | boolean | undefined,
  options: { agentsSchema?: string; senderSchema?: string; queuePrefix?: string } = {},
): Promise<Record<string, unknown>> {
  const profile = brandProfile(config.SVC_BRAND);
  // The running `svc start`'s database, Redis, queue and allow-list unless set here.
  const services = await commandServices(config, { redis: 'none' });
  const pool = createPool({ connectionString: services.databaseUrl, max: 4 });
  // Without a reachable Redis the webhook rows still land in the outbox and the running
  // worker's reconciler sends them (within about a minute) instead of the queue at once.
  const redisUp = await pingRedis(services.redisUrl);
  const redis = redisUp ? createRedis(services.redisUrl) : null;
  const senderSchemaName = options.senderSchema ?? DEFAULT_SENDER_SCHEMA;
  const queuePrefix =
    options.queuePrefix ??
    services.queuePrefix ??
    (await deploymentQueuePrefix(pool, senderSchemaName, profile.brand));
  const queue: DeliveryQueue = redis
    ? new DeliveryQueue({
        connection: redis,
        prefix: queuePrefix,
        shards: config.SVC_DISPATCH_SHARDS,
      })
    : (reconcilerOnlyQueue as unknown as DeliveryQueue);
  const senderSchema = options.senderSchema ?? DEFAULT_SENDER_SCHEMA;
  let core: AgentsCore | null = null;
  try {
    const { notifications } = senderNotifications({
      pool,
      queue,
      schema: senderSchema,
      config,
      profile,
      allowHosts: services.allowHosts,
      logger: createLogger({ level: 'warn' }),
      reportSource: () => core,
    });
    core = await createAgentsCore({
      pool,
      ...(options.agentsSchema ? { schema: options.agentsSchema } : {}),
      profile,
      notifications,
      seed: false,
      clockSpeed: config.SVC_AGENTS_CLOCK_SPEED,
    });
    return reject
      ? await core.operator.reject(mediaBuyId, typeof reject === 'string' ? reject : undefined)
      : await core.operator.approve(mediaBuyId);
  } finally {
    await queue.close().catch(() => {});
    redis?.disconnect();
    await pool.end();
  }
}
