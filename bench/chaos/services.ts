/**
 * Private PostgreSQL and Redis for fault injection: each on a free loopback port, in a
 * temporary directory, never the shared instances. PostgreSQL runs Debian's binaries (or
 * `PG_BIN`) as the `postgres` OS user when we are root; Redis is `redis-server` from PATH,
 * with nothing persisted (a restart comes back empty, as after a crash without AOF).
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pingRedis, spawnRedisServer } from '../../shared/infra/services.js';
import { Redis } from 'ioredis';
import pg from 'pg';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

function pgBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    if (existsSync(join(root, v, 'bin', 'pg_ctl'))) return join(root, v, 'bin');
  }
  throw new Error('no PostgreSQL binaries: install postgresql or set PG_BIN to their directory');
}

/** Runs a PostgreSQL binary, as `postgres` when we are root (initdb refuses root). */
async function pgRun(bin: string, args: string[]): Promise<string> {
  const exe = join(pgBin(), bin);
  const asRoot = process.getuid?.() === 0;
  const { stdout } = asRoot
    ? await run('runuser', ['-u', 'postgres', '--', exe, ...args])
    : await run(exe, args);
  return stdout;
}

export interface PrivatePostgres {
  url: string;
  port: number;
  /** `pg_ctl restart -m <mode>`: `fast` (clean) or `immediate` (crash, WAL recovery). */
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes its directory. */
  destroy(): Promise<void>;
}

/** `settings`: more `-c name=value` server settings (a bench's own, e.g. pg_stat_statements). */
export async function startPostgres(settings: string[] = []): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-chaos-pg-'));
  chmodSync(dir, 0o755);
  const data = join(dir, 'data');
  if (process.getuid?.() === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  await pgRun('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const opts = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses='127.0.0.1'",
    '-c fsync=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
    ...settings.map((x) => `-c ${x}`),
  ].join(' ');
  const start = async () => {
    await pgRun('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start']);
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    await pgRun('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']).catch(() => {});
  };
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    start,
    stop,
    async restart(mode) {
      await stop(mode);
      await start();
    },
    async destroy() {
      await stop('immediate');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  url: string;
  port: number;
  flush(): Promise<void>;
  /** SIGKILL and start again on the same port: it comes back empty. */
  restart(): Promise<void>;
  /** SIGKILL (`start()` brings it back, empty). */
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

export async function startRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'svc-chaos-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const up = async () => {
    child = spawnRedisServer(port, dir);
    for (let i = 0; i < 100; i++) {
      if (await pingRedis(url, 500)) return;
      await sleep(50);
    }
    throw new Error(`private redis-server on port ${port} never answered`);
  };
  const down = async () => {
    const c = child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };
  await up();
  return {
    url,
    port,
    async flush() {
      const r = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        await r.flushall();
      } finally {
        r.disconnect();
      }
    },
    async restart() {
      await down();
      await up();
    },
    stop: down,
    start: up,
    async destroy() {
      await down();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Waits until PostgreSQL at `url` answers (after a restart). */
export async function waitForPostgres(url: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await c.connect();
      await c.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(100);
    } finally {
      await c.end().catch(() => {});
    }
  }
}
