/**
 * Dispatch shards (issue #19 item 3): the shard arithmetic (stable, spread over the slot
 * space, one origin in one shard), the worker's shard selection, and the documented way to
 * change the shard count on a running deployment (sender/README.md): every process
 * restarted with the new S, old and new running side by side meanwhile, and every pending
 * delivery, due now or retrying later, still delivered exactly once.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { markerKey } from '../../sender/delivery/dispatch-recovery.js';
import { DeliveryQueue } from '../../sender/delivery/queue.js';
import {
  keySlot,
  parseShardSelection,
  shardOf,
  shardPrefixes,
} from '../../sender/delivery/shards.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import { Outbox } from '../../sender/outbox/outbox.js';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { createRedis } from '../../shared/infra/redis.js';
import { REDIS_URL } from '../helpers/db.js';
import { senderHarness, startReceiver } from './harness.js';

const SVC = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));
const run = promisify(execFile);

function event(url: string, n: number): OutboundEvent {
  const key = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: { idempotency_key: key, task_id: `t_${n}`, status: 'completed' },
    idempotencyKey: key,
    notificationType: 'completed',
  };
}

t.test('shard arithmetic', async (t) => {
  t.equal(keySlot('foo'), 12182, 'CRC16 as Redis Cluster computes it');
  t.equal(keySlot('{user1000}.following'), keySlot('{user1000}.followers'), 'hash tags');
  const origin = 'https://buyer.example';
  t.equal(shardOf(origin, 16), shardOf(origin, 16), 'stable');
  t.equal(shardOf(origin, 1), 0);
  const counts = new Array<number>(16).fill(0);
  for (let i = 0; i < 1600; i++) counts[shardOf(`https://b${i}.example`, 16)]!++;
  t.ok(Math.min(...counts) > 50, `origins spread over the shards (${counts.join(' ')})`);
  for (const s of [1, 3, 16, 64]) {
    const prefixes = shardPrefixes('{svc:abcd}', s);
    t.equal(new Set(prefixes).size, s, `${s} distinct prefixes`);
    prefixes.forEach((p, i) => {
      const slot = keySlot(`${p}:webhook-delivery:wait`);
      if (slot < Math.floor((i * 16384) / s) || slot >= Math.floor(((i + 1) * 16384) / s)) {
        t.fail(`shard ${i} of ${s}: slot ${slot} outside its range`);
      }
    });
  }
  t.not(shardPrefixes('{svc:abcd}', 8)[0], shardPrefixes('{svc:abcd}', 16)[0], 'S in the keys');
  t.same(parseShardSelection('all', 4), [0, 1, 2, 3]);
  t.same(parseShardSelection('0-2,7, 5', 8), [0, 1, 2, 5, 7]);
  for (const bad of ['', '8', '3-1', 'x', '1,,2', '-1', '0-8']) {
    t.throws(() => parseShardSelection(bad, 8), /accepts all, or shard indexes and ranges 0-7/);
  }
});

t.test('a worker consuming a subset leaves the other shards to other workers', async (t) => {
  const h = await senderHarness(t, { shards: 4 });
  const rxs = await Promise.all(Array.from({ length: 8 }, () => startReceiver()));
  t.teardown(() => Promise.all(rxs.map((r) => r.close())));
  const ids = await h.outbox.enqueue(rxs.map((rx, i) => event(rx.url, i)));
  const shardOfRx = rxs.map((rx) => h.queue.shardOf(new URL(rx.url).origin));
  h.startWorker({ shards: '0-1' });
  const mine = ids.filter((_, i) => shardOfRx[i]! <= 1);
  for (const id of mine) t.equal(await h.waitForState(id), 'delivered');
  await new Promise((r) => setTimeout(r, 500));
  for (const [i, id] of ids.entries()) {
    if (shardOfRx[i]! > 1) t.equal((await h.outbox.state(id))?.state, 'pending', 'not its shard');
  }
  h.startWorker({ shards: [2, 3] });
  for (const id of ids) t.equal(await h.waitForState(id), 'delivered');
  t.equal(
    rxs.reduce((n, r) => n + r.received.length, 0),
    8,
    'each once',
  );
  t.throws(() => h.startWorker({ shards: [4] }), /shards must be indexes 0-3/);
});

t.test('changing S on a running deployment: every pending delivery once', async (t) => {
  const h = await senderHarness(t, { shards: 4 });
  const rxs = await Promise.all(Array.from({ length: 6 }, () => startReceiver()));
  t.teardown(() => Promise.all(rxs.map((r) => r.close())));
  // A backlog in the S=4 layout, nobody consuming yet: due now, and retrying in 2 s.
  const now = await h.outbox.enqueue(
    Array.from({ length: 150 }, (_, i) => event(rxs[i % rxs.length]!.url, i)),
  );
  const later = await h.outbox.enqueue(
    Array.from({ length: 30 }, (_, i) => event(rxs[i % rxs.length]!.url, 1000 + i)),
  );
  await h.pool.query(
    `UPDATE ${h.schema}.outbox SET next_attempt_at = now() + interval '2 seconds', attempts = 1
      WHERE id = ANY($1::bigint[])`,
    [later],
  );
  // Rolling restart: an old process (S=4) still runs while the new ones (S=8) start.
  const old = h.startWorker({ reconcileEveryMs: 0 });
  const redis = createRedis(REDIS_URL);
  const queue8 = new DeliveryQueue({ connection: redis, prefix: h.prefix, shards: 8 });
  t.teardown(async () => {
    await queue8.close();
    redis.disconnect();
  });
  const outbox8 = new Outbox({ pool: h.pool, queue: queue8, schema: h.schema });
  // The new layout's markers are missing: its first check re-dispatches every pending row
  // into the 8 new queues (the reconciler is off: only that path can move them).
  const fresh = h.startWorker({
    outbox: outbox8,
    reconcileEveryMs: 60_000,
    reconcileGraceMs: 60_000,
    recoveryCheckMs: 200,
  });
  await new Promise((r) => setTimeout(r, 300));
  await old.close();
  // Events written by the new processes go to the new layout.
  const after = await outbox8.enqueue(
    Array.from({ length: 20 }, (_, i) => event(rxs[i % rxs.length]!.url, 2000 + i)),
  );
  const all = [...now, ...later, ...after];
  for (const id of all) t.equal(await h.waitForState(id, ['delivered'], 30_000), 'delivered');
  const keys = rxs.flatMap((r) =>
    r.received.map((m) => String(JSON.parse(m.body.toString()).idempotency_key)),
  );
  t.equal(keys.length, all.length, `each delivery once (${keys.length} requests)`);
  t.equal(new Set(keys).size, all.length, 'no key twice');
  const markers = await Promise.all(
    Array.from({ length: 8 }, (_, s) => redis.get(markerKey(queue8, s))),
  );
  t.ok(
    markers.every((m) => m?.startsWith('done:')),
    'the new layout recovered every shard',
  );
  t.ok((await redis.pttl(markerKey(queue8, 0))) > 0, 'dispatch markers expire (a TTL is set)');
  t.ok(fresh.shards.length === 8);
});

t.test('--help names the shard count, the cluster seeds and the shard selection', async (t) => {
  const help = (await run(process.execPath, [SVC, '--help'])).stdout.replace(/\s+/g, ' ');
  t.match(help, /SVC_DISPATCH_SHARDS dispatch shards, a positive integer 1-1024.*\(default 16\)/);
  t.match(help, /REDIS_CLUSTER_NODES comma-separated host:port seed nodes/);
  const worker = (await run(process.execPath, [SVC, 'worker', '--help'])).stdout;
  t.match(worker.replace(/\s+/g, ' '), /--shards <list> dispatch shards this worker consumes/);
});
