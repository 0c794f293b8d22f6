/**
 * `svc worker`: a delivery worker process. Run as many as wanted, on as many machines,
 * against one Redis and one PostgreSQL. SIGTERM/SIGINT: stop taking jobs, finish the
 * running ones, flush the activity log, exit.
 */
import type { Server } from 'node:http';
import { brandProfile } from '../../shared/brand.js';
import type { Config } from '../../shared/config.js';
import { createLogger, type Logger } from '../../shared/infra/logger.js';
import { commandServices } from '../../shared/infra/command-services.js';
import { redactUrl } from '../../shared/infra/services.js';
import { createPool } from '../../shared/infra/pg.js';
import { deploymentQueuePrefix } from '../delivery/queue-prefix.js';
import { ClusterAnswerError, createRedis } from '../../shared/infra/redis.js';
import { ActivityLog } from '../activity/activity-log.js';
import { DeliveryQueue } from '../delivery/queue.js';
import { parseShardSelection } from '../delivery/shards.js';
import { DeliveryWorker } from '../delivery/worker.js';
import { KeySet } from '../keys/key-set.js';
import { SenderMetrics } from '../metrics.js';
import { createStatePool, Outbox } from '../outbox/outbox.js';
import { DEFAULT_SENDER_SCHEMA, migrateSender } from '../schema.js';
import { shutdownTracing, startTracing } from '../../shared/telemetry/tracing.js';
import { serveMetrics } from './metrics-server.js';

export interface WorkerCommandOptions {
  keysDir: string;
  /** Deliveries in flight in this process. */
  concurrency: number;
  perOrigin: number;
  schema?: string;
  prefix?: string;
  /** Where to serve Prometheus /metrics (`--metrics-listen`; unset: not served). */
  metricsListen?: { host: string; port: number };
  /** The dispatch shards this process consumes (`all`, or e.g. `0-7,12`). */
  shards?: string;
}

export function allowHostsOf(value: string): string[] {
  return value
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
}

export async function runWorker(config: Config, o: WorkerCommandOptions): Promise<void> {
  const logger = createLogger({ name: 'svc-worker', level: config.LOG_LEVEL });
  // OTLP export when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set; nothing otherwise.
  const tracing = startTracing('svc-worker');
  // Checked before connecting to anything: a bad list ends the command at once.
  parseShardSelection(o.shards ?? 'all', config.SVC_DISPATCH_SHARDS);
  const profile = brandProfile(config.SVC_BRAND);
  const keys = await KeySet.fromDirectory(
    o.keysDir,
    config.SVC_SIGNING_KID ? { activeKid: config.SVC_SIGNING_KID } : {},
  );
  const schema = o.schema ?? DEFAULT_SENDER_SCHEMA;
  // Waits (with back-off, logged) for PostgreSQL and Redis up to SVC_SERVICE_WAIT_SECONDS.
  const services = await commandServices(config, {
    waitSeconds: config.SVC_SERVICE_WAIT_SECONDS,
    logger,
    redis: 'wait',
  });
  const { pool, statePool, redis, workerRedis, prefix, queue, outbox, durableClaims } =
    await workerStorage(config, o, services, logger);
  const activity = new ActivityLog({ pool, schema, logger });
  const metrics = new SenderMetrics();
  metrics.watchQueue(queue);
  metrics.watchOutbox(outbox);
  // A single-node client answered by a cluster (a node given as REDIS_URL that the start-up
  // probe did not catch): one fatal line, then exit 1, never a loop on MOVED.
  let stopNow: (() => void) | null = null;
  let fatal = false;
  const onFatal = (err: Error) => {
    if (fatal) return;
    fatal = true;
    process.exitCode = 1;
    logger.fatal({ event: 'redis_is_cluster' }, err.message);
    stopNow?.();
  };
  redis.on('error', (err: Error) => {
    if (err instanceof ClusterAnswerError) onFatal(err);
  });
  const worker: DeliveryWorker = new DeliveryWorker({
    onFatal,
    outbox,
    signer: { key: keys.signingKey(), profile },
    connection: workerRedis,
    prefix,
    concurrency: o.concurrency,
    maxInFlight: o.concurrency,
    perOriginConcurrency: o.perOrigin,
    shards: o.shards ?? 'all',
    allowHosts: services.allowHosts,
    activity,
    metrics,
    logger,
  });
  let server: Server | null = null;
  let metricsUrl: string | null = null;
  if (o.metricsListen !== undefined) {
    ({ server, url: metricsUrl } = await serveMetrics(metrics.registry, o.metricsListen));
  }
  logger.info(
    {
      kid: keys.signingKey().kid,
      concurrency: o.concurrency,
      schema,
      prefix: queue.prefix,
      dispatchShards: queue.shards,
      consumedShards: o.shards ?? 'all',
      redis: redactUrl(services.redisUrl),
      durableClaims,
      metrics: metricsUrl,
      tracing: tracing?.endpoint ?? null,
    },
    'delivery worker started',
  );
  await new Promise<void>((resolve) => {
    stopNow = resolve;
    if (fatal) resolve();
    const stop = (signal: string) => {
      logger.info({ signal }, 'delivery worker stopping');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  server?.close();
  await worker.close();
  await queue.close();
  redis.disconnect();
  workerRedis.disconnect();
  await statePool.end();
  await pool.end();
  // The spans of the last attempts go out before the process ends.
  await shutdownTracing();
  logger.info('delivery worker stopped');
}

/**
 * The worker's storage: the migrated outbox on PostgreSQL (with the state pool its claims
 * and settles run on) and the delivery queue on Redis, under the deployment's prefix.
 */
async function workerStorage(
  config: Config,
  o: WorkerCommandOptions,
  services: Awaited<ReturnType<typeof commandServices>>,
  logger: Logger,
) {
  const schema = o.schema ?? DEFAULT_SENDER_SCHEMA;
  const profile = brandProfile(config.SVC_BRAND);
  const pool = createPool({
    connectionString: services.databaseUrl,
    max: 20,
    applicationName: 'svc-worker',
  });
  await migrateSender(pool, schema);
  const statePool = createStatePool(services.databaseUrl);
  // The claim's WAL flush (sender/README.md, webhook_activity): the operator's trade.
  const durableClaims = config.SVC_WORKER_DURABLE_CLAIMS === '1';
  const redis = createRedis(services.redisUrl);
  const workerRedis = createRedis(services.redisUrl);
  const prefix =
    o.prefix ?? services.queuePrefix ?? (await deploymentQueuePrefix(pool, schema, profile.brand));
  const queue = new DeliveryQueue({
    connection: redis,
    prefix,
    shards: config.SVC_DISPATCH_SHARDS,
  });
  const outbox = new Outbox({
    pool,
    queue,
    schema,
    statePool,
    horizonSeconds: config.SVC_RETRY_HORIZON_SECONDS,
    retentionSeconds: config.SVC_RETENTION,
    logger,
    durableClaims,
  });
  return { pool, statePool, redis, workerRedis, prefix, queue, outbox, durableClaims };
}
