/**
 * Recovery after Redis loss and dead workers (issue 13, items 4 and 5): the reconciler
 * pages past 1,000 rows and splits them between workers, a worker re-dispatches every
 * pending row as soon as it finds Redis emptied (and at start), and a dead worker's claimed
 * rows come back after a short lease that live workers keep renewing.
 */
import t from 'tap';
import { DispatchRecovery, markerKey } from '../../sender/delivery/dispatch-recovery.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import { Outbox } from '../../sender/outbox/outbox.js';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { silentLogger } from '../../shared/infra/logger.js';
import { createRedis } from '../../shared/infra/redis.js';
import { REDIS_URL } from '../helpers/db.js';
import { senderHarness, startReceiver, type SenderHarness } from './harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const allShards = (h: SenderHarness) => Array.from({ length: h.queue.shards }, (_, i) => i);

/** Rows the queued jobs carry, over every shard (a recovery batch job carries many). */
async function queuedRows(h: SenderHarness): Promise<{ rows: number; jobs: number }> {
  const jobs = (
    await Promise.all(h.queue.queues.map((q) => q.getJobs(['waiting', 'delayed'])))
  ).flat();
  const rows = jobs.reduce((n, j) => n + ('ids' in j.data ? j.data.ids.length : 1), 0);
  return { rows, jobs: jobs.length };
}

function event(url: string, n = 0): OutboundEvent {
  const key = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: { idempotency_key: key, task_id: `t_${n}`, status: 'completed' },
    idempotencyKey: key,
    notificationType: 'completed',
  };
}

/** Writes `n` pending rows straight into the outbox (no dispatch), due `dueSql`. */
async function rows(h: SenderHarness, n: number, dueSql: string): Promise<void> {
  await h.pool.query(
    `INSERT INTO ${h.schema}.outbox (idempotency_key, body, target_url, auth_mode, channel,
       notification_type, horizon_seconds, next_attempt_at)
     SELECT 'k' || md5(random()::text || g), '{}', 'http://127.0.0.1:9/hook', 'rfc9421', 'task',
            'completed', 86400, ${dueSql}
       FROM generate_series(1, $1) g`,
    [n],
  );
}

t.test('two reconcilers at once split the overdue rows and page past 1,000', async (t) => {
  const h = await senderHarness(t);
  await rows(h, 2500, `now() - interval '2 minutes'`);
  const other = new Outbox({ pool: h.pool, queue: h.queue, schema: h.schema });
  const [a, b] = await Promise.all([
    h.outbox.reconcile({ graceMs: 60_000, pageSize: 400 }),
    other.reconcile({ graceMs: 60_000, pageSize: 400 }),
  ]);
  t.equal(a + b, 2500, `every overdue row once between the two (${a} + ${b})`);
  t.equal((await h.queue.depth()).waiting, 2500, 'one row job each');
  t.equal(await h.outbox.reconcile({ graceMs: 60_000 }), 0, 'marked due now: not overdue again');
});

t.test('redispatchAll gives every pending row a job, due when the row is', async (t) => {
  const h = await senderHarness(t);
  await rows(h, 1200, 'now()');
  await rows(h, 30, `now() + interval '1 hour'`);
  await h.pool.query(
    `UPDATE ${h.schema}.outbox SET state = 'delivered' WHERE id IN (SELECT id FROM ${h.schema}.outbox LIMIT 5)`,
  );
  let pages = 0;
  const n = await h.outbox.redispatchAll({ pageSize: 500, onPage: async () => void pages++ });
  t.equal(n, 1225, `every pending row, none of the finished ones (${n}, ${pages})`);
  t.equal(pages, 2, 'three pages of 500 (the hook runs between them)');
  const depth = await h.queue.depth();
  t.equal(depth.waiting, 1195, 'rows due now wait');
  t.equal(depth.delayed, 30, 'rows due later are delayed jobs');
});

t.test('one DispatchRecovery per Redis loss, whoever checks', async (t) => {
  const h = await senderHarness(t);
  await rows(h, 10, 'now()');
  const redis = createRedis(REDIS_URL);
  t.teardown(() => redis.disconnect());
  const make = () =>
    new DispatchRecovery({
      redis: () => redis,
      queue: h.queue,
      shards: allShards(h),
      outbox: h.outbox,
      logger: silentLogger,
    });
  const [one, two] = [make(), make()];
  await Promise.all([one.check(), two.check(), one.check()]);
  t.equal(one.recoveries + two.recoveries, 1, 'the first check re-dispatched, once');
  const queued = await queuedRows(h);
  t.equal(queued.rows, 10, 'every pending row once');
  t.ok(queued.jobs <= 4, `in light jobs: one per origin and id range read (${queued.jobs})`);
  await Promise.all([one.check(), two.check()]);
  t.equal(one.recoveries + two.recoveries, 1, 'the marker stays: no second pass');
  await h.flushRedis();
  t.equal((await h.queue.depth()).waiting, 0, 'Redis lost the jobs');
  await Promise.all([two.check(), one.check()]);
  t.equal(one.recoveries + two.recoveries, 2, 'found emptied: one more pass');
  t.equal((await queuedRows(h)).rows, 10, 'every pending row has its job again');
});

t.test('a recovery that fails leaves the marker free for the next check', async (t) => {
  const h = await senderHarness(t);
  const redis = createRedis(REDIS_URL);
  t.teardown(() => redis.disconnect());
  const broken = new Outbox({ pool: h.pool, queue: h.queue, schema: 'no_such_schema' });
  const r = new DispatchRecovery({
    redis: () => redis,
    queue: h.queue,
    shards: allShards(h),
    outbox: broken,
    logger: silentLogger,
  });
  await t.rejects(r.check(), /no_such_schema/);
  const keys = allShards(h).map((s) => markerKey(h.queue, s));
  t.equal(await redis.exists(...keys), 0, 'every marker released');
});

t.test('a worker re-dispatches what a flushed Redis lost at start, without a grace', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const ids = await h.outbox.enqueue([event(rx.url, 1), event(rx.url, 2), event(rx.url, 3)]);
  await h.flushRedis();
  // A long reconciler period and grace: only the start-up recovery can bring these back.
  h.startWorker({ reconcileEveryMs: 60_000, reconcileGraceMs: 60_000 });
  for (const id of ids) t.equal(await h.waitForState(id), 'delivered');
  t.equal(rx.received.length, 3, 'each event once');
});

t.test('a running worker notices a flush within its check period', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  h.startWorker({ reconcileEveryMs: 60_000, reconcileGraceMs: 60_000, recoveryCheckMs: 100 });
  const [first] = await h.outbox.enqueue([event(rx.url, 0)]);
  t.equal(await h.waitForState(first!), 'delivered', 'running');
  // Rows whose jobs the flush takes away (written without a dispatch here), due now: the
  // reconciler's grace is a minute, so only the recovery pass can send them in time.
  const { rows: lost } = await h.pool.query<{ id: string }>(
    `INSERT INTO ${h.schema}.outbox (idempotency_key, body, target_url, auth_mode, channel,
       notification_type, horizon_seconds)
     SELECT 'k' || md5(random()::text || g), '{}', $1, 'rfc9421', 'task', 'completed', 86400
       FROM generate_series(1, 2) g RETURNING id::text`,
    [rx.url],
  );
  await h.flushRedis();
  const ids = lost.map((r) => r.id);
  for (const id of ids) t.equal(await h.waitForState(id), 'delivered');
  t.equal(rx.received.length, 3);
});

t.test("a dead worker's claimed row is sent again once its short lease ends", async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const [id] = await h.outbox.enqueue([event(rx.url)]);
  // A worker that claimed the row and died: its lease is never renewed.
  const claimed = await h.outbox.claim(id!, 400);
  t.ok('idempotencyKey' in claimed, 'claimed by the "dead" worker');
  h.startWorker({ reconcileEveryMs: 100, reconcileGraceMs: 50 });
  t.equal(await h.waitForState(id!), 'delivered');
  t.equal(rx.received.length, 1);
  t.equal((await h.outbox.state(id!))?.attempts, 2, 'the second attempt of the row');
});

t.test('a live worker renews its lease: a slow attempt is never sent twice', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver(async () => {
    await sleep(1200);
    return { status: 200 };
  });
  t.teardown(() => rx.close());
  // Lease 300 ms, renewed every 100 ms; the reconciler re-dispatches anything overdue.
  h.startWorker({ rowLeaseMs: 300, reconcileEveryMs: 50, reconcileGraceMs: 0 });
  const [id] = await h.outbox.enqueue([event(rx.url)]);
  await rx.waitFor(1);
  // Another job for the row while the attempt runs: it must find the row leased.
  await h.queue.dispatch([{ id: id!, origin: new URL(rx.url).origin }]);
  t.equal(await h.waitForState(id!), 'delivered');
  await sleep(300);
  t.equal(rx.received.length, 1, 'one request, though the attempt outlived the lease 4 times');
  t.equal((await h.outbox.state(id!))?.attempts, 1);
});
