/**
 * The broker publishers against the real servers this machine runs (NATS JetStream on 4222,
 * RabbitMQ on 5672, Redis on 6379): delivery with the event's metadata, duplicate
 * suppression, a broker that is down (publish fails, so the receiver answers 503; once it is
 * back the same event is published once), and a broker that refuses (a full stream, an
 * unroutable exchange, a Redis that keeps nothing on disk).
 */
import t from 'tap';
import { connect as natsConnect } from '@nats-io/transport-node';
import { DiscardPolicy, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect as amqpConnect } from 'amqplib';
import { Redis } from 'ioredis';
import { openBrokerPublisher } from '../../../receiver/publish/brokers.js';
import type { ReceivedEvent } from '../../../receiver/publish/types.js';
import { uniqueName } from '../../helpers/db.js';
import { startOwnRedis } from '../../helpers/own-redis.js';
import { tcpProxy } from '../../helpers/tcp-proxy.js';

function event(key: string, over: Partial<ReceivedEvent> = {}): ReceivedEvent {
  const body = Buffer.from(
    JSON.stringify({ idempotency_key: key, task_id: 't1', status: 'completed' }),
  );
  return {
    sender: 'seller-a',
    idempotencyKey: key,
    notificationId: null,
    taskId: 't1',
    operationId: null,
    taskType: 'create_media_buy',
    status: 'completed',
    timestamp: '2026-11-27T00:00:00Z',
    format: 'mcp',
    payload: JSON.parse(body.toString()),
    body,
    stale: false,
    reEmission: false,
    terminal: true,
    redelivery: false,
    auth: { mode: 'rfc9421', keyid: 'k1' },
    ...over,
  };
}

const TIMEOUT = 1_500;
/** The trace context the receiver hands on (its publish span's), as a message header. */
const TRACE = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };

t.test('NATS JetStream', async (t) => {
  const nc = await natsConnect({ servers: '127.0.0.1:4222' });
  const jsm = await jetstreamManager(nc);
  const name = uniqueName('T').toUpperCase();
  const prefix = name.toLowerCase();
  t.teardown(async () => {
    for (const s of [name, `${name}_FULL`]) await jsm.streams.delete(s).catch(() => {});
    await nc.close();
  });

  const url = `nats://127.0.0.1:4222?subject=${prefix}.{sender}.{task_type}&stream=${name}`;
  const { publisher, warnings } = await openBrokerPublisher(url, {
    brand: 'svc',
    timeoutMs: TIMEOUT,
  });
  t.teardown(() => publisher.close?.());
  t.same(warnings, [], 'reachable: no warning');

  await publisher.publish(event('key-1', { trace: TRACE }));
  const info = await jsm.streams.info(name);
  t.same(info.config.subjects, [`${prefix}.*.*`], 'the stream it created captures the template');
  const m = await jsm.streams.getMessage(name, { seq: 1 });
  if (!m) throw new Error('no message at seq 1');
  t.equal(m.subject, `${prefix}.seller-a.create_media_buy`, 'subject by sender and task type');
  t.same(Buffer.from(m.data), event('key-1').body, 'the verified body bytes');
  t.equal(m.header.get('x-svc-sender'), 'seller-a');
  t.equal(m.header.get('x-svc-idempotency-key'), 'key-1');
  t.equal(m.header.get('x-svc-task-id'), 't1');
  t.equal(m.header.get('x-svc-status'), 'completed');
  t.equal(m.header.get('x-svc-terminal'), 'true');
  t.equal(m.header.get('Nats-Msg-Id'), 'seller-a/key-1', 'the message id is (sender, key)');
  t.equal(m.header.get('traceparent'), TRACE.traceparent, 'the trace context as a header');

  await publisher.publish(event('key-1', { redelivery: true }));
  t.equal((await jsm.streams.info(name)).state.messages, 1, 'a re-publication is dropped');

  await t.test('a full stream (discard new) refuses, so the receiver answers 503', async (t) => {
    await jsm.streams.add({
      name: `${name}_FULL`,
      subjects: [`${prefix}full.>`],
      storage: StorageType.Memory,
      max_msgs: 1,
      discard: DiscardPolicy.New,
    });
    const full = await openBrokerPublisher(
      `nats://127.0.0.1:4222?subject=${prefix}full.{sender}&stream=${name}_FULL`,
      { brand: 'svc', timeoutMs: TIMEOUT },
    );
    t.teardown(() => full.publisher.close?.());
    await full.publisher.publish(event('f-1'));
    await t.rejects(full.publisher.publish(event('f-2')), /maximum messages/i);
  });

  await t.test(
    'down at start and mid-run: 503 until it is back, then published once',
    async (t) => {
      const proxy = await tcpProxy(4222);
      t.teardown(() => proxy.close());
      await proxy.cut();
      const down = await openBrokerPublisher(
        `nats://127.0.0.1:${proxy.port}?subject=${prefix}.{sender}.{task_type}&stream=${name}`,
        { brand: 'svc', timeoutMs: TIMEOUT },
      );
      t.teardown(() => down.publisher.close?.());
      t.match(down.warnings, [/nats broker is not reachable yet .*answered 503 until it is/]);
      await t.rejects(down.publisher.publish(event('d-1')), 'down: publish fails');
      await proxy.restore();
      await retry(() => down.publisher.publish(event('d-1')));
      await down.publisher.publish(event('d-1'));
      const count = (await jsm.streams.info(name)).state.messages;
      t.equal(count, 2, 'key-1 and d-1, each once');
    },
  );
});

/** The seller's retry: the same publication until it succeeds (bounded). */
async function retry(fn: () => Promise<void>, tries = 40): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= tries) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

t.test('RabbitMQ', async (t) => {
  const conn = await amqpConnect('amqp://guest:guest@127.0.0.1:5672');
  const ch = await conn.createChannel();
  const exchange = uniqueName('svc.t');
  t.teardown(async () => {
    for (const x of [exchange, `${exchange}.empty`]) await ch.deleteExchange(x).catch(() => {});
    await conn.close();
  });
  const url = `amqp://guest:guest@127.0.0.1:5672?exchange=${exchange}`;
  const { publisher, warnings } = await openBrokerPublisher(url, {
    brand: 'svc',
    timeoutMs: TIMEOUT,
  });
  t.teardown(() => publisher.close?.());
  t.same(warnings, []);
  const { queue } = await ch.assertQueue('', { exclusive: true, durable: false });
  await ch.bindQueue(queue, exchange, 'seller-a.#');

  await publisher.publish(event('key-1', { trace: TRACE }));
  const m = await ch.get(queue, { noAck: true });
  if (!m) throw new Error('no message in the bound queue');
  t.equal(m.fields.routingKey, 'seller-a.create_media_buy', 'routing key by sender and task type');
  t.same(m.content, event('key-1').body);
  t.equal(m.properties.deliveryMode, 2, 'persistent');
  t.equal(m.properties.messageId, 'seller-a/key-1');
  t.equal(m.properties.headers?.['x-svc-idempotency-key'], 'key-1');
  t.equal(m.properties.headers?.['x-svc-stale'], 'false');
  t.equal(m.properties.headers?.traceparent, TRACE.traceparent, 'the trace context as a header');

  await t.test('an unroutable message is refused (nobody would consume it)', async (t) => {
    const empty = await openBrokerPublisher(
      `amqp://guest:guest@127.0.0.1:5672?exchange=${exchange}.empty`,
      { brand: 'svc', timeoutMs: TIMEOUT },
    );
    t.teardown(() => empty.publisher.close?.());
    await t.rejects(
      empty.publisher.publish(event('u-1')),
      /returned the message: no queue is bound/,
    );
  });

  await t.test('down: publish fails; back: published once', async (t) => {
    const proxy = await tcpProxy(5672);
    t.teardown(() => proxy.close());
    const via = await openBrokerPublisher(
      `amqp://guest:guest@127.0.0.1:${proxy.port}?exchange=${exchange}`,
      { brand: 'svc', timeoutMs: TIMEOUT },
    );
    t.teardown(() => via.publisher.close?.());
    await proxy.cut();
    await t.rejects(via.publisher.publish(event('d-1')), 'down: publish fails');
    await proxy.restore();
    await retry(() => via.publisher.publish(event('d-1')));
    const got = await ch.get(queue, { noAck: true });
    t.equal(got && got.properties.messageId, 'seller-a/d-1');
    t.equal(await ch.get(queue, { noAck: true }), false, 'and nothing else');
  });
});

t.test('Redis Streams', async (t) => {
  const stream = uniqueName('svc:t');
  const shared = new Redis(6379, '127.0.0.1');
  t.teardown(async () => {
    await shared.del(stream);
    shared.disconnect();
  });

  await t.rejects(
    openBrokerPublisher(`redis://127.0.0.1:6379?stream=${stream}`, {
      brand: 'svc',
      timeoutMs: TIMEOUT,
    }),
    /--publish: the Redis at 127.0.0.1:6379 keeps nothing on disk .* add "volatile=accept"/,
    'a Redis that keeps nothing is refused unless the loss is accepted by name',
  );

  const { publisher, warnings } = await openBrokerPublisher(
    `redis://127.0.0.1:6379?stream=${stream}&volatile=accept`,
    { brand: 'svc', timeoutMs: TIMEOUT },
  );
  t.teardown(() => publisher.close?.());
  t.match(warnings, [/keeps nothing on disk; events in the stream are lost when it restarts/]);
  await publisher.publish(event('key-1'));
  await publisher.publish(event('key-1', { redelivery: true }));
  const entries = await shared.xrangeBuffer(stream, '-', '+');
  t.equal(entries.length, 1, 'a re-publication within the window returns the first entry');
  const fields = new Map<string, Buffer>();
  const flat = entries[0]![1];
  for (let i = 0; i < flat.length; i += 2) fields.set(flat[i]!.toString(), flat[i + 1]!);
  t.same(fields.get('body'), event('key-1').body);
  t.equal(fields.get('x-svc-sender')?.toString(), 'seller-a');
  t.equal(fields.get('x-svc-idempotency-key')?.toString(), 'key-1');
  t.equal(fields.get('x-svc-redelivery')?.toString(), 'false', 'the first publication stands');

  await t.test('a Redis that persists: no warning; down then back: published once', async (t) => {
    const server = await startOwnRedis();
    t.teardown(() => server.stop());
    const port = server.port;
    const proxy = await tcpProxy(port);
    t.teardown(() => proxy.close());
    const own = await openBrokerPublisher(`redis://127.0.0.1:${proxy.port}?stream=ev`, {
      brand: 'svc',
      timeoutMs: TIMEOUT,
    });
    t.teardown(() => own.publisher.close?.());
    t.same(own.warnings, []);
    await proxy.cut();
    await t.rejects(own.publisher.publish(event('d-1')), 'down: publish fails at once');
    await proxy.restore();
    await retry(() => own.publisher.publish(event('d-1')));
    await own.publisher.publish(event('d-1'));
    const direct = new Redis(port, '127.0.0.1');
    t.teardown(() => direct.disconnect());
    t.equal(await direct.xlen('ev'), 1);
  });
});
