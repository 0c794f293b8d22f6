/**
 * `npm run bench -- storage [per-day] [days] [cpu-rounds] [pending]` (issue 19, item 1): the sender's
 * storage side by side with 8faf630 (the tables and code of `--base-dir`, default
 * /work/base), in one run.
 *
 * - size: a steady rate (`per-day` deliveries, default 100,000, written hourly) for `days`
 *   simulated days (default 7) on a virtual clock, with bulk inserts of settled rows and
 *   one attempt record each. 8faf630: one worker's hourly purge (its statement, with the
 *   virtual clock for now(): at most 10,000 finished outbox rows past the horizon + 1 day,
 *   attempt records past 30 days); this tree: `maintainPartitions` hourly with the
 *   shortest retention (the 24 h horizon). Prints outbox + activity size after each day.
 * - cpu: PostgreSQL backend CPU per delivery over its life (the event's insert, the quick
 *   claim, the settle with its attempt record), each tree's Outbox on one connection
 *   each for writes and state, in blocks of 1,000 deliveries alternating between the trees
 *   (`cpu-rounds` each, default 6); backend CPU from /proc as `claim-cost` reads it. Also
 *   the HOT share of the updates and how many indexes an update of the state writes.
 * - pending (default 0, skipped; at most 1M): the reconciler's pass and the
 *   interrupted-attempt pass over that many pending rows due in an hour (`passesBench`).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createPool,
  dropSchema,
  LOCAL_DATABASE_URL,
  migrate,
  type Pool,
} from '../shared/infra/pg.js';
import { createStatePool, Outbox } from '../sender/outbox/outbox.js';
import { DAY_MS, firstIdOf, dayOf, maintainPartitions } from '../sender/outbox/partitions.js';
import type { unpartitionedMigrations } from '../sender/schema.js';
import { migrateSender } from '../sender/schema.js';
import { originSql } from '../sender/console/migrations.js';
import type { DeliveryQueue } from '../sender/delivery/queue.js';
import { backendTicks } from './sender/claim-cost.js';

const DATABASE_URL = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;
const HOUR = 3_600_000;
const BODY = Buffer.from(JSON.stringify({ pad: 'x'.repeat(400) }));
const mib = (n: number) => (n / 1_048_576).toFixed(0);

/** 8faf630's purges (Outbox.purgeFinished, ActivityLog.purge) with `$1` for now(). */
const BASE_PURGE = (s: string) => [
  `DELETE FROM ${s}.outbox WHERE id IN (
     SELECT id FROM ${s}.outbox
      WHERE state <> 'pending'
        AND completed_at < $1::timestamptz - (horizon_seconds + 86400) * interval '1 second'
      LIMIT 10000)`,
  `DELETE FROM ${s}.webhook_activity
    WHERE coalesce(completed_at, fired_at) < $1::timestamptz - 30 * interval '1 day'`,
];

const EVENT = `'k_' || $2 || '_' || g, $3::bytea, 'https://buyer-' || (g % 20) || '.example/hook',
  'rfc9421', 'task', 'completed', 'mb_' || (g % 5000), 'p_' || (g % 500), 'task_' || g`;

async function hourBase(pool: Pool, s: string, at: Date, n: number, tag: string) {
  const { rows } = await pool.query<{ lo: string }>(
    `WITH ins AS (
       INSERT INTO ${s}.outbox (idempotency_key, body, target_url, auth_mode, channel,
         notification_type, media_buy_id, principal_id, task_id, state, created_at,
         first_attempt_at, attempts, next_attempt_at, horizon_seconds, last_status, completed_at)
       SELECT ${EVENT}, 'delivered', c, c, 1, c, 86400, 200, c + interval '1 second'
         FROM generate_series(1, $4) g,
              LATERAL (SELECT $1::timestamptz + g * interval '1 millisecond' AS c) t
       RETURNING id)
     SELECT min(id)::text AS lo FROM ins`,
    [at, tag, BODY, n],
  );
  await activity(pool, s, `${s}.outbox`, rows[0]!.lo, n);
  for (const sql of BASE_PURGE(s)) await pool.query(sql, [at]);
}

async function hourNew(pool: Pool, s: string, at: Date, n: number, tag: string, seq: bigint) {
  const lo = (firstIdOf(dayOf(at)) + seq).toString();
  await pool.query(
    `INSERT INTO ${s}.outbox_event (id, idempotency_key, body, target_url, auth_mode, channel,
       notification_type, media_buy_id, principal_id, task_id, created_at)
     SELECT $5::bigint + g, ${EVENT}, $1::timestamptz + g * interval '1 millisecond'
       FROM generate_series(1, $4) g`,
    [at, tag, BODY, n, lo],
  );
  await pool.query(
    `INSERT INTO ${s}.outbox_delivery (id, created_at, origin, state, attempts,
       first_attempt_at, next_attempt_at, horizon_seconds, last_status, completed_at)
     SELECT e.id, e.created_at, ${originSql('e.target_url')}, 'delivered', 1, e.created_at,
            e.created_at, 86400, 200, e.created_at + interval '1 second'
       FROM ${s}.outbox_event e WHERE e.id > $1::bigint AND e.id <= $1::bigint + $2`,
    [lo, n],
  );
  await activity(pool, s, `${s}.outbox_event`, String(BigInt(lo) + 1n), n);
  await maintainPartitions(pool, s, { now: at, retentionSeconds: 86_400 });
}

/** One successful attempt record per row written (ids lo..lo+n-1 of `from`). */
async function activity(pool: Pool, s: string, from: string, lo: string, n: number) {
  await pool.query(
    `INSERT INTO ${s}.webhook_activity (outbox_id, media_buy_id, principal_id,
       idempotency_key, notification_type, attempt, status, url, http_status_code,
       response_time_ms, payload_size_bytes, fired_at, completed_at)
     SELECT o.id, o.media_buy_id, o.principal_id, o.idempotency_key, o.notification_type, 1,
            'success', o.target_url, 200, 40, octet_length(o.body), o.created_at,
            o.created_at + interval '40 milliseconds'
       FROM ${from} o WHERE o.id >= $1::bigint AND o.id < $1::bigint + $2`,
    [lo, n],
  );
}

/** Tables' size with their indexes and TOAST, over their partitions if partitioned. */
async function sizeOf(pool: Pool, s: string, tables: string[]): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::text AS n
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r'
        AND (c.relname = ANY($2) OR EXISTS (
              SELECT 1 FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhparent
               WHERE h.inhrelid = c.oid AND p.relname = ANY($2)))`,
    [s, tables],
  );
  return Number(rows[0]!.n);
}

async function sizeBench(base: BaseCode, perDay: number, days: number): Promise<void> {
  const pool = createPool({ connectionString: DATABASE_URL, max: 2 });
  const tag = randomBytes(3).toString('hex');
  const sb = `bench_size_base_${tag}`;
  const sn = `bench_size_new_${tag}`;
  const start = dayOf(Date.now());
  try {
    await migrate(pool, sb, base.migrations);
    await migrateSender(pool, sn);
    // The new side's first day: partitions made for the virtual clock's first day.
    await maintainPartitions(pool, sn, { now: new Date(start * DAY_MS) });
    const perHour = Math.round(perDay / 24);
    process.stdout.write(
      `\nsize: ${perDay} deliveries a day (${(perDay / 86_400).toFixed(2)}/s), written hourly, ` +
        `one attempt record each; MiB after each simulated day\n\n` +
        `| day | 8faf630 outbox | 8faf630 activity | 8faf630 total | this outbox | this activity | this total |\n` +
        `|---|---|---|---|---|---|---|\n`,
    );
    for (let d = 0; d < days; d++) {
      for (let h = 0; h < 24; h++) {
        const at = new Date((start + d) * DAY_MS + h * HOUR);
        await hourBase(pool, sb, at, perHour, `${d}_${h}`);
        await hourNew(pool, sn, at, perHour, `${d}_${h}`, BigInt(h * perHour));
      }
      const bo = await sizeOf(pool, sb, ['outbox']);
      const ba = await sizeOf(pool, sb, ['webhook_activity']);
      const no = await sizeOf(pool, sn, ['outbox_event', 'outbox_delivery']);
      const na = await sizeOf(pool, sn, ['webhook_activity']);
      process.stdout.write(
        `| ${d + 1} | ${mib(bo)} | ${mib(ba)} | ${mib(bo + ba)} | ${mib(no)} | ${mib(na)} | ${mib(no + na)} |\n`,
      );
    }
  } finally {
    await dropSchema(pool, sb).catch(() => {});
    await dropSchema(pool, sn).catch(() => {});
    await pool.end();
  }
}

/** The 8faf630 code the bench drives: its migrations and its Outbox. */
interface BaseCode {
  migrations: typeof unpartitionedMigrations;
  migrate: (pool: Pool, schema: string) => Promise<unknown>;
  Outbox: typeof Outbox;
  createStatePool: typeof createStatePool;
}

async function loadBase(dir: string): Promise<BaseCode> {
  const load = (f: string) => import(pathToFileURL(join(dir, f)).href);
  const schema = await load('sender/schema.ts');
  const outbox = await load('sender/outbox/outbox.ts');
  return {
    migrations: [
      ...schema.senderMigrations,
      ...(await load('sender/console/migrations.ts')).consoleMigrations,
    ],
    migrate: schema.migrateSender,
    Outbox: outbox.Outbox,
    createStatePool: outbox.createStatePool,
  };
}

interface Side {
  name: string;
  outbox: Outbox;
  pids: number[];
  ticks: number;
  /** Backend CPU ticks per phase: insert, claim, settle. */
  phases: [number, number, number];
  deliveries: number;
  analyze(tables: string[]): Promise<void>;
  close(): Promise<void>;
}

async function side(
  name: string,
  code: Pick<BaseCode, 'migrate' | 'Outbox' | 'createStatePool'>,
  schema: string,
): Promise<Side> {
  const pool = createPool({ connectionString: DATABASE_URL, max: 1 });
  const state = code.createStatePool(DATABASE_URL, 1);
  await code.migrate(pool, schema);
  const queue = {
    dispatchBatch: async () => {},
    dispatch: async () => {},
  } as unknown as DeliveryQueue;
  const outbox = new code.Outbox({ pool, statePool: state, queue, schema });
  const pid = async (p: Pool) =>
    (await p.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  return {
    name,
    outbox,
    pids: [await pid(pool), await pid(state)],
    ticks: 0,
    phases: [0, 0, 0],
    deliveries: 0,
    async analyze(tables) {
      for (const t of tables) await pool.query(`ANALYZE ${schema}.${t}`);
    },
    async close() {
      await dropSchema(pool, schema).catch(() => {});
      await state.end();
      await pool.end();
    },
  };
}

/** `n` deliveries through one side's Outbox: enqueue (batches of 50), claim, settle. */
async function lifecycle(s: Side, n: number, count: boolean): Promise<void> {
  const cpu = () => s.pids.reduce((a, p) => a + backendTicks(p), 0);
  const cpu0 = cpu();
  const marks: number[] = [];
  const ids: string[] = [];
  const batches = [];
  for (let i = 0; i < n; i += 50) {
    batches.push(
      Array.from({ length: Math.min(50, n - i) }, () => {
        const key = `bench_${randomBytes(12).toString('hex')}`;
        return {
          target: {
            url: 'https://buyer.example/hook',
            auth: { mode: 'rfc9421' as const },
            channel: 'task' as const,
          },
          payload: { idempotency_key: key, pad: 'x'.repeat(400) },
          idempotencyKey: key,
          notificationType: 'completed',
          mediaBuyId: 'mb_1',
          principalId: 'p_1',
        };
      }),
    );
  }
  for (let i = 0; i < batches.length; i += 4) {
    const out = await Promise.all(batches.slice(i, i + 4).map((b) => s.outbox.enqueue(b)));
    ids.push(...out.flat());
  }
  marks.push(cpu());
  // As a worker of the default concurrency (64) claims and settles: 64 in flight.
  const at = new Date();
  const settle = (id: string) =>
    s.outbox.settle(id, {
      state: 'delivered',
      status: 200,
      error: null,
      record: {
        attempt: 1,
        status: 'success',
        httpStatusCode: 200,
        responseTimeMs: 40,
        errorMessage: null,
        url: 'https://buyer.example/hook',
        firedAt: at,
        completedAt: at,
      },
    });
  let claimTicks = 0;
  let settleTicks = 0;
  for (let i = 0; i < ids.length; i += 64) {
    const chunk = ids.slice(i, i + 64);
    const c0 = cpu();
    const claimed = await Promise.all(chunk.map((id) => s.outbox.claim(id, 60_000)));
    if (claimed.some((c) => !('body' in c))) throw new Error(`${s.name}: a claim missed`);
    const c1 = cpu();
    await Promise.all(chunk.map(settle));
    claimTicks += c1 - c0;
    settleTicks += cpu() - c1;
  }
  marks.push(marks[0]! + claimTicks);
  if (count) {
    const end = cpu();
    s.phases[0] += marks[0]! - cpu0;
    s.phases[1] += claimTicks;
    s.phases[2] += settleTicks;
    s.ticks += end - cpu0;
    s.deliveries += n;
  }
}

async function updateStats(s: Side, schema: string, table: string) {
  const pool = createPool({ connectionString: DATABASE_URL, max: 1 });
  try {
    // The cumulative statistics reach the view within a second of the transactions.
    await new Promise((r) => setTimeout(r, 1500));
    const { rows } = await pool.query(
      `SELECT coalesce(sum(n_tup_upd), 0)::int AS upd, coalesce(sum(n_tup_hot_upd), 0)::int AS hot,
              (SELECT count(*)::int FROM pg_index WHERE indrelid = $2::regclass) AS indexes
         FROM pg_stat_user_tables t
        WHERE t.schemaname = $1
          AND (t.relname = $3 OR t.relid IN (SELECT relid FROM pg_partition_tree($2::regclass)))`,
      [schema, `${schema}.${table}`, table],
    );
    return rows[0] as { upd: number; hot: number; indexes: number };
  } finally {
    await pool.end();
  }
}

async function cpuBench(base: BaseCode, rounds: number): Promise<void> {
  const tag = randomBytes(3).toString('hex');
  const sides = [
    await side('8faf630', base, `bench_cpu_base_${tag}`),
    await side(
      'this tree',
      { migrate: migrateSender, Outbox, createStatePool },
      `bench_cpu_new_${tag}`,
    ),
  ];
  try {
    for (const s of sides) await lifecycle(s, 1000, false); // warm-up: plans, caches
    // Statistics, as autovacuum keeps them on a deployment's long-lived tables.
    await sides[0]!.analyze(['outbox', 'webhook_activity']);
    await sides[1]!.analyze(['outbox_event', 'outbox_delivery', 'webhook_activity']);
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 ? [...sides].reverse() : sides) await lifecycle(s, 1000, true);
    }
    const b = await updateStats(sides[0]!, `bench_cpu_base_${tag}`, 'outbox');
    const n = await updateStats(sides[1]!, `bench_cpu_new_${tag}`, 'outbox_delivery');
    // A partition's own indexes (the parent's count is of partitioned indexes: the same).
    process.stdout.write(
      `\ncpu: PostgreSQL backend CPU per delivery (insert, claim, settle with its record), ` +
        `${rounds} blocks of 1,000 per tree, alternating\n\n` +
        `| tree | deliveries | backend CPU µs per delivery | insert | claim | settle | updates of the state | HOT | indexes on the updated table |\n|---|---|---|---|---|---|---|---|---|\n`,
    );
    for (const [s, st] of [
      [sides[0]!, b],
      [sides[1]!, n],
    ] as const) {
      process.stdout.write(
        `| ${s.name} | ${s.deliveries} | ${Math.round((s.ticks * 10_000) / s.deliveries)} | ` +
          s.phases.map((p) => Math.round((p * 10_000) / s.deliveries)).join(' | ') +
          ` | ${st.upd} | ${st.hot} | ${st.indexes} |\n`,
      );
    }
    const ratio = sides[1]!.ticks / sides[1]!.deliveries / (sides[0]!.ticks / sides[0]!.deliveries);
    process.stdout.write(`\nthis tree / 8faf630: ${ratio.toFixed(2)}\n`);
  } finally {
    for (const s of sides) await s.close();
  }
}

/**
 * The reconciler's pass and the interrupted-attempt pass over `n` pending rows that are
 * neither overdue nor open (a retrying backlog: due in an hour), each tree on its own
 * tables, median of 7 passes in ms. 8faf630 reads its `next_attempt_at` index; this tree
 * the `due_at` index (a claim writes neither its columns' indexes nor that one).
 */
async function passesBench(base: BaseCode, n: number): Promise<void> {
  const pool = createPool({ connectionString: DATABASE_URL, max: 2 });
  const tag = randomBytes(3).toString('hex');
  const sb = `bench_pass_base_${tag}`;
  const sn = `bench_pass_new_${tag}`;
  const queue = {
    dispatchBatch: async () => {},
    dispatch: async () => {},
  } as unknown as DeliveryQueue;
  try {
    await migrate(pool, sb, base.migrations);
    await migrateSender(pool, sn);
    await pool.query(
      `INSERT INTO ${sb}.outbox (idempotency_key, body, target_url, auth_mode, channel,
         notification_type, horizon_seconds, attempts, first_attempt_at, next_attempt_at)
       SELECT 'k_' || g, $1::bytea, 'https://buyer-' || (g % 20) || '.example/hook', 'rfc9421',
              'task', 'completed', 86400, 1, now(), now() + interval '1 hour'
         FROM generate_series(1, $2) g`,
      [BODY, n],
    );
    const lo = firstIdOf(dayOf(new Date())).toString();
    await pool.query(
      `INSERT INTO ${sn}.outbox_event (id, idempotency_key, body, target_url, auth_mode, channel,
         notification_type)
       SELECT $3::bigint + g, 'k_' || g, $1::bytea, 'https://buyer-' || (g % 20) || '.example/hook',
              'rfc9421', 'task', 'completed'
         FROM generate_series(1, $2) g`,
      [BODY, n, lo],
    );
    await pool.query(
      `INSERT INTO ${sn}.outbox_delivery (id, created_at, origin, horizon_seconds, attempts,
         first_attempt_at, next_attempt_at, due_at)
       SELECT e.id, e.created_at, ${originSql('e.target_url')}, 86400, 1, now(),
              now() + interval '1 hour', now() + interval '1 hour'
         FROM ${sn}.outbox_event e`,
    );
    await pool.query(`VACUUM ANALYZE ${sb}.outbox`);
    for (const t of ['outbox_event', 'outbox_delivery'])
      await pool.query(`VACUUM ANALYZE ${sn}.${t}`);
    const sides: Array<[string, Outbox]> = [
      ['8faf630', new base.Outbox({ pool, queue, schema: sb })],
      ['this tree', new Outbox({ pool, queue, schema: sn })],
    ];
    const times = new Map<string, { rec: number[]; int: number[] }>();
    for (let r = 0; r < 8; r++) {
      for (const [name, o] of r % 2 ? [...sides].reverse() : sides) {
        const t0 = performance.now();
        const a = await o.reconcile({ graceMs: 30_000 });
        const t1 = performance.now();
        const b = await o.closeInterrupted();
        const t2 = performance.now();
        if (a + b > 0) throw new Error(`${name}: a pass took rows it should not have`);
        if (r === 0) continue; // the first pass warms caches
        const m = times.get(name) ?? { rec: [], int: [] };
        m.rec.push(t1 - t0);
        m.int.push(t2 - t1);
        times.set(name, m);
      }
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!.toFixed(1);
    process.stdout.write(
      `\npasses over ${n} pending rows due in an hour (median of 7, ms)\n\n` +
        `| tree | reconciler pass | interrupted-attempt pass |\n|---|---|---|\n`,
    );
    for (const [name] of sides) {
      const m = times.get(name)!;
      process.stdout.write(`| ${name} | ${med(m.rec)} | ${med(m.int)} |\n`);
    }
  } finally {
    await dropSchema(pool, sb).catch(() => {});
    await dropSchema(pool, sn).catch(() => {});
    await pool.end();
  }
}

export async function run(argv: string[]): Promise<void> {
  let baseDir = '/work/base';
  const args: string[] = [];
  for (const a of argv) {
    if (a.startsWith('--base-dir=')) baseDir = a.slice('--base-dir='.length);
    else args.push(a);
  }
  if (!existsSync(join(baseDir, 'sender/outbox/outbox.ts'))) {
    throw new Error(`bench storage: no 8faf630 checkout at ${baseDir} (--base-dir=DIR)`);
  }
  const perDay = Number(args[0] ?? 100_000);
  const days = Number(args[1] ?? 7);
  const rounds = Number(args[2] ?? 6);
  const passes = Math.min(Number(args[3] ?? 0), 1_000_000);
  const base = await loadBase(baseDir);
  if (passes > 0) await passesBench(base, passes);
  if (rounds > 0) await cpuBench(base, rounds);
  if (days > 0) await sizeBench(base, perDay, days);
}
