/**
 * `npm run bench -- sender-scale [recovery sizes] [--throughput N]` (issue #19 figures):
 *
 * - Recovery after a Redis flush: N pending outbox rows (default 100000,1000000; 0 skips),
 *   seeded straight into a fresh schema, then the time until every one is back in the
 *   queue of a private, empty redis-server, and the Redis memory that takes. This tree
 *   (DispatchRecovery: per-shard, light batch jobs) and 8faf630 (/work/base's
 *   redispatchAllPending and DeliveryQueue, run from here) alternate on the same rows.
 * - `--throughput N`: `bench sender N` (deliveries/s, 1 and 2 worker processes, then its
 *   latency scenario) against a private single redis-server and against a private
 *   3-master Redis Cluster (REDIS_CLUSTER_NODES form), and 8faf630's `bench sender` against
 *   the single one (it cannot run on a cluster).
 *
 * Every server is private, on loopback, and stopped at the end; bounded in rows and time.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createPool, dropSchema, LOCAL_DATABASE_URL, type Pool } from '../shared/infra/pg.js';
import { createRedis, clusterUrl } from '../shared/infra/redis.js';
import { silentLogger } from '../shared/infra/logger.js';
import { CONSOLE_INDEXES } from '../sender/console/migrations.js';
import { DispatchRecovery } from '../sender/delivery/dispatch-recovery.js';
import { DeliveryQueue } from '../sender/delivery/queue.js';
import { Outbox } from '../sender/outbox/outbox.js';
import { migrateSender } from '../sender/schema.js';
import { startRedis } from './chaos/services.js';
import { startRedisCluster } from '../test/helpers/redis-cluster.js';

const DATABASE_URL = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;
const BASE = process.env.BENCH_BASE_DIR ?? '/work/base';
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Seeds `n` pending rows over 50 origins, bodies of ~400 bytes, due now. */
async function seed(pool: Pool, schema: string, n: number): Promise<void> {
  for (let done = 0; done < n; done += 100_000) {
    const k = Math.min(100_000, n - done);
    await pool.query(
      `INSERT INTO ${schema}.outbox (idempotency_key, body, target_url, auth_mode, channel,
         notification_type, horizon_seconds)
       SELECT 'k' || md5($1 || g), convert_to(repeat('x', 400), 'UTF8'),
              'https://buyer' || (g % 50) || '.example/hooks/webhook', 'rfc9421', 'task',
              'completed', 86400
         FROM generate_series($2::int, $3::int) g`,
      [randomBytes(4).toString('hex'), done + 1, done + k],
    );
  }
  await pool.query(`VACUUM ANALYZE ${schema}.outbox`);
}

async function usedMemory(url: string): Promise<number> {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    return Number(/used_memory:(\d+)/.exec(await r.info('memory'))![1]);
  } finally {
    r.disconnect();
  }
}

type Recover = (pool: Pool, schema: string, url: string) => Promise<number>;

const thisTree: Recover = async (pool, schema, url) => {
  const redis = createRedis(url);
  const queue = new DeliveryQueue({ connection: redis, prefix: '{bench:scale}' });
  try {
    const outbox = new Outbox({ pool, queue, schema });
    const recovery = new DispatchRecovery({
      redis: () => redis,
      queue,
      shards: Array.from({ length: queue.shards }, (_, i) => i),
      outbox,
      logger: silentLogger,
    });
    await recovery.check();
    return (await queue.jobCounts('waiting', 'delayed')).waiting ?? 0;
  } finally {
    await queue.close();
    redis.disconnect();
  }
};

/** 8faf630's recovery pass, run from here over its own modules. */
const base: Recover = async (pool, schema, url) => {
  const q = (await import(`${BASE}/sender/delivery/queue.ts`)) as {
    DeliveryQueue: new (o: { connection: unknown; prefix: string }) => {
      close(): Promise<void>;
      depth(): Promise<{ waiting: number }>;
    };
  };
  const r = (await import(`${BASE}/sender/outbox/redispatch.ts`)) as {
    redispatchAllPending: (pool: Pool, queue: unknown, schema: string) => Promise<number>;
  };
  const redis = createRedis(url);
  const queue = new q.DeliveryQueue({ connection: redis, prefix: '{bench:scale}' });
  try {
    await r.redispatchAllPending(pool, queue, schema);
    return (await queue.depth()).waiting;
  } finally {
    await queue.close();
    redis.disconnect();
  }
};

async function recoveryFigures(sizes: number[]): Promise<string[][]> {
  const rows: string[][] = [];
  const pool = createPool({ connectionString: DATABASE_URL, max: 8 });
  const redis = await startRedis();
  const haveBase = existsSync(`${BASE}/sender/outbox/redispatch.ts`);
  try {
    for (const n of sizes) {
      const schema = `bench_scale_${randomBytes(4).toString('hex')}`;
      try {
        await migrateSender(pool, schema);
        for (const index of CONSOLE_INDEXES)
          await pool.query(`DROP INDEX IF EXISTS ${schema}.${index}`);
        const t0 = Date.now();
        await seed(pool, schema, n);
        process.stdout.write(`seeded ${n} pending rows in ${Date.now() - t0} ms\n`);
        const runs: Array<[string, Recover]> = haveBase
          ? [
              ['this tree', thisTree],
              ['8faf630', base],
            ]
          : [['this tree', thisTree]];
        for (const [label, recover] of runs) {
          await redis.flush();
          const before = await usedMemory(redis.url);
          const started = performance.now();
          const queued = await recover(pool, schema, redis.url);
          const ms = performance.now() - started;
          const bytes = (await usedMemory(redis.url)) - before;
          rows.push([
            `recovery, ${n.toLocaleString('en')} pending`,
            label,
            `${(ms / 1000).toFixed(2)} s`,
            `${queued.toLocaleString('en')} jobs`,
            `${(bytes / 1024 / 1024).toFixed(1)} MiB in Redis (${Math.round(bytes / n)} B/row)`,
          ]);
          process.stdout.write(`${rows.at(-1)!.join(' | ')}\n`);
        }
      } finally {
        await dropSchema(pool, schema).catch(() => {});
      }
    }
  } finally {
    await redis.destroy();
    await pool.end();
  }
  return rows;
}

/** `bench sender N` in `dir` with REDIS_URL=`url`; its output as it comes. */
function benchSender(dir: string, url: string, total: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/bench.js', 'sender', String(total), '3', '1'], {
      cwd: dir,
      env: { ...process.env, REDIS_URL: url },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`bench sender in ${dir} exited ${code}: ${out.slice(-2000)}`));
    });
  });
}

function throughputLines(out: string): string[] {
  return out.split('\n').filter((l) => /throughput, \d worker/.test(l));
}

async function throughputFigures(total: number): Promise<string[]> {
  const lines: string[] = [];
  const single = await startRedis();
  const teardowns: Array<() => unknown> = [];
  try {
    const cluster = await startRedisCluster(
      { teardown: (fn) => void teardowns.push(fn) },
      { masters: 3, replicas: 0 },
    );
    const runs: Array<[string, string, string]> = [
      ['this tree, one Redis', ROOT, single.url],
      ['this tree, 3-master cluster', ROOT, clusterUrl(cluster.seeds)],
    ];
    if (existsSync(`${BASE}/bin/bench.js`))
      runs.splice(1, 0, ['8faf630, one Redis', BASE, single.url]);
    for (const [label, dir, url] of runs) {
      await single.flush();
      const out = await benchSender(dir, url, total);
      for (const l of throughputLines(out)) lines.push(`${label}: ${l.trim()}`);
      process.stdout.write(`${lines.slice(-2).join('\n')}\n`);
    }
  } finally {
    for (const fn of teardowns) await fn();
    await single.destroy();
  }
  return lines;
}

export async function run(args: string[]): Promise<void> {
  const at = args.indexOf('--throughput');
  const total = at >= 0 ? Number(args[at + 1] ?? 20_000) : 0;
  const rest = at >= 0 ? args.filter((_, i) => i !== at && i !== at + 1) : args;
  const sizes = (rest[0] ?? '100000,1000000')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  if (sizes.some((n) => !Number.isInteger(n) || n > 2_000_000)) {
    throw new Error('recovery sizes: comma-separated row counts, each 1-2000000');
  }
  const recovery = sizes.length > 0 ? await recoveryFigures(sizes) : [];
  const throughput = total > 0 ? await throughputFigures(total) : [];
  process.stdout.write('\n');
  for (const r of recovery) process.stdout.write(`${r.join(' | ')}\n`);
  for (const l of throughput) process.stdout.write(`${l}\n`);
}
