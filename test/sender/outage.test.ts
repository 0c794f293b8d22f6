/**
 * The sender across a PostgreSQL restart (issue 13, items 6 and 7), on a private cluster
 * this file starts and stops (never the shared one): a settle that fails while the
 * database is down is retried within the row's lease (no second delivery), claims that
 * fail wait instead of failing their job, an activity flush that fails is written later,
 * and a settled attempt is recorded by the settle itself (nothing left `pending` by a
 * worker killed before its buffered flush).
 */
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { createPool, type Pool } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { generateSigningKey } from '../../shared/signing/keys.js';
import { ActivityLog, INTERRUPTED_ATTEMPT } from '../../sender/activity/activity-log.js';
import { DeliveryQueue } from '../../sender/delivery/queue.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../../sender/delivery/worker.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import { createStatePool, Outbox } from '../../sender/outbox/outbox.js';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { migrateSender } from '../../sender/schema.js';
import {
  startPostgres,
  startRedis,
  waitForPostgres,
  type PrivatePostgres,
} from '../../bench/chaos/services.js';
import { REDIS_URL, uniqueName } from '../helpers/db.js';
import { FAST_BACKOFF, startReceiver } from './harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function event(url: string, n = 0): OutboundEvent {
  const key = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: { idempotency_key: key, task_id: `t_${n}`, status: 'completed' },
    idempotencyKey: key,
    notificationType: 'completed',
  };
}

let pgServer: PrivatePostgres;
t.before(async () => {
  pgServer = await startPostgres();
});
t.teardown(() => pgServer?.destroy());

interface Setup {
  pool: Pool;
  schema: string;
  outbox: Outbox;
  activity: ActivityLog;
  startWorker(extra?: Partial<DeliveryWorkerOptions>): DeliveryWorker;
  state(id: string): Promise<string | undefined>;
  waitDelivered(id: string): Promise<void>;
  records(id: string): Promise<Array<{ attempt: number; status: string; error_message: string }>>;
}

async function setup(
  t: { teardown(fn: () => unknown): void },
  activityOptions: { flushEveryMs?: number } = {},
): Promise<Setup> {
  const pool = createPool({ connectionString: pgServer.url, max: 10 });
  const schema = uniqueName('outage');
  await migrateSender(pool, schema);
  const prefix = `{${uniqueName('outq')}}`;
  const redis = createRedis(REDIS_URL);
  const queue = new DeliveryQueue({ connection: redis, prefix });
  const outbox = new Outbox({ pool, queue, schema });
  const activity = new ActivityLog({ pool, schema, flushEveryMs: 20, ...activityOptions });
  const { key } = await generateSigningKey('ed25519');
  const workers: DeliveryWorker[] = [];
  const connections = [redis];
  t.teardown(async () => {
    for (const w of workers) await w.close();
    await queue.close();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    for (const c of connections) c.disconnect();
    await pool.end();
  });
  const state = async (id: string) =>
    (await pool.query(`SELECT state FROM ${schema}.outbox WHERE id = $1`, [id])).rows[0]?.state as
      string | undefined;
  return {
    pool,
    schema,
    outbox,
    activity,
    state,
    startWorker(extra = {}) {
      const connection = createRedis(REDIS_URL);
      connections.push(connection);
      const w = new DeliveryWorker({
        outbox,
        signer: { key, profile: brandProfile('svc') },
        connection,
        prefix,
        allowHosts: ['127.0.0.1'],
        backoff: FAST_BACKOFF,
        activity,
        concurrency: 8,
        lockDurationMs: 2000,
        stalledIntervalMs: 1000,
        reconcileEveryMs: 0,
        storageEveryMs: 0,
        ...extra,
      });
      workers.push(w);
      return w;
    },
    async waitDelivered(id) {
      for (let i = 0; i < 400; i++) {
        if ((await state(id).catch(() => undefined)) === 'delivered') return;
        await sleep(50);
      }
      throw new Error(`row ${id} never delivered`);
    },
    async records(id) {
      const { rows } = await pool.query(
        `SELECT attempt, status, error_message FROM ${schema}.webhook_activity
          WHERE outbox_id = $1 ORDER BY attempt`,
        [id],
      );
      return rows;
    },
  };
}

t.test('a settle failing while PostgreSQL restarts is retried: one delivery', async (t) => {
  const s = await setup(t);
  let restarted: Promise<void> | null = null;
  const rx = await startReceiver(async () => {
    // The database goes down while the attempt is on the wire, back 1.5 s later.
    restarted ??= (async () => {
      await pgServer.stop('fast');
      await sleep(1500);
      await pgServer.start();
    })();
    await sleep(100);
    return { status: 200 };
  });
  t.teardown(() => rx.close());
  s.startWorker();
  const [id] = await s.outbox.enqueue([event(rx.url)]);
  await rx.waitFor(1);
  await restarted;
  await waitForPostgres(pgServer.url);
  await s.waitDelivered(id!);
  await sleep(500);
  t.equal(rx.received.length, 1, 'sent once: the settle went through on retry');
  t.same(
    (await s.records(id!)).map((r) => [r.attempt, r.status]),
    [[1, 'success']],
    'and the attempt is recorded with its outcome',
  );
});

t.test('claims failing while PostgreSQL is down wait, then deliver', async (t) => {
  const s = await setup(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const ids = await s.outbox.enqueue([event(rx.url, 1), event(rx.url, 2), event(rx.url, 3)]);
  await pgServer.stop('immediate');
  s.startWorker();
  await sleep(1500);
  await pgServer.start();
  for (const id of ids) await s.waitDelivered(id);
  t.equal(rx.received.length, 3, 'each once, in the batch job that kept waiting');
});

t.test('an activity flush failing while PostgreSQL is down is written later', async (t) => {
  const s = await setup(t, { flushEveryMs: 50 });
  const [id] = await s.outbox.enqueue([event('http://127.0.0.1:9/hook')]);
  await pgServer.stop('fast');
  s.activity.add({
    outboxId: id!,
    mediaBuyId: null,
    principalId: null,
    subscriberId: null,
    idempotencyKey: newIdempotencyKey(),
    notificationId: null,
    notificationType: 'completed',
    sequenceNumber: null,
    attempt: 1,
    status: 'success',
    url: 'http://127.0.0.1:9/hook',
    httpStatusCode: 200,
    responseTimeMs: 3,
    payloadSizeBytes: 2,
    errorMessage: null,
    firedAt: new Date(),
    completedAt: new Date(),
  });
  await s.activity.flush();
  t.equal(s.activity.buffered, 1, 'kept in the buffer after the failed flush');
  await pgServer.start();
  for (let i = 0; i < 200 && s.activity.buffered > 0; i++) await sleep(50);
  await s.activity.flush();
  t.same(
    (await s.records(id!)).map((r) => [r.attempt, r.status]),
    [[1, 'success']],
    'written by a later flush',
  );
});

t.test('the settle records the attempt: nothing waits on the buffered flush', async (t) => {
  // A flush period far beyond the test: only the settle can have written the records.
  const s = await setup(t, { flushEveryMs: 600_000 });
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const [id] = await s.outbox.enqueue([event(rx.url)]);
  // Attempt 1 of a worker that died after its pending record was written.
  await s.pool.query(
    `UPDATE ${s.schema}.outbox SET attempts = 1, first_attempt_at = now() WHERE id = $1`,
    [id],
  );
  await s.pool.query(
    `INSERT INTO ${s.schema}.webhook_activity (outbox_id, idempotency_key, notification_type,
       attempt, status, url, payload_size_bytes, fired_at)
     VALUES ($1, 'k', 'completed', 1, 'pending', 'x', 2, now())`,
    [id],
  );
  s.startWorker();
  await s.waitDelivered(id!);
  t.same(
    (await s.records(id!)).map((r) => [r.attempt, r.status, r.error_message]),
    [
      [1, 'timeout', INTERRUPTED_ATTEMPT],
      [2, 'success', null],
    ],
    'the interrupted attempt closed, the delivered one recorded, without any flush',
  );
  t.equal(s.activity.buffered, 0, 'the start of the settled attempt was never written');
});

t.test('a claim survives a crash right after it, even on the state pool', async (t) => {
  const s = await setup(t);
  // Commits without waiting for the WAL flush, as the worker's claims and settles run.
  const statePool = createStatePool(pgServer.url, 2);
  const redis = createRedis(REDIS_URL);
  const queue = new DeliveryQueue({ connection: redis, prefix: `{${uniqueName('outc')}}` });
  const outbox = new Outbox({ pool: s.pool, queue, schema: s.schema, statePool });
  t.teardown(async () => {
    await queue.close();
    redis.disconnect();
    await statePool.end();
  });
  const ids = await s.outbox.enqueue([
    event('http://127.0.0.1:9/hook', 1),
    event('http://127.0.0.1:9/hook', 3),
  ]);
  // Settles stay asynchronous: one settled just before the crash may be lost (the row is
  // then sent again), so only the claims are checked: a first attempt (the quick claim),
  // and a row whose previous attempt was never settled (the full claim, which records it).
  const claimed = await outbox.claim(ids[0]!, 60_000);
  t.equal('attempt' in claimed && claimed.attempt, 1, 'claimed');
  const first = await outbox.claim(ids[1]!, 1);
  t.equal('attempt' in first && first.attempt, 1, 'claimed, lease of 1 ms');
  await sleep(60);
  const second = await outbox.claim(ids[1]!, 60_000);
  t.equal('attempt' in second && second.attempt, 2, 'claimed again, attempt 1 never settled');
  // At once: an asynchronous commit still in the WAL buffers would be lost.
  await pgServer.stop('immediate');
  await pgServer.start();
  await waitForPostgres(pgServer.url);
  const { rows } = await s.pool.query(
    `SELECT attempts, attempt_started_at IS NOT NULL AS open FROM ${s.schema}.outbox
      WHERE id = ANY($1::bigint[]) ORDER BY id`,
    [ids],
  );
  t.same(
    rows,
    [
      { attempts: 1, open: true },
      { attempts: 2, open: true },
    ],
    'the attempts are known after the crash',
  );
  t.same(
    await s.records(ids[1]!),
    [{ attempt: 1, status: 'timeout', error_message: INTERRUPTED_ATTEMPT }],
    'the unsettled attempt is recorded after the crash',
  );
  // Opted out (one WAL flush less per claim batch): claims work the same.
  const fast = new Outbox({
    pool: s.pool,
    queue,
    schema: s.schema,
    statePool,
    durableClaims: false,
  });
  const [other] = await s.outbox.enqueue([event('http://127.0.0.1:9/hook', 2)]);
  const again = await fast.claim(other!, 60_000);
  t.equal('attempt' in again && again.attempt, 1, 'claimed without the durable commit');
});

t.test('a dispatch failing while Redis is down is retried by the enqueuing process', async (t) => {
  const redisServer = await startRedis();
  t.teardown(() => redisServer.destroy());
  const pool = createPool({ connectionString: pgServer.url, max: 4 });
  const schema = uniqueName('outage');
  await migrateSender(pool, schema);
  const enqueueRedis = createRedis(redisServer.url);
  enqueueRedis.on('error', () => {});
  const queue = new DeliveryQueue({ connection: enqueueRedis, prefix: '{outq}' });
  const outbox = new Outbox({ pool, queue, schema, dispatchTimeoutMs: 200 });
  const rx = await startReceiver();
  const { key } = await generateSigningKey('ed25519');
  const workerRedis = createRedis(redisServer.url);
  workerRedis.on('error', () => {});
  await redisServer.stop();
  const [id] = await outbox.enqueue([event(rx.url)]);
  await redisServer.start();
  // No reconciler and no recovery pass: only the retried dispatch can bring the row.
  const worker = new DeliveryWorker({
    outbox,
    signer: { key, profile: brandProfile('svc') },
    connection: workerRedis,
    prefix: '{outq}',
    allowHosts: ['127.0.0.1'],
    reconcileEveryMs: 0,
    storageEveryMs: 0,
  });
  t.teardown(async () => {
    await worker.close();
    await queue.close();
    enqueueRedis.disconnect();
    workerRedis.disconnect();
    await rx.close();
    await pool.end();
  });
  await rx.waitFor(1);
  t.equal(rx.received.length, 1);
  t.equal(
    JSON.parse(rx.received[0]!.body.toString()).idempotency_key,
    (await pool.query(`SELECT idempotency_key FROM ${schema}.outbox WHERE id = $1`, [id])).rows[0]
      .idempotency_key,
  );
});
