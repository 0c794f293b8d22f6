/**
 * Broker targets for `npm run bench -- receiver` (the `nats`, `amqp` and `redis-stream`
 * modes): each made durable as a buyer would run it, so the figures include the broker's
 * own durability (JetStream file storage, a durable RabbitMQ queue with confirms, a Redis with
 * an append-only file), and removed afterwards.
 */
import { connect as natsConnect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as amqpConnect } from 'amqplib';
import { startOwnRedis } from '../test/helpers/own-redis.js';

export const BROKER_MODES = ['nats', 'amqp', 'redis-stream'] as const;
export type BrokerMode = (typeof BROKER_MODES)[number];

export interface BrokerTargets {
  /** The `--publish` URL of a mode. */
  url(mode: BrokerMode): string;
  /** How many events the broker holds for this run. */
  count(mode: BrokerMode): Promise<number>;
  close(): Promise<void>;
}

/** Sets up the brokers the given modes need. */
export async function brokerTargets(modes: string[], tag: string): Promise<BrokerTargets> {
  const stream = `BENCH_${tag}`.toUpperCase();
  const subject = `bench_${tag}`;
  const exchange = `bench.${tag}`;
  const queue = `bench.${tag}`;
  const cleanups: (() => Promise<void> | void)[] = [];
  const counts: Partial<Record<BrokerMode, () => Promise<number>>> = {};
  const urls: Partial<Record<BrokerMode, string>> = {};

  if (modes.includes('nats')) {
    const nc = await natsConnect({ servers: '127.0.0.1:4222' });
    const jsm = await jetstreamManager(nc);
    urls.nats = `nats://127.0.0.1:4222?subject=${subject}.{sender}.{task_type}&stream=${stream}`;
    counts.nats = async () => (await jsm.streams.info(stream)).state.messages;
    cleanups.push(async () => {
      await jsm.streams.delete(stream).catch(() => {});
      await nc.close();
    });
  }
  if (modes.includes('amqp')) {
    const conn = await amqpConnect('amqp://guest:guest@127.0.0.1:5672');
    const ch = await conn.createChannel();
    await ch.assertExchange(exchange, 'topic', { durable: true });
    await ch.assertQueue(queue, { durable: true });
    await ch.bindQueue(queue, exchange, '#');
    urls.amqp = `amqp://guest:guest@127.0.0.1:5672?exchange=${exchange}`;
    counts.amqp = async () => (await ch.checkQueue(queue)).messageCount;
    cleanups.push(async () => {
      await ch.deleteQueue(queue).catch(() => {});
      await ch.deleteExchange(exchange).catch(() => {});
      await conn.close();
    });
  }
  if (modes.includes('redis-stream')) {
    const r = await startOwnRedis();
    urls['redis-stream'] = `redis://127.0.0.1:${r.port}?stream=bench:events`;
    counts['redis-stream'] = () => r.redis.xlen('bench:events');
    cleanups.push(() => r.stop());
  }
  return {
    url: (mode) => {
      const u = urls[mode];
      if (!u) throw new Error(`no broker set up for ${mode}`);
      return u;
    },
    count: (mode) => (counts[mode] as () => Promise<number>)(),
    close: async () => {
      for (const c of cleanups.reverse()) await c();
    },
  };
}
