/**
 * The services of a command other than `svc start`, from one configuration: each setting
 * from the command's own environment, else from the `svc start` running on the same data
 * directory (its deployment file), else the default. So `svc approve`, `svc worker` and
 * `svc send` reach the embedded PostgreSQL, the private Redis and the sender allow-list of
 * the running `svc start` without repeating its variables.
 */
import { splitHosts, type Config } from '../config.js';
import { readLiveDeployment, type LocalDeployment } from './deployment.js';
import type { Logger } from './logger.js';
import { clusterUrl } from './redis.js';
import { DEFAULT_REDIS_URL, resolveDatabaseUrl, waitForRedis } from './services.js';

export interface CommandServices {
  databaseUrl: string;
  /** A `redis://` URL, or `redis-cluster://host:port,...` for a Redis Cluster. */
  redisUrl: string;
  /** SVC_QUEUE_PREFIX, else the running deployment's; undefined: derive from the database. */
  queuePrefix: string | undefined;
  /** SVC_SENDER_ALLOW_HOSTS plus the running deployment's. */
  allowHosts: string[];
  /** The running `svc start` these settings come from, when they do. */
  deployment: LocalDeployment | null;
}

export async function commandServices(
  config: Config,
  o: { waitSeconds?: number; logger?: Logger; redis?: 'wait' | 'check' | 'none' } = {},
): Promise<CommandServices> {
  const waitSeconds = o.waitSeconds ?? 0;
  const databaseUrl = await resolveDatabaseUrl(config.DATABASE_URL, {
    dataDir: config.SVC_DATA_DIR,
    waitSeconds,
    ...(o.logger ? { logger: o.logger } : {}),
  });
  const live = await readLiveDeployment(config.SVC_DATA_DIR);
  // Only the deployment whose database this is: its queue and allow-list mean nothing elsewhere.
  const deployment = live && live.databaseUrl === databaseUrl ? live : null;
  const redisUrl = configuredRedisUrl(config) ?? deployment?.redisUrl ?? DEFAULT_REDIS_URL;
  if (o.redis !== 'none' && o.redis !== undefined) {
    await waitForRedis(redisUrl, {
      waitSeconds: o.redis === 'wait' ? waitSeconds : 0,
      ...(o.logger ? { logger: o.logger } : {}),
    });
  }
  const allowHosts = [
    ...new Set([
      ...splitHosts(config.SVC_SENDER_ALLOW_HOSTS),
      ...(deployment?.senderAllowHosts ?? []),
    ]),
  ];
  return {
    databaseUrl,
    redisUrl,
    queuePrefix: config.SVC_QUEUE_PREFIX ?? deployment?.queuePrefix,
    allowHosts,
    deployment,
  };
}

/** The Redis this configuration names: REDIS_CLUSTER_NODES (as a cluster URL), else REDIS_URL. */
export function configuredRedisUrl(
  config: Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>,
): string | undefined {
  return config.REDIS_CLUSTER_NODES !== undefined
    ? clusterUrl(config.REDIS_CLUSTER_NODES)
    : config.REDIS_URL;
}
