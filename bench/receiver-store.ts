/**
 * `npm run bench -- receiver-store`: the receiver's delivery store on its own (issue 23's
 * database figures, issue 19 item 4).
 *
 * 1. The per-sender storage bound read at `--keys` stored keys of one sender (default 2M):
 *    the maintained counter (`senderKeyCount`) against the table count 8faf630 ran every
 *    5 s per receiver process (`count(*) ... LIMIT bound+1`, same query). Median of reads.
 * 2. PostgreSQL backend CPU per event of the store path (nonce insert, claim, ordering
 *    observation, done-mark), at concurrency 1 and 64, for this tree and, with
 *    `--base-dir <checkout>` (e.g. /work/base), for that checkout's statements, alternating.
 *
 * Bounded: keys capped at 5M, events per run capped at 20k; schemas dropped afterwards.
 * Options: --keys N, --events N (default 6400), --base-dir DIR.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PgReplayStore } from '../receiver/replay/pg-replay-store.js';
import { PgDeliveryStore, RECEIVER_MIGRATIONS } from '../receiver/store/index.js';
import {
  createPool,
  dropSchema,
  LOCAL_DATABASE_URL,
  migrate,
  type Pool,
} from '../shared/infra/pg.js';

const DATABASE_URL = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;
const APP = `svc-bench-store-${process.pid}`;

function arg(args: string[], name: string, dflt: number, max: number): number {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : dflt;
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${name} must be a positive integer`);
  return Math.min(v, max);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

async function timed(fn: () => Promise<unknown>, reads: number): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < reads; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(ms);
}

async function boundRead(pool: Pool, keys: number): Promise<void> {
  const schema = `bench_bound_${process.pid}`;
  try {
    const before = RECEIVER_MIGRATIONS.filter((m) => !m.id.startsWith('store_'));
    await migrate(pool, schema, before);
    await pool.query(
      `INSERT INTO ${schema}.idempotency_keys
         (sender, idempotency_key, fingerprint, state, lease_until, expires_at)
       SELECT 'big-sender', 'key-' || i, 'f', 'done', now(), now() + interval '1 day'
       FROM generate_series(1, $1::int) i`,
      [keys],
    );
    await pool.query(`ANALYZE ${schema}.idempotency_keys`);
    const t0 = Date.now();
    await migrate(pool, schema, RECEIVER_MIGRATIONS);
    const migrationMs = Date.now() - t0;
    const store = new PgDeliveryStore({ pool, schema, protocolVersion: '3.2' });
    const count = await store.senderKeyCount('big-sender');
    if (count !== keys) throw new Error(`counter says ${count}, table holds ${keys}`);
    const counter = await timed(() => store.senderKeyCount('big-sender'), 50);
    const floor = await timed(() => pool.query('SELECT 1'), 50);
    // The server's own time for the read, without the round trip through a busy machine.
    const plan = await pool.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, FORMAT TEXT) SELECT coalesce(sum(n), 0)::bigint
         FROM ${schema}.sender_key_counts WHERE sender = 'big-sender'`,
    );
    const exec = /Execution Time: ([\d.]+) ms/.exec(
      plan.rows.map((r) => r['QUERY PLAN']).join('\n'),
    );
    // 8faf630's read, as its IdempotencyStore issued it (bound = the default 5,000,000).
    const table = await timed(
      () =>
        pool.query(
          `SELECT count(*) AS n FROM (SELECT 1 FROM ${schema}.idempotency_keys
             WHERE sender = $1 LIMIT $2) x`,
          ['big-sender', 5_000_001],
        ),
      5,
    );
    process.stdout.write(
      `per-sender bound read at ${keys.toLocaleString('en-US')} keys: counter ${counter.toFixed(3)} ms ` +
        `round trip (median of 50; SELECT 1 takes ${floor.toFixed(3)} ms), ` +
        `${exec?.[1] ?? '?'} ms in the server; table count (8faf630) ${table.toFixed(1)} ms (median of 5); ` +
        `migration initialising the counter: ${migrationMs} ms\n`,
    );
  } finally {
    await dropSchema(pool, schema);
  }
}

function ticksOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

async function backendTicks(pool: Pool): Promise<Map<number, number>> {
  const { rows } = await pool.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE application_name = $1',
    [APP],
  );
  return new Map(rows.map((r) => [r.pid, ticksOf(r.pid)]));
}

type Run = (i: number) => Promise<void>;

const observation = (i: number) => ({
  taskId: `task-${i % 500}`,
  at: new Date(Date.UTC(2026, 0, 1) + i).toISOString(),
  status: 'working',
  taskType: 'create_media_buy',
  value: null,
  source: 'webhook' as const,
  notificationId: `n-${i}-${randomUUID()}`,
});

/** This tree: step 9a's cap read, one `accept` (nonce, claim, observation), one `complete`. */
async function thisTree(pool: Pool, schema: string): Promise<Run> {
  const replay = new PgReplayStore(pool, { schema, asyncCommit: true });
  await replay.migrate();
  const store = new PgDeliveryStore({ pool, schema, protocolVersion: '3.2' });
  await store.migrate();
  store.burnsNonces(replay);
  return async (i) => {
    // Step 9a, as the pipeline runs it before the claim: its count, cached for a second,
    // is what lets the claim insert the nonce without reading the counters.
    if (await replay.atCap('kid')) throw new Error('at the cap');
    const out = await store.accept({
      sender: 's',
      key: `key-${i}-${randomUUID()}`,
      fingerprint: 'f',
      observation: observation(i),
      nonce: { keyid: 'kid', nonce: randomUUID(), ttlSeconds: 360 },
    });
    if (out.kind !== 'claimed') throw new Error(`store answered ${out.kind}`);
    await store.complete(out.claim, 'published');
  };
}

/** A checkout at 8faf630: its nonce insert, accept call and done-mark, as its pipeline ran them. */
async function baseTree(pool: Pool, schema: string, dir: string): Promise<Run> {
  const { PgReplayStore: BaseReplay } = await import(`${dir}/receiver/replay/pg-replay-store.ts`);
  const { WebhookReceiver } = await import(`${dir}/receiver/pipeline/receiver.ts`);
  const replay = new BaseReplay(pool, { schema, asyncCommit: true });
  await replay.migrate();
  const r = new WebhookReceiver({ pool, schema, protocolVersion: '3.2', replay, publisher: {} });
  await r.migrate();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- its private batchers
  const x = r as any;
  return async (i) => {
    const key = `key-${i}-${randomUUID()}`;
    const { args, owner } = x.idempotency.claimArgs({ sender: 's', key, fingerprint: 'f' });
    const o = x.convergence.callArgs({ sender: 's', key, ...observation(i) });
    const [nonce, row] = await Promise.all([
      replay.insert('kid', randomUUID(), 360),
      x.accepts.run([...args, o[1], o[3], o[4], o[5], o[6], o[7], o[8], o[9], true]),
    ]);
    const c = x.idempotency.toResult(row, { sender: 's', key, owner });
    if (nonce !== 'inserted' || c.kind !== 'claimed') throw new Error('base store refused');
    await x.completes.run({ claim: c.claim, outcome: 'published' });
  };
}

async function cpuPerEvent(
  label: string,
  make: (pool: Pool, schema: string) => Promise<Run>,
  events: number,
  concurrency: number,
): Promise<string> {
  const pool = createPool({ connectionString: DATABASE_URL, max: 8, applicationName: APP });
  const schema = `bench_store_${process.pid}_${concurrency}`;
  try {
    const run = await make(pool, schema);
    for (let i = 0; i < 100; i++) await run(-i - 1); // warm: prepared statements, plans
    const before = await backendTicks(pool);
    const t0 = Date.now();
    let next = 0;
    const deadline = t0 + 30_000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < events && Date.now() < deadline) await run(next++);
      }),
    );
    const ms = Date.now() - t0;
    const after = await backendTicks(pool);
    let ticks = 0;
    for (const [pid, t] of after) ticks += t - (before.get(pid) ?? t);
    const cpu = (ticks * 10_000) / next;
    return `| ${label} | ${concurrency} | ${next} | ${Math.round((next * 1000) / ms)} | ${Math.round(cpu)} |`;
  } finally {
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  }
}

export async function run(args: string[]): Promise<void> {
  const keys = arg(args, 'keys', 2_000_000, 5_000_000);
  const events = arg(args, 'events', 6400, 20_000);
  const d = args.indexOf('--base-dir');
  const baseDir = d >= 0 ? args[d + 1] : undefined;
  const pool = createPool({ connectionString: DATABASE_URL, max: 2 });
  try {
    await boundRead(pool, keys);
  } finally {
    await pool.end();
  }
  const lines = [
    '| store | concurrency | events | events/s | PostgreSQL backend CPU µs/event |',
    '|-------|-------------|--------|----------|---------------------------------|',
  ];
  for (const concurrency of [1, 64]) {
    const n = concurrency === 1 ? Math.min(events, 1500) : events;
    if (baseDir) {
      lines.push(await cpuPerEvent('8faf630', (p, s) => baseTree(p, s, baseDir), n, concurrency));
    }
    lines.push(await cpuPerEvent('this tree', thisTree, n, concurrency));
    if (baseDir) {
      lines.push(await cpuPerEvent('8faf630', (p, s) => baseTree(p, s, baseDir), n, concurrency));
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
