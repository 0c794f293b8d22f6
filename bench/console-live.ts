/**
 * Part of `npm run bench -- console` (issue 26): what a bulk redeliver of 10,000 costs live
 * delivery. A worker in this process delivers batches of fresh events to a loopback
 * receiver; each batch's time from enqueue to the last one delivered is taken alone and
 * while a recover of 10,000 stopped deliveries runs (its transactions: rows re-opened,
 * their pending attempt records, the audit row; its jobs dispatched to Redis), alternating,
 * `rounds` times each; the medians are compared.
 *
 * By default (`drain`) the recovered deliveries go where the worker delivers them: their
 * rows are pointed at a second loopback receiver (another origin, as a recovered buyer
 * is) and their jobs join the live queue, so the same worker drains the 10,000 while the
 * live batch runs; the drain's time (recover start to the last recovered delivery) is
 * printed too. `drain: false` (`--live-no-drain`) sends the recovered jobs to a queue no
 * worker reads: the recover's own load on PostgreSQL, Redis and the process, alone.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brandProfile } from '../shared/brand.js';
import type { Pool } from '../shared/infra/pg.js';
import { createRedis } from '../shared/infra/redis.js';
import { generateSigningKey } from '../shared/signing/keys.js';
import { ConsoleActions } from '../sender/console/actions.js';
import { DeliveryQueue } from '../sender/delivery/queue.js';
import { DeliveryWorker } from '../sender/delivery/worker.js';
import { Outbox } from '../sender/outbox/outbox.js';
import { newIdempotencyKey } from '../sender/outbox/keys.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface LiveImpact {
  liveEvents: number;
  aloneMs: number[];
  duringMs: number[];
  recoverMs: number[];
  recovered: number[];
  /** Drain mode: recover start to the last recovered delivery received, per round. */
  drainMs: number[];
  /** Drain mode: recovered deliveries received while the live batch ran, per round. */
  recoveredDuringLive: number[];
}

/**
 * Stops `n` delivered rows of `origin` (fresh each round), for the recover to take; with
 * `to`, points them at that URL first (its origin: the recover's), so a worker can deliver
 * them. Returns the origin the stopped rows now have.
 */
async function stopSome(
  pool: Pool,
  schema: string,
  origin: string,
  n: number,
  to?: string,
): Promise<string> {
  const target = to ? new URL(to).origin : origin;
  await pool.query(
    `WITH picked AS (SELECT id FROM ${schema}.outbox_delivery
                      WHERE origin = $1 AND state IN ('delivered', 'pending')
                      ORDER BY id LIMIT $2),
          moved AS (UPDATE ${schema}.outbox_event SET target_url = coalesce($3, target_url)
                     WHERE id IN (SELECT id FROM picked))
     UPDATE ${schema}.outbox_delivery SET state = 'stopped', last_status = 410, origin = $4
      WHERE id IN (SELECT id FROM picked)`,
    [origin, n, to ?? null, target],
  );
  return target;
}

/** A loopback receiver answering 200, counting what it got. */
async function receiver(): Promise<{ url: string; got: () => number; close: () => Promise<void> }> {
  let got = 0;
  const rx = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got++;
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => rx.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(rx.address() as AddressInfo).port}/hook`,
    got: () => got,
    close: () => new Promise<void>((r) => rx.close(() => r())),
  };
}

export async function liveImpact(
  pool: Pool,
  schema: string,
  redisUrl: string,
  o: { rounds?: number; liveEvents?: number; recover?: number; drain?: boolean } = {},
): Promise<LiveImpact> {
  const rounds = o.rounds ?? 3;
  const liveEvents = o.liveEvents ?? 500;
  const perRecover = o.recover ?? 10_000;
  const drain = o.drain ?? true;
  const live = await receiver();
  const recovered = await receiver();
  const url = live.url;
  const livePrefix = `{bench-console-live-${process.pid}}`;
  const liveRedis = createRedis(redisUrl);
  const liveQueue = new DeliveryQueue({ connection: liveRedis, prefix: livePrefix });
  const outbox = new Outbox({ pool, queue: liveQueue, schema });
  const { key } = await generateSigningKey('ed25519');
  // Its own client, disconnected at the end: BullMQ leaves a client it was given open, and
  // an open one kept the bench's process from exiting once it had printed.
  const workerRedis = createRedis(redisUrl);
  const worker = new DeliveryWorker({
    outbox,
    signer: { key, profile: brandProfile('svc') },
    connection: workerRedis,
    prefix: livePrefix,
    allowHosts: ['127.0.0.1'],
    concurrency: 64,
    reconcileEveryMs: 0,
    storageEveryMs: 0,
  });
  await worker.start();
  const recoverRedis = createRedis(redisUrl);
  // Draining: the recovered jobs join the queue the worker reads.
  const recoverQueue = new DeliveryQueue({
    connection: recoverRedis,
    prefix: drain ? livePrefix : `{bench-console-recover-${process.pid}}`,
  });
  const actions = new ConsoleActions(pool, recoverQueue, schema);
  const batch = async (): Promise<number> => {
    const target = live.got() + liveEvents;
    const t0 = performance.now();
    const events = Array.from({ length: liveEvents }, () => {
      const k = newIdempotencyKey();
      return {
        target: { url, auth: { mode: 'rfc9421' as const }, channel: 'task' as const },
        payload: { idempotency_key: k, task_id: 'task_live', status: 'working' },
        idempotencyKey: k,
        notificationType: 'working',
      };
    });
    for (let i = 0; i < events.length; i += 100) await outbox.enqueue(events.slice(i, i + 100));
    while (live.got() < target) await new Promise((r) => setTimeout(r, 5));
    return performance.now() - t0;
  };
  const out: LiveImpact = {
    liveEvents,
    aloneMs: [],
    duringMs: [],
    recoverMs: [],
    recovered: [],
    drainMs: [],
    recoveredDuringLive: [],
  };
  try {
    await batch(); // warm: connections, prepared plans
    const since = new Date(Date.now() - 40 * 86_400_000);
    for (let r = 0; r < rounds; r++) {
      out.aloneMs.push(await batch());
      const origin = await stopSome(
        pool,
        schema,
        'https://buyer-3.example',
        perRecover,
        drain ? recovered.url : undefined,
      );
      const delivered = recovered.got();
      const t0 = performance.now();
      const recovering = actions
        .recover(origin, since, { name: 'bench', via: 'cli' }, perRecover)
        .then((x) => {
          out.recoverMs.push(performance.now() - t0);
          out.recovered.push(x.recovered);
          return x.recovered;
        });
      out.duringMs.push(await batch());
      out.recoveredDuringLive.push(recovered.got() - delivered);
      const n = await recovering;
      if (drain) {
        // Bounded: a drain that stalls for a minute ends the round (and says so).
        const until = performance.now() + 60_000;
        while (recovered.got() - delivered < n && performance.now() < until) {
          await new Promise((r) => setTimeout(r, 10));
        }
        out.drainMs.push(
          recovered.got() - delivered >= n ? performance.now() - t0 : Number.POSITIVE_INFINITY,
        );
      }
    }
  } finally {
    await worker.close();
    await liveQueue.obliterate().catch(() => {});
    await recoverQueue.obliterate().catch(() => {});
    await liveQueue.close();
    await recoverQueue.close();
    liveRedis.disconnect();
    recoverRedis.disconnect();
    workerRedis.disconnect();
    await live.close();
    await recovered.close();
  }
  return out;
}

export function describeLiveImpact(x: LiveImpact): string {
  const alone = median(x.aloneMs);
  const during = median(x.duringMs);
  const slower = ((during - alone) / alone) * 100;
  return [
    `live delivery beside a bulk redeliver${x.drainMs.length ? ' and its drain' : ''} (${x.aloneMs.length} rounds, medians):`,
    `  ${x.liveEvents} live events enqueued -> delivered: ${alone.toFixed(0)} ms alone, ${during.toFixed(0)} ms during the recover (${slower >= 0 ? '+' : ''}${slower.toFixed(1)} %; target <= +10 %)`,
    `  the recover: ${median(x.recovered)} deliveries re-opened, recorded, audited and dispatched in ${(median(x.recoverMs) / 1000).toFixed(2)} s (target < 10 s)`,
    `  rounds alone ${x.aloneMs.map((v) => v.toFixed(0)).join(' / ')} ms; during ${x.duringMs.map((v) => v.toFixed(0)).join(' / ')} ms`,
    x.drainMs.length
      ? `  the same worker drained the recovered deliveries (another loopback origin) in ${x.drainMs.map((v) => (v / 1000).toFixed(2)).join(' / ')} s from the recover's start; ${x.recoveredDuringLive.join(' / ')} of them while the live batch ran`
      : `  the recovered jobs went to a queue no worker reads (--live-no-drain)`,
  ].join('\n');
}
