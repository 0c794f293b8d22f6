/**
 * Redis Cluster as a supported deployment (issue #19 items 2 and 3), on a real cluster of 3
 * masters and 3 replicas the test starts on loopback: deliveries spread over every master
 * (dispatch shards by destination origin), a master killed mid-run and its replica
 * promoted, and slots resharded under load, each with 0 lost and 0 changed bodies. Bounded:
 * a few hundred events per run.
 */
import t, { type Test } from 'tap';
import { Redis } from 'ioredis';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import { clusterUrl } from '../../shared/infra/redis.js';
import { PassThrough } from 'node:stream';
import { EXIT_DELIVERED, runSend } from '../../sender/cli/send.js';
import { DATABASE_URL } from '../helpers/db.js';
import { startRedisCluster, type TestCluster } from '../helpers/redis-cluster.js';
import { senderHarness, startReceiver, type SenderHarness } from './harness.js';

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function event(url: string, n: number): OutboundEvent {
  const key = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: { idempotency_key: key, task_id: `t_${n}`, status: 'completed', n },
    idempotencyKey: key,
    notificationType: 'completed',
  };
}

/** Slot ranges per master port, as the cluster reports them now. */
async function slotOwners(cluster: TestCluster): Promise<Array<[number, number, number]>> {
  const port = (await cluster.masters())[0]!;
  const r = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  try {
    const slots = (await r.cluster('SLOTS')) as unknown as Array<
      [number, number, [string, number]]
    >;
    return slots.map(([lo, hi, [, p]]) => [lo, hi, p]);
  } finally {
    r.disconnect();
  }
}

/**
 * Receivers (one origin each) until the origins' shards cover every master: a bounded
 * number, so the keys and the work of the run reach all of them.
 */
async function receiversOverEveryMaster(
  t: Test,
  h: SenderHarness,
  cluster: TestCluster,
): Promise<Receiver[]> {
  const { keySlot } = await import('../../sender/delivery/shards.js');
  const owners = await slotOwners(cluster);
  const masterOf = (slot: number) => owners.find(([lo, hi]) => slot >= lo && slot <= hi)![2];
  const covered = new Set<number>();
  const out: Receiver[] = [];
  const masters = await cluster.masters();
  while (covered.size < masters.length && out.length < 40) {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    out.push(rx);
    const shard = h.queue.shardOf(new URL(rx.url).origin);
    covered.add(masterOf(keySlot(`${h.queue.shardPrefix(shard)}:x`)));
  }
  return out;
}

/** Every key of `events` arrived with the bytes the outbox froze; returns duplicates seen. */
async function checkDelivered(
  t: Test,
  h: SenderHarness,
  rxs: Receiver[],
  ids: string[],
): Promise<void> {
  for (const id of ids) await h.waitForState(id, ['delivered'], 60_000);
  const { rows } = await h.pool.query<{ idempotency_key: string; body: Buffer }>(
    `SELECT idempotency_key, body FROM ${h.schema}.outbox WHERE id = ANY($1::bigint[])`,
    [ids],
  );
  const got = new Map<string, Buffer[]>();
  for (const rx of rxs) {
    for (const r of rx.received) {
      const key = String(JSON.parse(r.body.toString()).idempotency_key);
      got.set(key, [...(got.get(key) ?? []), r.body]);
    }
  }
  let lost = 0;
  let changed = 0;
  let repeated = 0;
  for (const row of rows) {
    const bodies = got.get(row.idempotency_key) ?? [];
    if (bodies.length === 0) lost++;
    if (bodies.length > 1) repeated++;
    if (bodies.some((b) => !b.equals(row.body))) changed++;
  }
  t.equal(rows.length, ids.length, 'every row in the outbox');
  t.equal(lost, 0, '0 lost');
  t.equal(changed, 0, '0 changed bodies');
  t.comment(`${repeated} of ${ids.length} delivered more than once (at-least-once)`);
}

async function enqueueInChunks(
  h: SenderHarness,
  rxs: Receiver[],
  total: number,
  mid?: () => Promise<void>,
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < total; i += 25) {
    const batch = Array.from({ length: Math.min(25, total - i) }, (_, j) =>
      event(rxs[(i + j) % rxs.length]!.url, i + j),
    );
    ids.push(...(await h.outbox.enqueue(batch)));
    if (mid && i === Math.floor(total / 2 / 25) * 25) await mid();
    await sleep(5);
  }
  return ids;
}

/** Commands each master processed (INFO stats), by port. */
async function commandsPerMaster(ports: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const p of ports) {
    const r = new Redis(p, '127.0.0.1', { maxRetriesPerRequest: 1 });
    const info = await r.info('stats');
    r.disconnect();
    out.set(p, Number(/total_commands_processed:(\d+)/.exec(info)![1]));
  }
  return out;
}

/** Keys of this deployment on one node (its own keyspace only). */
async function keysOn(port: number, h: SenderHarness): Promise<number> {
  const r = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  try {
    let n = 0;
    for (const pattern of h.queue.keyPatterns()) {
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        n += keys.length;
      } while (cursor !== '0');
    }
    return n;
  } finally {
    r.disconnect();
  }
}

const WORKER = {
  reconcileEveryMs: 1000,
  reconcileGraceMs: 3000,
  recoveryCheckMs: 250,
  concurrency: 32,
};

t.test('a 3-master cluster with replicas', async (t) => {
  const cluster = await startRedisCluster(t, { masters: 3, replicas: 1 });
  const url = clusterUrl(cluster.seeds);

  t.test('deliveries spread over every master, each once, bodies intact', async (t) => {
    const h = await senderHarness(t, { redisUrl: url });
    const rxs = await receiversOverEveryMaster(t, h, cluster);
    const masters = await cluster.masters();
    t.equal(masters.length, 3);
    const before = await commandsPerMaster(masters);
    h.startWorker(WORKER);
    h.startWorker(WORKER);
    const ids = await enqueueInChunks(h, rxs, 300);
    await checkDelivered(t, h, rxs, ids);
    const after = await commandsPerMaster(masters);
    for (const p of masters) {
      const served = after.get(p)! - before.get(p)!;
      t.ok(served > 100, `master ${p} served commands of the run (${served})`);
      t.ok((await keysOn(p, h)) > 0, `master ${p} holds keys of the deployment`);
    }
  });

  t.test('svc send through the cluster', async (t) => {
    const rx = await startReceiver((_r, i) => ({ status: i < 1 ? 503 : 200 }));
    t.teardown(() => rx.close());
    const out = new PassThrough();
    let text = '';
    out.on('data', (c) => (text += c));
    const code = await runSend({
      url: rx.url,
      brand: 'svc',
      timeoutSeconds: 30,
      databaseUrl: DATABASE_URL,
      redisUrl: url,
      out,
      err: new PassThrough(),
      backoff: { baseMs: 30, capMs: 60 },
    });
    t.equal(code, EXIT_DELIVERED, text);
    t.equal(rx.received.length, 2, 'a 503, then delivered');
  });

  t.test('a master killed mid-run, its replica promoted: 0 lost, 0 changed', async (t) => {
    const h = await senderHarness(t, { redisUrl: url });
    const rxs = await receiversOverEveryMaster(t, h, cluster);
    h.startWorker(WORKER);
    h.startWorker(WORKER);
    const victim = (await cluster.masters())[1]!;
    const ids = await enqueueInChunks(h, rxs, 300, async () => {
      cluster.kill(victim);
    });
    await cluster.waitOk(30_000);
    t.notOk((await cluster.masters()).includes(victim), 'the killed master is gone');
    t.equal((await cluster.masters()).length, 3, 'its replica took over');
    await checkDelivered(t, h, rxs, ids);
  });

  t.test('slots resharded under load: 0 lost, 0 changed', async (t) => {
    const h = await senderHarness(t, { redisUrl: url });
    const rxs = await receiversOverEveryMaster(t, h, cluster);
    h.startWorker(WORKER);
    h.startWorker(WORKER);
    const [from, to] = await cluster.masters();
    const idOf = (port: number) => cluster.cli(['-p', String(port), 'cluster', 'myid']).trim();
    let moving: Promise<string> | null = null;
    const ids = await enqueueInChunks(h, rxs, 400, async () => {
      // Moves 3,000 slots (with whatever keys they hold) while events keep coming.
      // prettier-ignore
      moving = cluster.cliAsync([
        '--cluster', 'reshard', `127.0.0.1:${from}`, '--cluster-from', idOf(from!),
        '--cluster-to', idOf(to!), '--cluster-slots', '3000', '--cluster-yes',
      ]);
    });
    t.ok(moving, 'the reshard ran during the run');
    await moving;
    await cluster.waitOk();
    const owners = await slotOwners(cluster);
    const toSlots = owners
      .filter(([, , p]) => p === to)
      .reduce((n, [lo, hi]) => n + hi - lo + 1, 0);
    t.ok(toSlots > 8000, `the slots moved (${toSlots} on the receiving master)`);
    await checkDelivered(t, h, rxs, ids);
  });
});
