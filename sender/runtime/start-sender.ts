/**
 * The sender runtime: one function that brings up what a seller process runs beside its
 * agents (service spec "Seller notification core", "Delivery"): the sender schema
 * (migrated), the signing key set (generated under the keys directory on first start), the
 * delivery queue on Redis, the outbox, media-buy channels and NotificationCore, the
 * activity log and the delivery worker, and on request the operator console; `stop()`
 * closes them in reverse order. The caller owns the pool.
 */
import { readdir } from 'node:fs/promises';
import type { BrandProfile } from '../../shared/brand.js';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { ActivityLog } from '../activity/activity-log.js';
import type { OAuthClientAdmin, RunningConsole } from '../console/handle.js';
import { DeliveryQueue } from '../delivery/queue.js';
import { deploymentQueuePrefix } from '../delivery/queue-prefix.js';
import { DeliveryWorker } from '../delivery/worker.js';
import { KeySet, writeNewKey } from '../keys/key-set.js';
import { DEFAULT_SENDER_SCHEMA, migrateSender } from '../schema.js';
import {
  senderNotifications,
  type ReportSource,
  type SenderNotifications,
} from './notifications.js';

export interface StartSenderOptions {
  config: Config;
  /** The seller's pool (the caller ends it after `stop()`). */
  pool: Pool;
  redisUrl: string;
  profile: BrandProfile;
  logger: Logger;
  /** Default DEFAULT_SENDER_SCHEMA. */
  schema?: string;
  /** The signing keys' directory (an Ed25519 key is written there when it holds none). */
  keysDir: string;
  /** BullMQ key prefix; default SVC_QUEUE_PREFIX, else the deployment's own. */
  queuePrefix?: string;
  /** Hosts beyond SVC_SENDER_ALLOW_HOSTS the sender may reach (loopback tests). */
  allowHosts?: string[];
  /** Where the delivery reports' numbers and clock come from, once it exists. */
  reportSource: () => ReportSource | null;
}

/** What the operator console needs beyond the sender (svc start's OAuth provider). */
export interface SenderConsoleOptions {
  /** 0 picks a free port. */
  port: number;
  /** The built-in provider (SVC_CONSOLE_AUTH=oidc signs operators in through it). */
  oidcIssuer: string | null;
  /** Its initial access token: the console registers itself as a client with it. */
  oidcRegistrationToken: string | null;
  oauthClients: OAuthClientAdmin | null;
}

export interface SenderRuntime extends SenderNotifications {
  schema: string;
  keys: KeySet;
  queue: DeliveryQueue;
  queuePrefix: string;
  activity: ActivityLog;
  /** Starts delivering: the delivery worker and the channels' reporting schedule. */
  start(): void;
  /** The operator console, or null when its port is taken (logged, not fatal). */
  startConsole(o: SenderConsoleOptions): Promise<RunningConsole | null>;
  stop(): Promise<void>;
}

type Stop = () => Promise<unknown> | unknown;

async function loadOrCreateKeys(dir: string, activeKid?: string): Promise<KeySet> {
  let present = false;
  try {
    present = (await readdir(dir)).some((n) => n.endsWith('.json'));
  } catch {
    present = false;
  }
  if (!present) await writeNewKey(dir, 'ed25519');
  return KeySet.fromDirectory(dir, activeKid ? { activeKid } : {});
}

/** Runs the stops last-first; a failing one is logged and the rest still run. */
function stopper(stops: Stop[], logger: Logger): () => Promise<void> {
  return async () => {
    for (const s of stops.reverse()) {
      try {
        await s();
      } catch (err) {
        logger.warn({ err }, 'sender shutdown step failed');
      }
    }
    stops.length = 0;
  };
}

export async function startSender(o: StartSenderOptions): Promise<SenderRuntime> {
  const { config, pool, profile, logger } = o;
  const schema = o.schema ?? DEFAULT_SENDER_SCHEMA;
  const stops: Stop[] = [];
  const stop = stopper(stops, logger);
  try {
    await migrateSender(pool, schema);
    const keys = await loadOrCreateKeys(o.keysDir, config.SVC_SIGNING_KID);
    const redis = createRedis(o.redisUrl);
    const workerRedis = createRedis(o.redisUrl);
    stops.push(() => {
      redis.disconnect();
      workerRedis.disconnect();
    });
    const queuePrefix =
      o.queuePrefix ??
      config.SVC_QUEUE_PREFIX ??
      (await deploymentQueuePrefix(pool, schema, profile.brand));
    const queue = new DeliveryQueue({
      connection: redis,
      prefix: queuePrefix,
      shards: config.SVC_DISPATCH_SHARDS,
    });
    stops.push(() => queue.close());
    const activity = new ActivityLog({ pool, schema, logger });
    const wired = senderNotifications({
      pool,
      queue,
      schema,
      config,
      profile,
      logger,
      reportSource: o.reportSource,
      ...(o.allowHosts ? { allowHosts: o.allowHosts } : {}),
    });
    await wired.channels.migrate();
    const start = () => {
      const worker = new DeliveryWorker({
        outbox: wired.outbox,
        signer: { key: keys.signingKey(), profile },
        connection: workerRedis,
        prefix: queuePrefix,
        concurrency: Math.max(4, Math.ceil(config.SVC_WORKER_CONCURRENCY / 8)),
        maxInFlight: config.SVC_WORKER_CONCURRENCY,
        allowHosts: wired.allowHosts,
        activity,
        logger,
      });
      stops.push(async () => {
        await worker.close();
      });
      wired.channels.start();
      stops.push(() => wired.channels.stop());
    };
    const startConsole = async (c: SenderConsoleOptions) => {
      const running = await operatorConsole(o, { schema, queue }, c);
      if (running) stops.push(() => running.close());
      return running;
    };
    return { ...wired, schema, keys, queue, queuePrefix, activity, start, startConsole, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The seller's operator console (sender/console), loaded here on demand so that embedding
 * the core alone never loads its pages and OIDC; a taken port is logged, not fatal.
 */
async function operatorConsole(
  o: StartSenderOptions,
  w: { schema: string; queue: DeliveryQueue },
  c: SenderConsoleOptions,
): Promise<RunningConsole | null> {
  const { consoleOidcFromConfig, startConsole } = await import('../console/index.js');
  const fromConfig = consoleOidcFromConfig(o.config, c.oidcIssuer);
  const oidc =
    fromConfig && fromConfig.issuer === c.oidcIssuer && c.oidcRegistrationToken
      ? { ...fromConfig, initialAccessToken: c.oidcRegistrationToken }
      : fromConfig;
  try {
    return await startConsole({
      pool: o.pool,
      queue: w.queue,
      schema: w.schema,
      dataDir: o.config.SVC_DATA_DIR,
      host: o.config.SVC_HTTP_HOST,
      port: c.port,
      brand: o.config.SVC_BRAND,
      logger: o.logger,
      oidc,
      ...(c.oauthClients ? { oauthClients: c.oauthClients } : {}),
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    o.logger.warn(
      { port: c.port },
      'operator console not started: port in use (set SVC_CONSOLE_PORT)',
    );
    return null;
  }
}
