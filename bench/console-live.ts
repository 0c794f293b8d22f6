/**
 * Part of `npm run bench -- console` (issue 26): what a bulk redeliver of 10,000 costs live
 * delivery. A worker in this process delivers batches of fresh events to a loopback
 * receiver; each batch's time from enqueue to the last one delivered is taken alone and
 * while a recover of 10,000 stopped deliveries runs (its transaction: rows re-opened, their
 * pending attempt records, the audit row; then its 10,000 jobs dispatched to Redis),
 * alternating, `rounds` times each; the medians are compared. The recovered jobs go to
 * their own queue prefix, which no worker drains: this measures the recover's own load on
 * PostgreSQL, Redis and the process, not the worker later delivering those 10,000 (they
 * would queue ahead of live jobs: see README "Bulk redeliver and live delivery").
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
}

/** Stops `n` delivered rows of `origin` (fresh each round), for the recover to take. */
async function stopSome(pool: Pool, schema: string, origin: string, n: number): Promise<void> {
  await pool.query(
    `UPDATE ${schema}.outbox_delivery SET state = 'stopped', last_status = 410
      WHERE id IN (SELECT id FROM ${schema}.outbox_delivery
                    WHERE origin = $1 AND state IN ('delivered', 'pending')
                    ORDER BY id LIMIT $2)`,
    [origin, n],
  );
}

export async function liveImpact(
  pool: Pool,
  schema: string,
  redisUrl: string,
  o: { rounds?: number; liveEvents?: number; recover?: number } = {},
): Promise<LiveImpact> {
  const rounds = o.rounds ?? 3;
  const liveEvents = o.liveEvents ?? 500;
  const perRecover = o.recover ?? 10_000;
  let got = 0;
  const rx = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got++;
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => rx.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(rx.address() as AddressInfo).port}/hook`;
  const livePrefix = `{bench-console-live-${process.pid}}`;
  const liveRedis = createRedis(redisUrl);
  const liveQueue = new DeliveryQueue({ connection: liveRedis, prefix: livePrefix });
  const outbox = new Outbox({ pool, queue: liveQueue, schema });
  const { key } = await generateSigningKey('ed25519');
  const worker = new DeliveryWorker({
    outbox,
    signer: { key, profile: brandProfile('svc') },
    connection: createRedis(redisUrl),
    prefix: livePrefix,
    allowHosts: ['127.0.0.1'],
    concurrency: 64,
    reconcileEveryMs: 0,
    storageEveryMs: 0,
  });
  await worker.start();
  const recoverRedis = createRedis(redisUrl);
  const recoverQueue = new DeliveryQueue({
    connection: recoverRedis,
    prefix: `{bench-console-recover-${process.pid}}`,
  });
  const actions = new ConsoleActions(pool, recoverQueue, schema);
  const batch = async (): Promise<number> => {
    const target = got + liveEvents;
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
    while (got < target) await new Promise((r) => setTimeout(r, 5));
    return performance.now() - t0;
  };
  const out: LiveImpact = { liveEvents, aloneMs: [], duringMs: [], recoverMs: [], recovered: [] };
  try {
    await batch(); // warm: connections, prepared plans
    const origin = 'https://buyer-3.example';
    const since = new Date(Date.now() - 40 * 86_400_000);
    for (let r = 0; r < rounds; r++) {
      out.aloneMs.push(await batch());
      await stopSome(pool, schema, origin, perRecover);
      const t0 = performance.now();
      const recovering = actions
        .recover(origin, since, { name: 'bench', via: 'cli' }, perRecover)
        .then((x) => {
          out.recoverMs.push(performance.now() - t0);
          out.recovered.push(x.recovered);
        });
      out.duringMs.push(await batch());
      await recovering;
    }
  } finally {
    await worker.close();
    await liveQueue.obliterate().catch(() => {});
    await recoverQueue.obliterate().catch(() => {});
    await liveQueue.close();
    await recoverQueue.close();
    liveRedis.disconnect();
    recoverRedis.disconnect();
    await new Promise<void>((r) => rx.close(() => r()));
  }
  return out;
}

export function describeLiveImpact(x: LiveImpact): string {
  const alone = median(x.aloneMs);
  const during = median(x.duringMs);
  const slower = ((during - alone) / alone) * 100;
  return [
    `live delivery beside a bulk redeliver (${x.aloneMs.length} rounds, medians):`,
    `  ${x.liveEvents} live events enqueued -> delivered: ${alone.toFixed(0)} ms alone, ${during.toFixed(0)} ms during the recover (${slower >= 0 ? '+' : ''}${slower.toFixed(1)} %; target <= +10 %)`,
    `  the recover: ${median(x.recovered)} deliveries re-opened, recorded, audited and dispatched in ${(median(x.recoverMs) / 1000).toFixed(2)} s (target < 10 s)`,
    `  rounds alone ${x.aloneMs.map((v) => v.toFixed(0)).join(' / ')} ms; during ${x.duringMs.map((v) => v.toFixed(0)).join(' / ')} ms`,
  ].join('\n');
}
