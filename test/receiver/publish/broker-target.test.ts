/**
 * `--publish <url>` parsing (receiver/publish/broker-target.ts): each scheme's defaults and
 * members, and every malformed form refused with a message naming the option.
 */
import t from 'tap';
import {
  messageId,
  parseBrokerTarget,
  PublishTargetError,
  renderName,
  safeToken,
} from '../../../receiver/publish/broker-target.js';

t.test('nats: subject and stream by default, from the brand word', async (t) => {
  t.same(parseBrokerTarget('nats://127.0.0.1:4222', 'svc'), {
    kind: 'nats',
    servers: ['127.0.0.1:4222'],
    subject: 'svc.webhooks.{sender}.{task_type}',
    stream: 'SVC_WEBHOOKS',
    duplicateWindowMs: 120_000,
  });
  const n = parseBrokerTarget(
    'nats://u:p%40ss@[::1]?subject=buyer.{sender}&stream=S1&duplicate_window=600',
    'adcp',
  );
  t.match(n, {
    servers: ['[::1]:4222'],
    user: 'u',
    pass: 'p@ss',
    subject: 'buyer.{sender}',
    stream: 'S1',
  });
  t.equal(n.kind === 'nats' && n.duplicateWindowMs, 600_000);
});

t.test('amqp: exchange and routing key, amqplib members kept, ours removed', async (t) => {
  const a = parseBrokerTarget('amqp://guest:guest@127.0.0.1:5672/%2F?heartbeat=10', 'svc');
  t.same(a, {
    kind: 'amqp',
    url: 'amqp://guest:guest@127.0.0.1:5672/%2F?heartbeat=10',
    exchange: 'svc.webhooks',
    routingKey: '{sender}.{task_type}',
  });
  const b = parseBrokerTarget('amqps://h/v?exchange=x.y&routing_key=all.{task_type}', 'svc');
  t.match(b, { url: 'amqps://h/v', exchange: 'x.y', routingKey: 'all.{task_type}' });
});

t.test('redis: one stream by default, durability asked for explicitly', async (t) => {
  t.same(parseBrokerTarget('redis://127.0.0.1:6379/2', 'svc'), {
    kind: 'redis',
    url: 'redis://127.0.0.1:6379/2',
    stream: 'svc:webhooks',
    dedupWindowMs: 120_000,
    volatile: false,
  });
  t.match(
    parseBrokerTarget('rediss://h?stream=ev:{sender}&volatile=accept&dedup_window=5', 'svc'),
    {
      url: 'rediss://h',
      stream: 'ev:{sender}',
      volatile: true,
      dedupWindowMs: 5000,
    },
  );
});

t.test('malformed targets are refused naming --publish and what it takes', async (t) => {
  const bad: [string, RegExp][] = [
    ['not a url', /is not a URL; use nats:\/\/, amqp\(s\):\/\/ or redis\(s\):\/\//],
    ['kafka://broker:9092', /unknown scheme kafka: .* use nats:\/\//],
    ['nats:///x', /names no host/],
    ['nats://h/path', /has no path; name the subject with \?subject=/],
    ['nats://h?subject=a.*.b', /not a valid NATS subject/],
    ['nats://h?subject=a..b', /not a valid NATS subject/],
    ['nats://h?subject=a b', /not a valid NATS subject/],
    ['nats://h?subject=a.x{sender}', /a placeholder must be a whole token/],
    ['nats://h?subject=a.{buyer}', /unknown placeholder \{buyer\}/],
    ['nats://h?subject=', /subject must be 1 to 255 characters/],
    ['nats://h?stream=a.b', /stream "a.b" is not a valid stream name/],
    ['nats://h?duplicate_window=0', /duplicate_window takes a whole number of seconds/],
    ['nats://h?duplicate_window=2m', /duplicate_window takes a whole number of seconds/],
    ['nats://h?subjet=a', /unknown query member "subjet" for nats; known: subject, stream/],
    ['amqp://h?exchange=a b', /exchange "a b" is not a valid exchange name/],
    ['amqp://h?routing_key=a.#', /not a valid routing key/],
    ['amqp://h?exchang=x', /unknown query member "exchang" for amqp/],
    ['redis://h?stream=a b', /not a valid Redis key/],
    ['redis://h?volatile=yes', /volatile takes only "accept", got "yes"/],
    ['redis://h?dedup_window=-1', /dedup_window takes a whole number of seconds/],
  ];
  for (const [input, message] of bad) {
    const err = t.throws(
      () => parseBrokerTarget(input, 'svc'),
      PublishTargetError,
      input,
    ) as unknown;
    t.match((err as Error).message, /^--publish: /, `${input}: names the option`);
    t.match((err as Error).message, message, input);
    t.equal((err as PublishTargetError).code, 'PUBLISH_TARGET_INVALID');
  }
});

t.test('names: placeholders filled with broker-safe values', async (t) => {
  t.equal(
    renderName('b.{sender}.{task_type}', { sender: 'seller a.example', taskType: null }, safeToken),
    'b.seller_a_example.event',
    'unsafe characters replaced, a missing task type named "event"',
  );
  t.equal(safeToken(''), '_');
  t.equal(messageId({ sender: 'a/b', idempotencyKey: 'k 1' }), 'a%2Fb/k%201', 'unambiguous');
});
