/**
 * Test plumbing for the sender: a schema, a unique BullMQ prefix, an outbox, a worker
 * with short timings, and a loopback receiver whose answers the test scripts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brandProfile, type BrandProfile } from '../../shared/brand.js';
import { verifyWebhookSignature, type VerifiedSignature } from '../../shared/signing/verify.js';
import { KeySet } from '../../sender/keys/key-set.js';
import { createRedis, isClusterUrl } from '../../shared/infra/redis.js';
import { generateSigningKey, type SigningKey } from '../../shared/signing/keys.js';
import { ActivityLog } from '../../sender/activity/activity-log.js';
import { DeliveryQueue } from '../../sender/delivery/queue.js';
import {
  DeliveryWorker,
  type AttemptReport,
  type DeliveryWorkerOptions,
} from '../../sender/delivery/worker.js';
import { Outbox } from '../../sender/outbox/outbox.js';
import { migrateSender } from '../../sender/schema.js';
import { REDIS_URL, testDatabase, uniqueName } from '../helpers/db.js';

export interface Received {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export type Reply = (req: Received, index: number) => ReplyOut | Promise<ReplyOut>;

/** A reply: status, headers, and optionally a body (default empty). */
export interface ReplyOut {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  reply: Reply;
  /** Resolves once `n` requests have arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(reply: Reply = () => ({ status: 200 })): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const receiver = { received, reply } as Receiver;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      const index = received.length;
      received.push(r);
      for (const w of [...waiters]) if (received.length >= w.n) w.resolve();
      Promise.resolve(receiver.reply(r, index)).then(
        (out) => {
          res.writeHead(out.status, out.headers ?? {});
          res.end(out.body);
        },
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  receiver.port = port;
  receiver.url = `http://127.0.0.1:${port}/hook`;
  receiver.waitFor = (n, timeoutMs = 20_000) =>
    received.length >= n
      ? Promise.resolve()
      : new Promise<void>((resolve, reject) => {
          const t = setTimeout(
            () => reject(new Error(`receiver got ${received.length} of ${n} requests`)),
            timeoutMs,
          );
          waiters.push({
            n,
            resolve: () => {
              clearTimeout(t);
              resolve();
            },
          });
        });
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface SenderHarness {
  pool: ReturnType<typeof testDatabase>['pool'];
  schema: string;
  prefix: string;
  queue: DeliveryQueue;
  outbox: Outbox;
  activity: ActivityLog;
  key: SigningKey;
  attempts: AttemptReport[];
  startWorker(extra?: Partial<DeliveryWorkerOptions>): DeliveryWorker;
  /** Resolves when the row reaches a finished state. */
  waitForState(id: string, states?: string[], timeoutMs?: number): Promise<string>;
  /** Deletes every Redis key under the prefix (a "flush" of this deployment). */
  flushRedis(): Promise<void>;
}

export const FAST_BACKOFF = { baseMs: 50, capMs: 200, jitter: 0.1, retryAfterMinMs: 10 };

export async function senderHarness(
  t: Teardown,
  opts: {
    horizonSeconds?: number;
    retentionSeconds?: number;
    /** Runs before the sender's migrations (an older deployment's tables and rows). */
    before?: (pool: SenderHarness['pool'], schema: string) => Promise<void>;
    /** A `redis-cluster://` URL runs on that cluster (its own, thrown away: no flush). */
    redisUrl?: string;
    shards?: number;
  } = {},
): Promise<SenderHarness> {
  const { pool, schema } = testDatabase(t, 'snd');
  await opts.before?.(pool, schema);
  await migrateSender(pool, schema);
  const prefix = `{${uniqueName('sndq')}}`;
  const redisUrl = opts.redisUrl ?? REDIS_URL;
  const redis = createRedis(redisUrl);
  const queue = new DeliveryQueue({
    connection: redis,
    prefix,
    ...(opts.shards ? { shards: opts.shards } : {}),
  });
  const outbox = new Outbox({
    pool,
    queue,
    schema,
    ...(opts.horizonSeconds ? { horizonSeconds: opts.horizonSeconds } : {}),
    ...(opts.retentionSeconds ? { retentionSeconds: opts.retentionSeconds } : {}),
  });
  const activity = new ActivityLog({ pool, schema, flushEveryMs: 20 });
  const { key } = await generateSigningKey('ed25519');
  const attempts: AttemptReport[] = [];
  const workers: DeliveryWorker[] = [];
  const connections: ReturnType<typeof createRedis>[] = [];
  const flushRedis = async () => {
    for (const pattern of queue.keyPatterns()) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
        cursor = next;
        // One key at a time: keys of different shards are in different Cluster slots.
        for (const k of keys) await redis.del(k);
      } while (cursor !== '0');
    }
  };
  t.teardown(async () => {
    for (const w of workers) await w.close();
    for (const c of connections) c.disconnect();
    await queue.close();
    if (!isClusterUrl(redisUrl)) await flushRedis();
    redis.disconnect();
  });
  return {
    pool,
    schema,
    prefix,
    queue,
    outbox,
    activity,
    key,
    attempts,
    flushRedis,
    startWorker(extra = {}) {
      const connection = createRedis(redisUrl);
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
        onAttempt: (r) => attempts.push(r),
        ...extra,
      });
      workers.push(w);
      return w;
    },
    async waitForState(id, states = ['delivered', 'stopped', 'expired'], timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until) {
        const s = await outbox.state(id);
        if (s && states.includes(s.state)) return s.state;
        await new Promise((r) => setTimeout(r, 25));
      }
      const s = await outbox.state(id);
      throw new Error(`outbox row ${id} still ${s?.state ?? 'missing'}`);
    },
  };
}

/**
 * Verifies one delivery the loopback receiver got, with the receiver-side verifier over the
 * JWKS the seller publishes for `key` (the sender identity is `seller`).
 */
export async function verifyReceived(
  rx: Receiver,
  r: Received,
  key: SigningKey,
  profile: BrandProfile,
): Promise<VerifiedSignature> {
  const jwks = new KeySet([key]).jwks(profile);
  return verifyWebhookSignature(
    {
      method: r.method,
      url: `http://127.0.0.1:${rx.port}${r.url}`,
      headers: r.headers,
      body: r.body,
    },
    {
      profile,
      keys: {
        resolve: async (kid) => {
          const jwk = jwks.keys.find((k) => k.kid === kid);
          return jwk ? { jwk, senderId: 'seller' } : null;
        },
      },
    },
  );
}
