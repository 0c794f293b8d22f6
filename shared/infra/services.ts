/**
 * Finding the backing services for `svc start` and the other long-running commands:
 * PostgreSQL at DATABASE_URL (else the local default), Redis at REDIS_URL, or, when that
 * Redis does not answer and `redis-server` is on PATH, a private one under the data
 * directory. A missing service ends with a message that says what to start or set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { LOCAL_DATABASE_URL } from './pg.js';

export class ServiceUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServiceUnavailableError';
  }
}

export async function checkPostgres(url: string, timeoutMs = 3000): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    throw new ServiceUnavailableError(
      `PostgreSQL at ${redactUrl(url)} does not answer (${(err as Error).message}). ` +
        'Start PostgreSQL or set DATABASE_URL to a reachable postgres:// URL.',
    );
  } finally {
    await client.end().catch(() => {});
  }
}

/** DATABASE_URL when set, else the local default; checked before use. */
export async function resolveDatabaseUrl(configured: string | undefined): Promise<string> {
  const url = configured ?? LOCAL_DATABASE_URL;
  await checkPostgres(url);
  return url;
}

export async function pingRedis(url: string, timeoutMs = 2000): Promise<boolean> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
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
  stop(): Promise<void>;
}

/**
 * REDIS_URL when it answers; otherwise a private `redis-server` on a free loopback port
 * (nothing persisted: PostgreSQL is the record), or an error saying what to do.
 */
export async function ensureRedis(url: string, dataDir: string): Promise<RedisHandle> {
  if (await pingRedis(url)) return { url, child: null, stop: async () => {} };
  const port = await freePort();
  const dir = resolve(join(dataDir, 'redis'));
  mkdirSync(dir, { recursive: true });
  const child = spawn(
    'redis-server',
    [
      '--bind',
      '127.0.0.1',
      '--port',
      String(port),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    { stdio: 'ignore' },
  );
  const spawned = await new Promise<boolean>((ok) => {
    child.once('error', () => ok(false));
    child.once('spawn', () => ok(true));
  });
  if (!spawned) {
    throw new ServiceUnavailableError(
      `Redis at ${redactUrl(url)} does not answer and redis-server is not installed. ` +
        'Install Redis (apt-get install redis-server) or set REDIS_URL to a reachable redis:// URL.',
    );
  }
  const privateUrl = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    if (await pingRedis(privateUrl, 500)) {
      return {
        url: privateUrl,
        child,
        stop: async () => {
          child.kill('SIGTERM');
        },
      };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new ServiceUnavailableError('the private redis-server did not start within 5 s');
}

/** A URL with any password replaced, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}
