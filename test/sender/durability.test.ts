import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createRedis } from '../../shared/infra/redis.js';
import { generateSigningKey } from '../../shared/signing/keys.js';
import { DeliveryQueue } from '../../sender/delivery/queue.js';
import { Outbox } from '../../sender/outbox/outbox.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { DATABASE_URL, REDIS_URL } from '../helpers/db.js';
import { INTERRUPTED_ATTEMPT } from '../../sender/activity/activity-log.js';
import { senderHarness, startReceiver, type SenderHarness } from './harness.js';

function event(url: string, tag = 'x'): OutboundEvent {
  const key = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: {
      idempotency_key: key,
      task_id: tag,
      status: 'completed',
      timestamp: new Date().toISOString(),
    },
    idempotencyKey: key,
    notificationType: 'completed',
  };
}

/** A worker in its own process (no activity log: it never writes a record itself). */
async function childWorker(t: Test, h: SenderHarness) {
  const { privateJwk } = await generateSigningKey('ed25519');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./fixtures/worker-child.ts', import.meta.url))],
    {
      env: {
        ...process.env,
        SND_SCHEMA: h.schema,
        SND_PREFIX: h.prefix,
        SND_KEY: JSON.stringify(privateJwk),
        DATABASE_URL,
        REDIS_URL,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  t.teardown(() => void child.kill('SIGKILL'));
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  return {
    async kill() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

async function records(h: SenderHarness, id: string) {
  const { rows } = await h.pool.query(
    `SELECT attempt, status, error_message, fired_at, completed_at FROM ${h.schema}.webhook_activity
      WHERE outbox_id = $1 ORDER BY attempt`,
    [id],
  );
  return rows as Array<{
    attempt: number;
    status: string;
    error_message: string | null;
    fired_at: Date;
    completed_at: Date | null;
  }>;
}

t.test('a worker killed with SIGKILL mid-delivery loses nothing', async (t) => {
  const h = await senderHarness(t);
  let hold = true;
  const rx = await startReceiver(() => (hold ? new Promise<never>(() => {}) : { status: 200 }));
  t.teardown(() => rx.close());
  const child = await childWorker(t, h);
  const e = event(rx.url);
  const [id] = await h.outbox.enqueue([e]);
  await rx.waitFor(1);
  await child.kill();
  hold = false;
  // A fresh worker picks the stalled job up once its lock expires.
  h.startWorker();
  t.equal(await h.waitForState(id!, undefined, 30_000), 'delivered');
  t.equal(rx.received.length, 2);
  t.ok(rx.received[1]!.body.equals(rx.received[0]!.body), 'the same bytes after the crash');
  t.equal(JSON.parse(rx.received[1]!.body.toString()).idempotency_key, e.idempotencyKey);
  t.equal(
    (await h.outbox.state(id!))?.attempts,
    2,
    'the restart is the second attempt, not a new delivery',
  );
  // The killed worker wrote nothing about its attempt; the next claim recorded it.
  const recs = await records(h, id!);
  t.same(
    recs.map((r) => [r.attempt, r.status, r.error_message]),
    [
      [1, 'timeout', INTERRUPTED_ATTEMPT],
      [2, 'success', null],
    ],
    'the attempt on the wire when its worker died is recorded, interrupted',
  );
  t.ok(recs[0]!.fired_at <= recs[1]!.fired_at, 'fired when its claim started it');
  t.ok(recs[0]!.completed_at, 'and closed');
});

t.test(
  'an interrupted attempt is recorded under its URL without query, fragment, user',
  async (t) => {
    const h = await senderHarness(t);
    const e = event('http://u:secret@127.0.0.1:9/hook/a?token=secret#frag');
    const [id] = await h.outbox.enqueue([e]);
    // A claim whose worker died at once: attempt 1 open, its lease already over.
    await h.pool.query(
      `UPDATE ${h.schema}.outbox SET attempts = 1, first_attempt_at = now(),
            attempt_started_at = now() - interval '5 seconds',
            next_attempt_at = now() - interval '2 seconds' WHERE id = $1`,
      [id],
    );
    t.equal(await h.outbox.closeInterrupted(), 1);
    const { rows } = await h.pool.query(
      `SELECT url, payload_size_bytes, idempotency_key, completed_at >= fired_at AS ordered
       FROM ${h.schema}.webhook_activity WHERE outbox_id = $1`,
      [id],
    );
    t.same(rows, [
      {
        url: 'http://127.0.0.1:9/hook/a',
        payload_size_bytes: Buffer.byteLength(JSON.stringify(e.payload)),
        idempotency_key: e.idempotencyKey,
        ordered: true,
      },
    ]);
  },
);

t.test('the reconciler records a dead worker’s attempt once its lease lapsed', async (t) => {
  const h = await senderHarness(t);
  let hold = true;
  const rx = await startReceiver(() => (hold ? new Promise<never>(() => {}) : { status: 200 }));
  t.teardown(() => rx.close());
  const child = await childWorker(t, h);
  const [id] = await h.outbox.enqueue([event(rx.url)]);
  await rx.waitFor(1);
  t.equal(await h.outbox.closeInterrupted({ marginMs: 0 }), 0, 'not while its lease is renewed');
  await child.kill();
  hold = false;
  // The child's lease (4.5 s) lapses without renewal.
  let closed = 0;
  for (let i = 0; i < 200 && closed === 0; i++) {
    closed = await h.outbox.closeInterrupted({ marginMs: 0 });
    if (closed === 0) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(closed, 1, 'one attempt recorded');
  t.same(
    (await records(h, id!)).map((r) => [r.attempt, r.status, r.error_message]),
    [[1, 'timeout', INTERRUPTED_ATTEMPT]],
    'before any other attempt',
  );
  t.equal(await h.outbox.closeInterrupted({ marginMs: 0 }), 0, 'recorded once');
  h.startWorker();
  t.equal(await h.waitForState(id!, undefined, 30_000), 'delivered');
  t.same(
    (await records(h, id!)).map((r) => [r.attempt, r.status]),
    [
      [1, 'timeout'],
      [2, 'success'],
    ],
    'the next attempt does not record it again',
  );
});

t.test('after a Redis flush the reconciler re-enqueues and delivery completes', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const ids = await h.outbox.enqueue([event(rx.url, 'a'), event(rx.url, 'b'), event(rx.url, 'c')]);
  t.equal((await h.queue.depth()).waiting, 1, 'one batch job for the three first attempts');
  await h.flushRedis();
  t.equal((await h.queue.depth()).waiting, 0, 'Redis lost every job');
  h.startWorker({ reconcileEveryMs: 100, reconcileGraceMs: 50 });
  for (const id of ids) t.equal(await h.waitForState(id), 'delivered');
  t.equal(rx.received.length, 3, 'each event once');
});

t.test('a second job for the same row never sends it twice', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const [id] = await h.outbox.enqueue([event(rx.url)]);
  const origin = new URL(rx.url).origin;
  t.equal(await h.outbox.reconcile({ graceMs: -60_000 }), 1, 'the reconciler saw the row');
  await h.queue.dispatch([{ id: id!, origin }]);
  t.equal((await h.queue.depth()).waiting, 2, 'a batch job and a row job');
  h.startWorker();
  t.equal(await h.waitForState(id!), 'delivered');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(rx.received.length, 1, 'the leased row is sent once');
  t.equal((await h.outbox.state(id!))?.attempts, 1);
});

t.test('the SSRF guard refuses private and non-https targets', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  h.startWorker({ allowHosts: [] });
  const targets = [
    `https://127.0.0.1:${rx.port}/hook`, // reserved literal
    `https://localhost:${rx.port}/hook`, // a name resolving to loopback
    `http://example.com/hook`, // plain http
    `https://[::1]:${rx.port}/hook`,
    `https://169.254.169.254/latest`,
  ];
  const ids = await h.outbox.enqueue(targets.map((u) => event(u)));
  for (const id of ids) {
    t.equal(await h.waitForState(id), 'stopped');
    t.equal((await h.outbox.state(id))?.lastError, 'target_refused');
  }
  t.equal(rx.received.length, 0, 'no request reached the loopback receiver');
});

t.test('a slow origin does not starve the others', async (t) => {
  const h = await senderHarness(t);
  const release: Array<() => void> = [];
  const slow = await startReceiver(
    () => new Promise((resolve) => release.push(() => resolve({ status: 200 }))),
  );
  const fast = await startReceiver();
  t.teardown(() => Promise.all([slow.close(), fast.close()]));
  h.startWorker({ concurrency: 4, perOriginConcurrency: 2 });
  const slowIds = await h.outbox.enqueue(Array.from({ length: 6 }, () => event(slow.url)));
  await slow.waitFor(2);
  const fastIds = await h.outbox.enqueue(Array.from({ length: 10 }, () => event(fast.url)));
  for (const id of fastIds) t.equal(await h.waitForState(id), 'delivered');
  t.equal(slow.received.length, 2, 'the slow origin never had more than its 2 slots');
  // Let the slow origin answer everything now.
  const drain = setInterval(() => release.splice(0).forEach((f) => f()), 20);
  t.teardown(() => clearInterval(drain));
  for (const id of slowIds) t.equal(await h.waitForState(id), 'delivered');
  t.equal(slow.received.length, 6);
});

t.test(
  'Redis unreachable at enqueue: the event is kept and delivered once Redis is back',
  async (t) => {
    const h = await senderHarness(t);
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const dead = createRedis('redis://127.0.0.1:1', {
      lazyConnect: true,
      retryStrategy: () => 200,
    });
    const deadQueue = new DeliveryQueue({ connection: dead, prefix: h.prefix });
    t.teardown(async () => {
      dead.disconnect();
      await deadQueue.close().catch(() => {});
    });
    const outbox = new Outbox({
      pool: h.pool,
      queue: deadQueue,
      schema: h.schema,
      dispatchTimeoutMs: 200,
    });
    const [id] = await outbox.enqueue([event(rx.url)]);
    t.equal((await h.outbox.state(id!))?.state, 'pending', 'written to the outbox all the same');
    h.startWorker({ reconcileEveryMs: 100, reconcileGraceMs: 50 });
    t.equal(await h.waitForState(id!), 'delivered');
    t.equal(rx.received.length, 1);
  },
);
