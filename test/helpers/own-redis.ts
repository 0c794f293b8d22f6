/**
 * A redis-server of a test's (or bench's) own on a free loopback port, writing an append-only
 * file in a temporary directory: for what must not touch the shared Redis (a flush, a
 * restart) or needs a Redis that persists (the Redis-stream publisher refuses one that keeps
 * nothing). `stop()` kills it and removes its directory.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

export interface OwnRedis {
  port: number;
  /** A client of it, connected. */
  redis: Redis;
  stop(): void;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'svc-redis-'));
  // appendfsync everysec, Redis's default for AOF: what a buyer would run.
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--appendonly', 'yes'];
  const child = spawn('redis-server', [...args, '--save', '', '--dir', dir], { stdio: 'ignore' });
  const stop = (): void => {
    redis.disconnect();
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  // ioredis reconnects by itself while the server boots; the ping waits in its offline queue.
  const redis = new Redis(port, '127.0.0.1', { retryStrategy: () => 100 });
  redis.on('error', () => {});
  try {
    await redis.ping();
  } catch (err) {
    stop();
    throw err;
  }
  return { port, redis, stop };
}
