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
import { pingRedis, resolveDatabaseUrl } from '../../shared/infra/services.js';
import { DeliveryQueue } from '../../sender/delivery/queue.js';
import { DEFAULT_SENDER_SCHEMA } from '../../sender/schema.js';
import { createAgentsCore, type AgentsCore } from '../service.js';
import { senderWiring } from './sender-wiring.js';

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
  const databaseUrl = await resolveDatabaseUrl(config.DATABASE_URL);
  const pool = createPool({ connectionString: databaseUrl, max: 4 });
  // `svc start` may run on a private redis-server this process cannot see. Without Redis
  // the webhook rows still land in the outbox and the running worker's reconciler sends
  // them (within about a minute) instead of the queue at once.
  const redisUp = await pingRedis(config.REDIS_URL);
  const redis = redisUp ? createRedis(config.REDIS_URL) : null;
  const queue: DeliveryQueue = redis
    ? new DeliveryQueue({
        connection: redis,
        ...(options.queuePrefix ? { prefix: options.queuePrefix } : {}),
      })
    : (reconcilerOnlyQueue as unknown as DeliveryQueue);
  const senderSchema = options.senderSchema ?? DEFAULT_SENDER_SCHEMA;
  let core: AgentsCore | null = null;
  try {
    const { notifications } = senderWiring({
      pool,
      queue,
      schema: senderSchema,
      config,
      profile,
      logger: createLogger({ level: 'warn' }),
      core: () => core,
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
