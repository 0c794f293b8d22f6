/**
 * `npm run bench -- console [--deliveries N] [--attempts-per N] [--keep] [--live-rounds N]
 * [--live-events N] [--live-only] [--live-no-drain] [--no-search-indexes] [--schema NAME]`:
 * seeds its own schema with 1,000,000 deliveries and 3,000,000 attempt records, then
 * times every console view (the store's statements, as the pages and API run them) with
 * varied parameters and prints p50/p99 per view. Target: p99 < 100 ms. The schema is
 * dropped afterwards unless --keep (then a later run with the same counts reuses it).
 * Then a bulk redeliver of 10,000, timed, and its effect on live delivery (console-live.ts).
 * The search views run with the operator's search indexes enabled (built first if they are
 * not: timed), unless --no-search-indexes (then dropped: the default's figures).
 */
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { ConsoleActions } from '../sender/console/actions.js';
import { TrendStore } from '../sender/console/trends.js';
import { DeliveryQueue } from '../sender/delivery/queue.js';
import { createRedis } from '../shared/infra/redis.js';
import { loadConfigOrExit } from '../shared/config.js';
import { ConsoleStore } from '../sender/console/store.js';
import type { DeliveryFilter } from '../sender/console/filters.js';
import { decodeCursor } from '../sender/console/filters.js';
import { migrateSender } from '../sender/schema.js';
import { SearchIndexes } from '../sender/console/search-index.js';
import { seedConsoleData } from './console-seed.js';
import { describeLiveImpact, liveImpact } from './console-live.js';

function arg(args: string[], name: string, dflt: number): number {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

export async function run(args: string[]): Promise<void> {
  const deliveries = arg(args, '--deliveries', 1_000_000);
  const attemptsPer = arg(args, '--attempts-per', 3);
  const keep = args.includes('--keep');
  const si = args.indexOf('--schema');
  // Its own schema name when several benches share one database.
  const SCHEMA = si >= 0 ? args[si + 1]! : 'bench_console';
  const config = loadConfigOrExit();
  // Benchmarks use the README's database (DATABASE_URL, else the local test database), not
  // svc start's embedded server, so they run where svc start never ran.
  const pool = createPool({
    connectionString: config.DATABASE_URL ?? LOCAL_DATABASE_URL,
    max: 8,
  });
  try {
    const have = await pool
      // The seeded rows only: the live rounds add their own events to a kept set.
      .query(
        `SELECT count(*)::int AS n FROM ${SCHEMA}.outbox WHERE idempotency_key LIKE 'seed\\_%'`,
      )
      .then((r) => r.rows[0].n as number)
      .catch(() => -1);
    if (have !== deliveries) {
      await dropSchema(pool, SCHEMA);
      await migrateSender(pool, SCHEMA);
      const t0 = performance.now();
      process.stdout.write(
        `seeding ${deliveries} deliveries, ${deliveries * attemptsPer} attempts...\n`,
      );
      await seedConsoleData(pool, SCHEMA, { deliveries, attemptsPer });
      process.stdout.write(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    } else {
      process.stdout.write(`reusing ${SCHEMA} (${have} deliveries)\n`);
    }
    // Migrations newer than the kept schema build their indexes on its rows: timed.
    const m0 = performance.now();
    const applied = await migrateSender(pool, SCHEMA);
    if (applied.length > 0) {
      process.stdout.write(
        `migrations ${applied.join(', ')} on the set: ${((performance.now() - m0) / 1000).toFixed(1)} s\n`,
      );
    }
    // The search figures are with the operator's search indexes (off by default:
    // sender/console/search-index.ts); on a kept set they are usually built already.
    // --no-search-indexes: as the default is (they are not built; dropped if they were),
    // for the searches' figures without them. Dropping is quick; building again on 1M
    // rows is not: the next run without the flag builds them (timed).
    const searchIndexes = new SearchIndexes(pool, SCHEMA);
    if (args.includes('--no-search-indexes')) {
      await searchIndexes.disable(['contains', 'payload'], { name: 'bench', via: 'cli' });
      process.stdout.write('search indexes (contains, payload): off, as by default\n');
    } else {
      const s0 = performance.now();
      const enabled = await searchIndexes.enable(['contains', 'payload'], {
        name: 'bench',
        via: 'cli',
      });
      const builtNow = Object.values(enabled.changed).reduce<number>((a, b) => a + Number(b), 0);
      process.stdout.write(
        `search indexes (contains, payload): enabled for the search figures${builtNow ? `, ${builtNow} partition indexes built in ${((performance.now() - s0) / 1000).toFixed(1)} s` : ', already built'}\n`,
      );
    }
    // A seed cut short has no statistics (its ANALYZE comes last), and a new expression
    // index has none of its own (the payload's): plans would be guesses.
    for (const table of ['outbox_event', 'outbox_delivery', 'webhook_activity']) {
      await pool.query(`ANALYZE ${SCHEMA}.${table}`);
    }
    const store = new ConsoleStore(pool, SCHEMA);
    const redis = createRedis(config.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const queue = new DeliveryQueue({
      connection: redis,
      prefix: `{bench-console-${process.pid}}`,
    });
    const actions = new ConsoleActions(pool, queue, SCHEMA);
    const trends = new TrendStore(pool, SCHEMA);
    // Destinations' first call of an hour rolls up the finished hours: timed on its own.
    const r0 = performance.now();
    await store.destinations();
    process.stdout.write(
      `destinations, first call (rolls up the day's hours): ${(performance.now() - r0).toFixed(0)} ms\n`,
    );
    const day = 86_400_000;
    const n = 60;
    const views: Array<[string, (i: number) => Promise<unknown>]> = [
      ['all, first page', () => store.list({}, null, 50)],
      ['status=stopped', () => store.list({ status: 'stopped' }, null, 50)],
      ['status=pending', () => store.list({ status: 'pending' }, null, 50)],
      ['status=delivered', () => store.list({ status: 'delivered' }, null, 50)],
      ['origin', (i) => store.list({ origin: `https://buyer-${i % 20}.example` }, null, 50)],
      [
        'origin + stopped',
        (i) =>
          store.list({ origin: `https://buyer-${i % 20}.example`, status: 'stopped' }, null, 50),
      ],
      ['media buy', (i) => store.list({ mediaBuyId: `mb_${(i * 7919) % 50000}` }, null, 50)],
      ['principal', (i) => store.list({ principalId: `p_${(i * 31) % 500}` }, null, 50)],
      [
        'principal + stopped',
        (i) => store.list({ principalId: `p_${(i * 31) % 500}`, status: 'stopped' }, null, 50),
      ],
      ['task', (i) => store.list({ taskId: `task_${(i * 7919) % 250000}` }, null, 50)],
      [
        'event type',
        (i) => store.list({ eventType: ['completed', 'failed', 'final'][i % 3]! }, null, 50),
      ],
      [
        'idempotency key',
        (i) => store.list({ idempotencyKey: `seed_${(i * 7919) % deliveries}` }, null, 50),
      ],
      [
        'time range (a day, 10 days ago)',
        (i) => {
          const to = new Date(Date.now() - (10 + (i % 5)) * day);
          return store.list({ from: new Date(to.getTime() - day), to }, null, 50);
        },
      ],
      [
        'page 20 (keyset)',
        async () => {
          let cursor = null;
          for (let p = 0; p < 20; p++) {
            const page: Awaited<ReturnType<ConsoleStore['list']>> = await store.list(
              { status: 'delivered' } as DeliveryFilter,
              cursor,
              50,
            );
            cursor = page.next ? decodeCursor(page.next) : null;
          }
        },
      ],
      // Issue 26's search: patterns, host:port, the payload, the recover preview.
      ['task prefix', (i) => store.list({ taskId: `task_${(i * 7919) % 250000}*` }, null, 50)],
      ['principal prefix', (i) => store.list({ principalId: `p_${(i * 31) % 500}*` }, null, 50)],
      ['task contains', (i) => store.list({ taskId: `*_${(i * 7919) % 250000}*` }, null, 50)],
      ['destination host:port', (i) => store.list({ origin: `buyer-${i % 20}.example` }, null, 50)],
      ['destination contains', (i) => store.list({ origin: `*-${i % 20}.example*` }, null, 50)],
      ['payload, common value', () => store.list({ payload: 'status=completed' }, null, 50)],
      [
        'payload + principal',
        (i) =>
          store.list({ payload: 'status=completed', principalId: `p_${(i * 31) % 500}` }, null, 50),
      ],
      [
        'payload, one row in 1M',
        (i) => store.list({ payload: `idempotency_key=seed_${(i * 7919) % deliveries}` }, null, 50),
      ],
      [
        'recover preview',
        (i) =>
          actions.recoverPreview(
            `https://buyer-${i % 20}.example`,
            new Date(Date.now() - 30 * day),
          ),
      ],
      ['trends, last hour', () => trends.trends('hour')],
      ['trends, last day', () => trends.trends('day')],
      ['trends, last week', () => trends.trends('week')],
      ['a delivery', (i) => store.get(String(1 + ((i * 7919) % deliveries)))],
      ['destinations', () => store.destinations()],
      ['live poll', () => store.landedSince(new Date(Date.now() - 3000))],
    ];
    process.stdout.write(
      `\n${'view'.padEnd(34)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}\n`,
    );
    // --live-only: the bulk redeliver and its effect on live delivery, no view timings.
    for (const [name, fn] of args.includes('--live-only') ? [] : views) {
      await fn(0);
      const times: number[] = [];
      for (let i = 1; i <= n; i++) {
        const t0 = performance.now();
        await fn(i);
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      const per = name.startsWith('page 20') ? 20 : 1;
      process.stdout.write(
        `${(per > 1 ? `${name} (per page)` : name).padEnd(34)} ${(pct(times, 0.5) / per).toFixed(1).padStart(8)} ${(pct(times, 0.99) / per).toFixed(1).padStart(8)}\n`,
      );
    }
    process.stdout.write(
      `\n${n} runs per view; target p99 < 100 ms. Shared machine: figures are noisy.\n`,
    );
    await bulkRedeliver(pool, actions, SCHEMA);
    // Its effect on live delivery (console-live.ts): --live-rounds 0 skips it.
    const liveRounds = arg(args, '--live-rounds', 3);
    if (liveRounds > 0) {
      const x = await liveImpact(pool, SCHEMA, config.REDIS_URL ?? 'redis://127.0.0.1:6379', {
        rounds: liveRounds,
        liveEvents: arg(args, '--live-events', 500),
        drain: !args.includes('--live-no-drain'),
      });
      process.stdout.write(`${describeLiveImpact(x)}\n`);
    }
    await queue.obliterate().catch(() => {});
    await queue.close();
    redis.disconnect();
    if (!keep) await dropSchema(pool, SCHEMA);
  } finally {
    await pool.end();
  }
}

/**
 * A bulk redeliver of 10,000: that many delivered rows of one origin made stopped, then one
 * recover run (rows back to pending, their pending attempt records, the audit row, and the
 * jobs dispatched to Redis), timed. No worker runs: the jobs stay queued, thrown away after.
 */
async function bulkRedeliver(
  pool: ReturnType<typeof createPool>,
  actions: ConsoleActions,
  schema: string,
): Promise<void> {
  const origin = 'https://buyer-7.example';
  const { rowCount } = await pool.query(
    `UPDATE ${schema}.outbox_delivery SET state = 'stopped', last_status = 410
      WHERE id IN (SELECT id FROM ${schema}.outbox_delivery
                    WHERE origin = $1 AND state = 'delivered' ORDER BY id LIMIT 10000)`,
    [origin],
  );
  const since = new Date(Date.now() - 31 * 86_400_000);
  const preview = await actions.recoverPreview(origin, since);
  const t0 = performance.now();
  const r = await actions.recover(origin, since, { name: 'bench', via: 'cli' }, 10_000);
  const ms = performance.now() - t0;
  process.stdout.write(
    `bulk redeliver: ${r.recovered} of ${preview.count} stopped (${rowCount} made so) re-opened, recorded, audited and dispatched in ${(ms / 1000).toFixed(2)} s${r.more ? ' (more remain)' : ''}\n`,
  );
}
