/**
 * Live first (issue #26): a bulk redeliver's rows (the recovery lane) run behind live
 * ones. The gate on its own (slots: `cap` with no live row in, `whileLive` with one, in
 * arrival order), then a real worker over PostgreSQL, Redis and loopback receivers: live
 * deliveries sent while a recovered backlog drains are all delivered before the backlog is,
 * with at most one recovered row let in at a time meanwhile; every recovered row is
 * delivered once; a paused destination's recovered rows wait, and go on resume. The
 * assertions are on order and slots, never on timings.
 */
import t from 'tap';
import { ConsoleActions } from '../../sender/console/actions.js';
import { LiveFirst } from '../../sender/delivery/lanes.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { senderHarness, startReceiver, type SenderHarness } from './harness.js';

const WHO = { name: 'lena', via: 'cli' as const };

function event(url: string): OutboundEvent {
  const key = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: { idempotency_key: key, status: 'completed' },
    idempotencyKey: key,
    notificationType: 'completed',
  };
}

t.test('the gate: cap alone, whileLive beside live rows, in arrival order', async (t) => {
  t.throws(() => new LiveFirst(0), RangeError);
  t.throws(() => new LiveFirst(4, 0), RangeError, 'a recovery always moves');
  const g = new LiveFirst(3, 1);
  const order: number[] = [];
  const take = (n: number) => g.acquireRecovery().then(() => order.push(n));
  await Promise.all([take(1), take(2), take(3)]);
  t.same(g.state(), { live: 0, recovering: 3, waiting: 0 }, 'up to cap with no live row');
  const fourth = take(4);
  await Promise.resolve();
  t.same(g.state().waiting, 1, 'the fourth waits');
  g.liveBegin(50);
  g.releaseRecovery();
  g.releaseRecovery();
  await Promise.resolve();
  t.same(g.state(), { live: 50, recovering: 1, waiting: 1 }, 'live rows in: one at a time');
  g.releaseRecovery();
  await fourth;
  t.same(order, [1, 2, 3, 4], 'in arrival order');
  t.same(g.state(), { live: 50, recovering: 1, waiting: 0 });
  const fifth = take(5);
  const sixth = take(6);
  await Promise.resolve();
  t.equal(g.state().waiting, 2);
  g.liveEnd(49);
  await Promise.resolve();
  t.equal(g.state().waiting, 2, 'still a live row in');
  g.liveEnd(1);
  await Promise.all([fifth, sixth]);
  t.same(g.state(), { live: 0, recovering: 3, waiting: 0 }, 'no live row: up to cap again');
  t.equal(g.peakWhileLive, 1);
  const ran = await g.run('live', async () => g.state().live);
  t.equal(ran, 1, 'a live row counts while it runs');
  t.equal(g.state().live, 0);
});

/**
 * `n` stopped deliveries to `url` whose jobs are gone, as a recover finds them (delivered
 * rows made stopped: their jobs finished long ago).
 */
async function stoppedRows(h: SenderHarness, url: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 100) {
    ids.push(
      ...(await h.outbox.enqueue(Array.from({ length: Math.min(100, n - i) }, () => event(url)))),
    );
  }
  await h.queue.obliterate();
  await h.pool.query(
    `UPDATE ${h.schema}.outbox_delivery SET state = 'stopped', last_status = 410
      WHERE id = ANY($1::bigint[])`,
    [ids],
  );
  return ids;
}

t.test('a recovered backlog does not hold live deliveries back', async (t) => {
  const h = await senderHarness(t);
  // Each answer takes a moment, so attempts overlap as they would on a real network.
  const slow = () =>
    new Promise<{ status: number }>((r) => setTimeout(() => r({ status: 200 }), 15));
  const recovered = await startReceiver(slow);
  const live = await startReceiver(slow);
  t.teardown(() => recovered.close());
  t.teardown(() => live.close());
  const backlog = 400;
  const backlogIds = await stoppedRows(h, recovered.url, backlog);
  const actions = new ConsoleActions(h.pool, h.queue, h.schema, undefined, { recoverChunk: 100 });
  const origin = new URL(recovered.url).origin;
  const r = await actions.recover(origin, new Date(Date.now() - 86_400_000), WHO, backlog);
  t.equal(r.recovered, backlog);
  const depth = await h.queue.depth();
  t.equal(depth.waiting, backlog / 50, 'the recover queued its batch jobs (depth counts them)');
  t.equal(
    (await h.queue.jobCounts('waiting')).waiting,
    backlog / 50,
    'in the recovery lane, whose jobs the counts include',
  );
  const liveWaiting = await Promise.all(h.queue.queues.map((q) => q.getWaitingCount()));
  t.equal(
    liveWaiting.reduce((a, b) => a + b, 0),
    0,
    'none in the live lane',
  );

  const worker = h.startWorker({ concurrency: 8, perOriginConcurrency: 4 });
  await recovered.waitFor(10);
  // Live events while the backlog drains.
  const liveIds = await h.outbox.enqueue(Array.from({ length: 40 }, () => event(live.url)));
  await live.waitFor(40, 30_000);
  const recoveredWhenLiveDone = recovered.received.length;
  t.ok(
    recoveredWhenLiveDone < backlog,
    `every live delivery arrived before the backlog drained (${recoveredWhenLiveDone} of ${backlog} recovered by then)`,
  );
  t.ok(
    worker.lanes.peakWhileLive <= 1,
    `at most one recovered row let in at a time beside live rows (${worker.lanes.peakWhileLive})`,
  );
  for (const id of liveIds) t.equal(await h.waitForState(id), 'delivered');
  // Then the backlog drains, nothing dropped, nothing twice.
  await recovered.waitFor(backlog, 60_000);
  const keys = recovered.received.map((x) => x.body.toString());
  t.equal(new Set(keys).size, backlog, 'each recovered delivery once');
  // The last answers' settles land just after the receiver has them.
  for (const id of backlogIds) await h.waitForState(id, ['delivered']);
  const { rows } = await h.pool.query(
    `SELECT state, count(*)::int AS n FROM ${h.schema}.outbox_delivery
      WHERE origin = $1 GROUP BY state`,
    [origin],
  );
  t.same(rows, [{ state: 'delivered', n: backlog }]);
});

t.test('a paused destination: its recovered rows wait, and go on resume', async (t) => {
  const h = await senderHarness(t);
  const recovered = await startReceiver();
  const live = await startReceiver();
  t.teardown(() => recovered.close());
  t.teardown(() => live.close());
  await stoppedRows(h, recovered.url, 120);
  const actions = new ConsoleActions(h.pool, h.queue, h.schema);
  const origin = new URL(recovered.url).origin;
  await actions.pause(origin, WHO);
  await actions.recover(origin, new Date(Date.now() - 86_400_000), WHO, 120);
  h.startWorker({ pausedRecheckMs: 60_000 });
  const liveIds = await h.outbox.enqueue(Array.from({ length: 10 }, () => event(live.url)));
  for (const id of liveIds) t.equal(await h.waitForState(id), 'delivered');
  // The recovered jobs have run by now (each asked and was told to wait): none sent.
  await new Promise((r) => setTimeout(r, 500));
  t.equal(recovered.received.length, 0, 'nothing to the paused destination');
  const { rows } = await h.pool.query(
    `SELECT count(*)::int AS n FROM ${h.schema}.outbox_delivery
      WHERE origin = $1 AND state = 'pending' AND attempts = 0`,
    [origin],
  );
  t.equal(rows[0].n, 120, 'its rows wait, unclaimed');
  // Resume promotes their waiting jobs (in the recovery lane) at once, not after 60 s.
  await actions.resume(origin, WHO);
  await recovered.waitFor(120, 20_000);
  t.equal(new Set(recovered.received.map((x) => x.body.toString())).size, 120, 'each once');
});
