/**
 * Finding the backing services of every command: PostgreSQL at DATABASE_URL (unset: the
 * embedded server `svc start` runs under the data directory), Redis at REDIS_URL (or, for
 * the commands that may, a private `redis-server` under the data directory, saying why).
 * Long-running commands wait for a service that does not answer yet, with back-off and a
 * log line per attempt, up to SVC_SERVICE_WAIT_SECONDS; then, as for every other command,
 * the error says which service, at which address, and what to do.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { Cluster, Redis } from 'ioredis';
import { clusterNodesOf, isClusterUrl } from './redis.js';
import { readLiveDeployment } from './deployment.js';
import { embeddedPaths, runningEmbeddedUrl } from './embedded-postgres.js';
import type { Logger } from './logger.js';
import { ServiceUnavailableError } from './service-errors.js';

export { ServiceUnavailableError };

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** A URL with any password replaced, for messages and logs. */
export function redactUrl(url: string): string {
  if (isClusterUrl(url)) return url;
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

function where(url: string): string {
  if (isClusterUrl(url)) return url.slice('redis-cluster://'.length);
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || (u.protocol.startsWith('redis') ? 6379 : 5432)}`;
  } catch {
    return '(unparseable URL)';
  }
}

/** Why PostgreSQL refused, and whether waiting can help. */
function postgresProblem(url: string, err: unknown): { message: string; transient: boolean } {
  const e = err as { code?: string; message?: string };
  const at = `PostgreSQL at ${redactUrl(url)}`;
  const db = (() => {
    try {
      return decodeURIComponent(new URL(url).pathname.slice(1)) || '(default)';
    } catch {
      return '(default)';
    }
  })();
  switch (e.code) {
    case '3D000':
      return {
        message:
          `${at}: database "${db}" does not exist. Create it (createdb -h ${where(url).replace(/:/, ' -p ')} ${db}) ` +
          'or point DATABASE_URL at an existing database.',
        transient: false,
      };
    case '28P01':
    case '28000':
      return {
        message: `${at} refused the credentials (${e.message}): fix the user or password in DATABASE_URL.`,
        transient: false,
      };
    case 'ENOTFOUND':
      return {
        message: `${at}: the host does not resolve (${e.message}): fix the host in DATABASE_URL.`,
        transient: false,
      };
    default:
      return {
        message:
          `${at} does not answer (${e.message ?? String(err)}). Start PostgreSQL at ${where(url)}, ` +
          'set DATABASE_URL to a reachable postgres:// URL, or unset it (svc start and svc receiver then run an embedded PostgreSQL).',
        transient: true,
      };
  }
}

async function probePostgres(url: string, timeoutMs: number): Promise<unknown | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (err) {
    return err;
  } finally {
    await client.end().catch(() => {});
  }
}

export async function checkPostgres(url: string, timeoutMs = 3000): Promise<void> {
  const err = await probePostgres(url, timeoutMs);
  if (err !== null) throw new ServiceUnavailableError(postgresProblem(url, err).message);
}

export interface WaitOptions {
  /** How long to keep trying, seconds (0: one attempt). */
  waitSeconds?: number;
  logger?: Logger;
}

/**
 * Tries `attempt` until it returns null (ready) or a non-transient problem, with back-off
 * from 250 ms to 5 s, logging each wait; throws the last problem once past the deadline.
 */
async function waitUntilReady(
  service: 'PostgreSQL' | 'Redis',
  attempt: () => Promise<{ message: string; transient: boolean; address: string } | null>,
  o: WaitOptions,
): Promise<void> {
  const deadline = Date.now() + (o.waitSeconds ?? 0) * 1000;
  let delay = 250;
  for (let n = 1; ; n++) {
    const problem = await attempt();
    if (problem === null) {
      if (n > 1)
        o.logger?.info({ event: 'service_ready', service, attempts: n }, `${service} is up`);
      return;
    }
    if (!problem.transient || Date.now() + delay > deadline) {
      throw new ServiceUnavailableError(problem.message);
    }
    o.logger?.warn(
      {
        event: 'service_wait',
        service,
        address: problem.address,
        attempt: n,
        retry_in_ms: delay,
        deadline_s: o.waitSeconds,
        cause: problem.message,
      },
      `waiting for ${service} at ${problem.address}`,
    );
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

export async function waitForPostgres(url: string, o: WaitOptions = {}): Promise<void> {
  await waitUntilReady(
    'PostgreSQL',
    async () => {
      const err = await probePostgres(url, 3000);
      return err === null ? null : { ...postgresProblem(url, err), address: where(url) };
    },
    o,
  );
}

/**
 * DATABASE_URL when set; unset, the embedded server of the `svc start` running on this data
 * directory. Checked (and waited for, per `waitSeconds`) before use.
 */
export async function resolveDatabaseUrl(
  configured: string | undefined,
  o: WaitOptions & { dataDir?: string } = {},
): Promise<string> {
  if (configured !== undefined) {
    await waitForPostgres(configured, o);
    return configured;
  }
  const dataDir = o.dataDir ?? '.data';
  const found: { url: string | null } = { url: null };
  await waitUntilReady(
    'PostgreSQL',
    async () => {
      const url =
        (await readLiveDeployment(dataDir))?.databaseUrl ?? (await runningEmbeddedUrl(dataDir));
      found.url = url;
      if (url === null) {
        return {
          message:
            `DATABASE_URL is unset and no embedded PostgreSQL runs in ${embeddedPaths(dataDir).cluster}: ` +
            'run `svc start` (it starts one there), or set DATABASE_URL to a postgres:// URL.',
          transient: true,
          address: embeddedPaths(dataDir).cluster,
        };
      }
      const err = await probePostgres(url, 3000);
      return err === null ? null : { ...postgresProblem(url, err), address: where(url) };
    },
    o,
  );
  return found.url as string;
}

/** A Redis problem, and whether waiting can help (a cluster node behind REDIS_URL cannot). */
interface RedisProblem {
  message: string;
  transient: boolean;
}

/**
 * One connection attempt: null when `url` answers as what it claims to be. A single node
 * (`redis://`) must not be a cluster node (`INFO cluster`: cluster_enabled:1); a cluster
 * (`redis-cluster://`) must report cluster_state:ok.
 */
async function probeRedis(url: string, timeoutMs: number): Promise<RedisProblem | null> {
  if (isClusterUrl(url)) return probeCluster(url, timeoutMs);
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let lastError = '';
  redis.on('error', (err: Error) => {
    lastError = err.message;
  });
  try {
    await redis.connect();
    const pong = await redis.ping();
    if (pong !== 'PONG') return { message: `answered ${pong} to PING`, transient: true };
    const info = await redis.info('cluster').catch(() => '');
    if (/cluster_enabled:1/.test(info)) {
      return {
        message:
          `Redis at ${redactUrl(url)} is a Redis Cluster node (cluster_enabled:1), and REDIS_URL ` +
          `takes a single Redis: set REDIS_CLUSTER_NODES=${where(url)},... (the cluster's seed ` +
          'nodes, host:port comma-separated) instead of REDIS_URL.',
        transient: false,
      };
    }
    return null;
  } catch (err) {
    return { message: lastError || (err as Error).message, transient: true };
  } finally {
    redis.disconnect();
  }
}

/** Whether the first seed of a cluster URL answers as a plain, non-cluster Redis. */
async function seedIsSingleNode(url: string, timeoutMs: number): Promise<boolean> {
  const seed = clusterNodesOf(url)[0]!;
  const redis = new Redis(seed.port, seed.host, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return /cluster_enabled:0/.test(await redis.info('cluster'));
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

async function probeCluster(url: string, timeoutMs: number): Promise<RedisProblem | null> {
  const cluster = new Cluster(clusterNodesOf(url), {
    lazyConnect: true,
    clusterRetryStrategy: () => null,
    slotsRefreshTimeout: timeoutMs,
    redisOptions: { connectTimeout: timeoutMs, maxRetriesPerRequest: 0 },
  });
  let lastError = '';
  cluster.on('error', (err: Error) => {
    lastError = err.message;
  });
  try {
    await cluster.connect();
    const info = String(await cluster.cluster('INFO'));
    if (!/cluster_state:ok/.test(info)) {
      return { message: 'the cluster reports cluster_state:fail', transient: true };
    }
    return null;
  } catch (err) {
    const message = lastError || (err as Error).message;
    if (/cluster support disabled/i.test(message) || (await seedIsSingleNode(url, timeoutMs))) {
      return {
        message:
          `REDIS_CLUSTER_NODES names ${where(url)}, which is not a Redis Cluster (cluster support ` +
          'disabled): set REDIS_URL=redis://host:port for a single Redis instead.',
        transient: false,
      };
    }
    return { message, transient: true };
  } finally {
    cluster.disconnect();
  }
}

export async function pingRedis(url: string, timeoutMs = 2000): Promise<boolean> {
  return (await probeRedis(url, timeoutMs)) === null;
}

/** Which variable names the Redis at `url`, for messages. */
function redisVariable(url: string): string {
  return isClusterUrl(url) ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL';
}

export async function waitForRedis(url: string, o: WaitOptions = {}): Promise<void> {
  await waitUntilReady(
    'Redis',
    async () => {
      const problem = await probeRedis(url, 2000);
      if (problem === null) return null;
      if (!problem.transient) return { ...problem, address: where(url) };
      return {
        message:
          `Redis at ${redactUrl(url)} does not answer (${problem.message}). Start Redis at ${where(url)} ` +
          `(apt-get install redis-server), or set ${redisVariable(url)} to the Redis of your \`svc start\`.`,
        transient: true,
        address: where(url),
      };
    },
    o,
  );
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolvePort(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

export interface RedisHandle {
  url: string;
  /** The private server we started, if any; stopped by `stop()`. */
  child: ChildProcess | null;
  /** Why the private server was chosen (null when `url` is the configured Redis). */
  reason: string | null;
  stop(): Promise<void>;
}

/** A `redis-server` on 127.0.0.1:`port` that persists nothing (`dir` is its working dir). */
export function spawnRedisServer(port: number, dir: string): ChildProcess {
  const args = ['--bind', '127.0.0.1', '--port', String(port), '--save', ''];
  return spawn('redis-server', [...args, '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
}

/**
 * REDIS_URL when it answers; otherwise a private `redis-server` on a free loopback port
 * (nothing persisted: PostgreSQL is the record), logged with the reason, or an error
 * saying how to get one.
 */
export async function ensureRedis(
  url: string,
  dataDir: string,
  logger?: Logger,
): Promise<RedisHandle> {
  const problem = await probeRedis(url, 2000);
  if (problem === null) return { url, child: null, reason: null, stop: async () => {} };
  // A cluster, or a cluster node behind REDIS_URL, is the operator's explicit choice: a
  // private single Redis would only hide the mistake.
  if (!problem.transient || isClusterUrl(url)) {
    throw new ServiceUnavailableError(
      problem.transient
        ? `Redis Cluster at ${where(url)} does not answer (${problem.message})`
        : problem.message,
    );
  }
  const reason = `Redis at ${redactUrl(url)} does not answer (${problem.message})`;
  const port = await freePort();
  const dir = resolve(join(dataDir, 'redis'));
  mkdirSync(dir, { recursive: true });
  const child = spawnRedisServer(port, dir);
  const spawned = await new Promise<boolean>((ok) => {
    child.once('error', () => ok(false));
    child.once('spawn', () => ok(true));
  });
  if (!spawned) {
    throw new ServiceUnavailableError(
      `${reason} and redis-server is not installed to start a private one. ` +
        'Install it (apt-get install redis-server), or set REDIS_URL to a reachable redis:// URL.',
    );
  }
  const privateUrl = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    if (await pingRedis(privateUrl, 500)) {
      logger?.warn(
        { event: 'private_redis', url: privateUrl, reason, dir },
        `${reason}: started a private redis-server at ${privateUrl} (nothing persisted; set REDIS_URL to use another)`,
      );
      return {
        url: privateUrl,
        child,
        reason,
        stop: async () => {
          child.kill('SIGTERM');
        },
      };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new ServiceUnavailableError(
    `${reason}, and the private redis-server did not start within 5 s: set REDIS_URL to a reachable redis:// URL.`,
  );
}
