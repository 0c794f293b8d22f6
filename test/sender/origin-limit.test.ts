/**
 * The per-origin limit holds across worker processes (leased slots in Redis): two
 * DeliveryWorkers on separate connections against one slow origin never exceed it
 * together, another origin is not starved, a refused job stays the same delivery, and a
 * SIGKILLed process's slots come back after their TTL.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { OriginLimiter } from '../../sender/delivery/origin-limiter.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { createRedis } from '../../shared/infra/redis.js';
import { REDIS_URL, uniqueName } from '../helpers/db.js';
import { senderHarness, startReceiver } from './harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function event(url: string, n: number): OutboundEvent {
  const key = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: {
      idempotency_key: key,
      task_id: `task_${n}`,
      operation_id: `op_${n}`,
      task_type: 'create_media_buy',
      status: 'completed',
      timestamp: '2026-01-01T00:00:00.000Z',
      result: { media_buy_id: `mb_${n}` },
    },
    idempotencyKey: key,
    notificationType: 'completed',
  };
}

function redisFor(t: { teardown(fn: () => unknown): void }, prefix: string) {
  const redis = createRedis(REDIS_URL);
  t.teardown(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  return redis;
}

t.test('two limiters on one Redis share the limit; released slots move over', async (t) => {
  const prefix = `{${uniqueName('olim')}}`;
  const ra = redisFor(t, prefix);
  const rb = createRedis(REDIS_URL);
  t.teardown(() => rb.disconnect());
  // No lines (maxWaiting 0): a job finding every slot taken is refused at once.
  const a = new OriginLimiter(3, () => 0, { redis: () => ra, prefix, lingerMs: 50, maxWaiting: 0 });
  const b = new OriginLimiter(3, () => 0, { redis: () => rb, prefix, lingerMs: 50, maxWaiting: 0 });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const origin = 'https://slow.example';
  const got = [];
  for (const l of [a, b, a, b, a, b, a, b]) got.push(await l.acquire(origin));
  const admitted = got.filter((x) => x.ok);
  t.equal(admitted.length, 3, 'three slots in all, whichever process asks');
  t.ok(
    got.filter((x) => !x.ok).every((x) => !x.ok && x.waitMs > 0),
    'the others wait',
  );
  t.ok((await a.acquire('https://other.example')).ok, 'another origin has its own slots');
  t.equal(await ra.zcard(`${prefix}:origin-slots:${origin}`), 3, 'three leases in Redis');
  t.match(`${prefix}:origin-slots:${origin}`, /^\{[^}]+\}:/, 'the key carries the hash tag');

  // A's slots, released and unused for a sweep, go back; B can then take them.
  for (const x of got) if (x.ok) x.release();
  const freed = a.leased(origin);
  await a.sweep();
  await a.sweep();
  await b.sweep();
  await b.sweep();
  t.ok(freed > 0 || b.leased(origin) > 0, 'someone held slots');
  t.equal(a.leased(origin) + b.leased(origin), 0, 'unused leases are given back');
  const again = [];
  for (let i = 0; i < 4; i++) again.push(await b.acquire(origin));
  t.equal(again.filter((x) => x.ok).length, 3, 'B alone can now use all three');
  for (const x of again) if (x.ok) x.release();

  // A paused origin (429) is refused without asking Redis.
  b.pause(origin, 60_000);
  const paused = await b.acquire(origin);
  t.equal(paused.ok, false);
});

t.test('a job waits in its origin’s line for a slot, then is refused', async (t) => {
  const prefix = `{${uniqueName('olim')}}`;
  const redis = redisFor(t, prefix);
  const l = new OriginLimiter(1, () => 0, { redis: () => redis, prefix, queueWaitMs: 5000 });
  t.teardown(() => l.close());
  const first = await l.acquire('https://one.example');
  t.ok(first.ok);
  const waiting = l.acquire('https://one.example');
  const other = await l.acquire('https://two.example');
  t.ok(other.ok, 'another origin is not held up by the waiter');
  if (first.ok) first.release();
  const second = await waiting;
  t.ok(second.ok, 'the released slot went to the waiting job');
  const quick = new OriginLimiter(1, () => 0, { redis: () => redis, prefix, queueWaitMs: 20 });
  t.teardown(() => quick.close());
  const refused = await quick.acquire('https://one.example');
  t.equal(refused.ok, false, 'no slot freed within its wait: refused');
});

t.test('the line is served in order, holds the limit, and is bounded', async (t) => {
  const prefix = `{${uniqueName('olim')}}`;
  const redis = redisFor(t, prefix);
  const other = createRedis(REDIS_URL);
  t.teardown(() => other.disconnect());
  const origin = 'https://line.example';
  const a = new OriginLimiter(2, () => 0, {
    redis: () => redis,
    prefix,
    maxWaiting: 3,
    maxWaitingTotal: 3,
    pollMs: 20,
    // Refusals below come at once: a job that waited would hang the test.
    queueWaitMs: 60_000,
  });
  const b = new OriginLimiter(2, () => 0, { redis: () => other, prefix, pollMs: 20 });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const first = [await a.acquire(origin), await a.acquire(origin)];
  t.ok(
    first.every((x) => x.ok),
    'the limit (2) taken by A',
  );
  const order: number[] = [];
  const line = [0, 1, 2].map((i) =>
    Promise.resolve(a.acquire(origin)).then((x) => {
      order.push(i);
      return x;
    }),
  );
  await sleep(10);
  t.equal((await a.acquire(origin)).ok, false, 'a full line refuses at once');
  const elsewhere = b.acquire(origin);
  t.equal((await a.acquire('https://else.example')).ok, true, 'another origin is not held up');
  const third = [
    await a.acquire('https://third.example'),
    await a.acquire('https://third.example'),
  ];
  t.equal(
    (await a.acquire('https://third.example')).ok,
    false,
    'lines over all origins are bounded: no room to wait',
  );
  for (const x of third) if (x.ok) x.release();
  for (const x of first) if (x.ok) x.release();
  const [l0, l1] = await Promise.all(line.slice(0, 2));
  t.same(order, [0, 1], 'released slots went to the line in order');
  t.ok(l0!.ok && l1!.ok, 'both admitted');
  if (l0!.ok) l0!.release();
  const l2 = await line[2]!;
  t.same(order, [0, 1, 2], 'then the third');
  if (l1!.ok) l1!.release();
  if (l2.ok) l2.release();
  // B waited in its own line; A's slots, no longer used, go back and B leases them.
  await a.sweep();
  await a.sweep();
  const fromB = await elsewhere;
  t.ok(fromB.ok, 'a slot freed in another process reaches its line');
  if (fromB.ok) fromB.release();
  // A line waiting when the origin is paused (429) is refused, to wait out the pause.
  const held = [await a.acquire(origin), await a.acquire(origin)];
  t.ok(
    held.every((x) => x.ok),
    'the slots taken again',
  );
  const waiting = a.acquire(origin);
  await sleep(10);
  a.pause(origin, 60_000);
  const refused = await waiting;
  t.ok(!refused.ok && refused.waitMs >= 59_000, 'the line refused for the pause');
  t.equal((await a.acquire(origin)).ok, false, 'a paused origin refuses');
  for (const x of held) if (x.ok) x.release();
  // Closing refuses what still waits.
  const c = new OriginLimiter(1, () => 0, { redis: () => redis, prefix, queueWaitMs: 60_000 });
  const one = await c.acquire('https://close.example');
  t.ok(one.ok);
  const pending = c.acquire('https://close.example');
  await sleep(10);
  await c.close();
  t.equal((await pending).ok, false, 'closing refuses the line');
});

t.test('a SIGKILLed process leaves its slots to expire', async (t) => {
  const prefix = `{${uniqueName('olim')}}`;
  const redis = redisFor(t, prefix);
  const origin = 'https://slow.example';
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(new URL('./fixtures/origin-slot-holder.ts', import.meta.url)),
    ],
    {
      env: { ...process.env, HOLD_PREFIX: prefix, HOLD_ORIGIN: origin, HOLD_TTL_MS: '800' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const line = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
  });
  t.equal(line, 'held 2', 'the child leased both slots');
  const mine = new OriginLimiter(2, () => 0, { redis: () => redis, prefix, ttlMs: 800 });
  t.teardown(() => mine.close());
  t.equal((await mine.acquire(origin)).ok, false, 'no slot while the holder lives');
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  let admitted = false;
  for (let i = 0; i < 60 && !admitted; i++) {
    const a = await mine.acquire(origin);
    admitted = a.ok;
    if (a.ok) a.release();
    else await sleep(100);
  }
  t.ok(admitted, "the dead holder's slots came back after their TTL");
});

t.test('two workers, one slow origin: the origin never sees more than the limit', async (t) => {
  const h = await senderHarness(t);
  const limit = 2;
  let current = 0;
  let peak = 0;
  const slow = await startReceiver(async () => {
    current++;
    peak = Math.max(peak, current);
    await sleep(250);
    current--;
    return { status: 200 };
  });
  const fast = await startReceiver();
  t.teardown(() => Promise.all([slow.close(), fast.close()]));
  h.startWorker({ perOriginConcurrency: limit });
  h.startWorker({ perOriginConcurrency: limit });

  const slowIds = await h.outbox.enqueue(Array.from({ length: 10 }, (_, i) => event(slow.url, i)));
  const fastIds = await h.outbox.enqueue(
    Array.from({ length: 10 }, (_, i) => event(fast.url, 100 + i)),
  );
  for (const id of fastIds) t.equal(await h.waitForState(id), 'delivered');
  t.ok(
    slow.received.length < 10,
    'the other origin was served while the slow one still had a backlog',
  );
  for (const id of slowIds) t.equal(await h.waitForState(id, undefined, 30_000), 'delivered');

  t.ok(peak <= limit, `the slow origin saw at most ${limit} at once (saw ${peak})`);
  t.equal(peak, limit, 'and the limit was used');
  t.equal(slow.received.length, 10, 'one request per event: a refused job is not sent again');
  const keys = slow.received.map((r) => JSON.parse(r.body.toString()).idempotency_key as string);
  t.equal(new Set(keys).size, 10, 'each with its own frozen key');
  t.same(
    h.attempts.filter((a) => a.attempt !== 1),
    [],
    'a job refused a slot never became a second attempt',
  );
});

t.test('two workers, a backlog for one origin: served in order within the limit', async (t) => {
  const h = await senderHarness(t);
  const limit = 2;
  let current = 0;
  let peak = 0;
  const arrivals: number[] = [];
  const slow = await startReceiver(async (r) => {
    current++;
    peak = Math.max(peak, current);
    arrivals.push(Number(/^task_(\d+)$/.exec(JSON.parse(r.body.toString()).task_id)![1]));
    await sleep(40);
    current--;
    return { status: 200 };
  });
  const fast = await startReceiver();
  t.teardown(() => Promise.all([slow.close(), fast.close()]));
  // 128 job slots: lines of 16 per origin (32 in all) per process, room for both batches
  // whichever worker takes them.
  h.startWorker({ perOriginConcurrency: limit, concurrency: 128 });
  h.startWorker({ perOriginConcurrency: limit, concurrency: 128 });
  const batches: string[][] = [];
  for (let b = 0; b < 2; b++) {
    batches.push(
      await h.outbox.enqueue(Array.from({ length: 8 }, (_, i) => event(slow.url, b * 100 + i))),
    );
  }
  const fastIds = await h.outbox.enqueue(
    Array.from({ length: 5 }, (_, i) => event(fast.url, 1000 + i)),
  );
  let allFast = true;
  for (const id of fastIds) allFast &&= (await h.waitForState(id)) === 'delivered';
  t.ok(allFast, 'the other origin delivered');
  t.ok(slow.received.length < 16, 'while the slow one still had a backlog');
  let allSlow = true;
  for (const id of batches.flat()) {
    allSlow &&= (await h.waitForState(id, undefined, 60_000)) === 'delivered';
  }
  t.ok(allSlow, 'the backlog delivered');
  t.ok(peak <= limit, `the origin saw at most ${limit} at once (saw ${peak})`);
  t.equal(slow.received.length, 16, 'one request per event');
  t.same(
    h.attempts.filter((a) => a.attempt !== 1),
    [],
    'a job turned away never became a second attempt',
  );
  // Each batch (one job, one worker) waits in its worker's line instead of going round the
  // queue: its events go out in the order they were enqueued (two in flight at once may
  // arrive swapped).
  for (let b = 0; b < 2; b++) {
    const seen = arrivals.filter((n) => Math.floor(n / 100) === b).map((n) => n % 100);
    const displaced = seen.filter((n, pos) => Math.abs(n - pos) > limit - 1);
    t.same(displaced, [], `batch ${b} in order: ${seen.join(' ')}`);
  }
});
