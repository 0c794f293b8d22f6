/**
 * `npm run bench -- replay`: the PostgreSQL replay store under concurrent load, as the
 * receiver drives it. Prints inserts/s (step 13 alone) and verified-event sequences/s
 * (atCap + seen + insert, steps 9a, 12 and 13) at a few pool sizes, one keyid and eight.
 * The receiver target is 3,000 verified events/s on 2 cores; this is its replay share.
 * Each run is bounded in count and time; the schema is dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import { PgReplayStore } from '../receiver/replay/pg-replay-store.js';
import { RedisReplayStore } from '../receiver/replay/redis-replay-store.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { createRedis, hashTaggedPrefix, type Redis } from '../shared/infra/redis.js';

const DURATION_MS = 3000;
const MAX_OPS = 60_000;

async function drive(
  concurrency: number,
  op: (i: number) => Promise<unknown>,
): Promise<{ perSecond: number; ops: number }> {
  let next = 0;
  const start = process.hrtime.bigint();
  const deadline = Date.now() + DURATION_MS;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < MAX_OPS && Date.now() < deadline) await op(next++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { perSecond: next / seconds, ops: next };
}

export async function run(): Promise<void> {
  const url = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;
  const schema = `bench_replay_${randomBytes(4).toString('hex')}`;
  const pool = createPool({ connectionString: url, max: 32, applicationName: 'bench-replay' });
  try {
    await new PgReplayStore(pool, { schema }).migrate();
    const out: string[] = [];
    for (const [keyids, asyncCommit] of [
      [1, false],
      [8, false],
      [8, true],
    ] as const) {
      const store = new PgReplayStore(pool, { schema, perKeyidCap: 10_000_000, asyncCommit });
      for (const concurrency of [8, 16, 32]) {
        const tag = randomBytes(3).toString('hex');
        const ins = await drive(concurrency, (i) =>
          store.insert(`kid-${i % keyids}`, `${tag}-i-${i}`, 360),
        );
        const seq = await drive(concurrency, async (i) => {
          const kid = `kid-${i % keyids}`;
          const nonce = `${tag}-s-${i}`;
          if (await store.atCap(kid)) throw new Error('unexpected cap');
          if (await store.seen(kid, nonce)) throw new Error('unexpected replay');
          if ((await store.insert(kid, nonce, 360)) !== 'inserted') throw new Error('not inserted');
        });
        out.push(
          `keyids=${keyids}${asyncCommit ? ' asyncCommit' : ''} ` +
            `concurrency=${String(concurrency).padStart(2)}  ` +
            `insert ${ins.perSecond.toFixed(0).padStart(6)}/s (${ins.ops})  ` +
            `atCap+seen+insert ${seq.perSecond.toFixed(0).padStart(6)}/s (${seq.ops})`,
        );
        process.stdout.write(`${out[out.length - 1]}\n`);
      }
    }
    const purgeStart = process.hrtime.bigint();
    const purged = await new PgReplayStore(pool, {
      schema,
      clock: () => Date.now() + 3600_000,
    }).purgeExpired();
    const purgeS = Number(process.hrtime.bigint() - purgeStart) / 1e9;
    process.stdout.write(`purge ${purged} rows in ${purgeS.toFixed(2)} s\n`);
  } finally {
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  }
  await runRedis();
}

/** The optional Redis store, for comparison (not durable here: see its header). */
async function runRedis(): Promise<void> {
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') as Redis;
  const prefix = hashTaggedPrefix(`bench_replay_${randomBytes(4).toString('hex')}`);
  try {
    const store = new RedisReplayStore(redis, { prefix, perKeyidCap: 10_000_000 });
    for (const concurrency of [8, 32]) {
      const tag = randomBytes(3).toString('hex');
      const seq = await drive(concurrency, async (i) => {
        const kid = `kid-${i % 8}`;
        const nonce = `${tag}-${i}`;
        if (await store.atCap(kid)) throw new Error('unexpected cap');
        if (await store.seen(kid, nonce)) throw new Error('unexpected replay');
        if ((await store.insert(kid, nonce, 360)) !== 'inserted') throw new Error('not inserted');
      });
      process.stdout.write(
        `redis keyids=8 concurrency=${String(concurrency).padStart(2)}  ` +
          `atCap+seen+insert ${seq.perSecond.toFixed(0).padStart(6)}/s (${seq.ops})\n`,
      );
    }
  } finally {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  }
}
