/**
 * DeliveryQueue.close and DeliveryWorker.close wait for their BullMQ connections to start
 * before closing them: a caller that disconnects the shared client right after must not
 * meet an 'error' nobody hears (`svc worker` exited 1 on a SIGTERM just after its start).
 */
import t from 'tap';
import { closeStarted, DeliveryQueue } from '../../sender/delivery/queue.js';
import { createRedis } from '../../shared/infra/redis.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** What would have ended the process: tap's own handler would fail the whole file. */
function uncaught(t: { teardown(fn: () => void): void }): Error[] {
  const seen: Error[] = [];
  const on = (err: Error) => void seen.push(err);
  process.prependListener('uncaughtException', on);
  t.teardown(() => void process.off('uncaughtException', on));
  return seen;
}

t.test(
  'closed just after it was made, then its client disconnected: nothing unhandled',
  async (t) => {
    const seen = uncaught(t);
    for (let i = 0; i < 3; i++) {
      const client = createRedis(REDIS_URL);
      await client.ping();
      // Sixteen shard queues whose connections start on the (ready) shared client.
      const queue = new DeliveryQueue({ connection: client, prefix: `qclose${process.pid}-${i}` });
      await queue.close();
      client.disconnect();
    }
    await new Promise((r) => setTimeout(r, 200));
    t.same(
      seen.map((e) => e.message),
      [],
      'no "Connection is closed." error event',
    );
  },
);

t.test('a connection that never starts does not hold the close', async (t) => {
  let closed = false;
  await closeStarted(
    {
      waitUntilReady: () => new Promise(() => {}),
      close: async () => void (closed = true),
    },
    50,
  );
  t.ok(closed, 'closed once the wait ran out');
});
