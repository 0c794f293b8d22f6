/**
 * One delivery's trace crosses the wire: NotificationCore's emit, the outbox, the worker's
 * dispatch / attempt / settle (over BullMQ in the real Redis), the signed HTTP attempt over
 * loopback to a real WebhookReceiver (PostgreSQL store), its receive span with the gate /
 * verify / claim / publish stages as events, and the forward to the app, which gets a
 * traceparent naming the receive span. The
 * spans are collected in-process by an InMemorySpanExporter on a provider registered as the
 * API's global (as a library user brings their own).
 */
import t, { type Test } from 'tap';
import type { Pool } from '../../shared/infra/pg.js';
import type { KeyResolver } from '../../shared/signing/verify.js';
import { trace, context, propagation } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { brandProfile } from '../../shared/brand.js';
import { publishedJwk } from '../../shared/signing/keys.js';
import { NotificationCore } from '../../sender/core/notification-core.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import { WebhookReceiver } from '../../receiver/pipeline/receiver.js';
import { ForwardPublisher } from '../../receiver/publish/forward.js';
import { senderHarness, startReceiver } from '../sender/harness.js';
import { listen, post } from '../receiver/support/server.js';
import { envelope, inlineResolver, makeSender, signed } from '../receiver/support/fixtures.js';
import { MemoryReplayStore } from '../receiver/support/fixtures.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
// As startTracing registers it: no context manager, so the spans must hand their contexts on
// explicitly (the emit to the outbox, the dispatch to its attempt, the receiver to its stages).
provider.register({ contextManager: null });
t.teardown(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
});

const profile = brandProfile('svc');

async function buyer(t: Test, keys: KeyResolver, pool: Pool, schema: string) {
  const app = await startReceiver(() => ({ status: 200 }));
  t.teardown(() => app.close());
  const receiver = new WebhookReceiver({
    pool,
    schema: `${schema}_rx`,
    profile,
    protocolVersion: '3.2',
    keys,
    replay: new MemoryReplayStore(),
    publisher: new ForwardPublisher({ url: app.url, brand: 'svc' }),
  });
  await receiver.migrate();
  const { url, server } = await listen(receiver);
  t.teardown(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    await receiver.close();
  });
  return { app, url };
}

function byName(spans: ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name);
}

function parentOf(s: ReadableSpan): string | undefined {
  return s.parentSpanContext?.spanId;
}

/** Waits (up to 2 s) until `n` attempt spans ended: each ends after its row's state is written. */
async function attemptSpans(n: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (byName(exporter.getFinishedSpans(), 'webhook.attempt').length >= n) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('one delivery: emit -> attempt -> receiver stages -> app, one trace', async (t) => {
  exporter.reset();
  const h = await senderHarness(t);
  const keys = {
    async resolve(kid: string) {
      return kid === h.key.kid ? { jwk: publishedJwk(h.key, profile), senderId: 'seller' } : null;
    },
  };
  const { app, url } = await buyer(t, keys, h.pool, h.schema);
  h.startWorker();
  const core = new NotificationCore({
    pool: h.pool,
    schema: h.schema,
    queue: h.queue,
    profile,
    protocolVersion: '3.2',
    allowHosts: ['127.0.0.1'],
  });
  const [id] = await core.taskStatusChanged({
    taskId: 'task-traced',
    taskType: 'create_media_buy',
    status: 'completed',
    initialStatus: 'submitted',
    pushNotificationConfig: { url: `${url}/webhooks`, operation_id: 'op-1' },
  });
  t.equal(await h.waitForState(id!), 'delivered', 'delivered (the receiver answered 2xx)');
  await app.waitFor(1);
  await attemptSpans(1);
  const spans = exporter.getFinishedSpans();
  const one = (name: string) => {
    const list = byName(spans, name);
    t.equal(list.length, 1, `one ${name} span`);
    return list[0]!;
  };
  const emit = one('webhook.emit');
  const attempt = one('webhook.attempt');
  const receive = one('webhook.receive');
  const traceId = emit.spanContext().traceId;
  for (const s of [attempt, receive]) {
    t.equal(s.spanContext().traceId, traceId, `${s.name} in the emit's trace`);
  }
  t.equal(parentOf(emit), undefined, 'the emit is the root');
  t.equal(parentOf(attempt), emit.spanContext().spanId, 'attempt under the emit (via Redis)');
  t.same(
    [byName(spans, 'webhook.outbox').length, byName(spans, 'webhook.dispatch').length],
    [0, 0],
    'one span per process: no outbox span under an emit, no dispatch span',
  );
  t.equal(attempt.attributes['webhook.outbox_id'], id, 'the attempt names its outbox row');
  t.type(attempt.attributes['webhook.settle_ms'], 'number', 'the settle is timed on the attempt');
  t.equal(
    parentOf(receive),
    attempt.spanContext().spanId,
    "the receiver's span has the sender's attempt span as parent (over HTTP)",
  );
  // The stages are timed on the receive span, not spans or events of their own.
  t.equal(receive.events.length, 0, 'no events on webhook.receive');
  for (const stage of ['webhook.gate', 'webhook.verify', 'webhook.claim', 'webhook.publish']) {
    t.type(receive.attributes[`${stage}_ms`], 'number', `${stage} records its duration`);
  }
  t.equal(receive.attributes['webhook.halt_stage'], undefined, 'no stage halted it');
  t.equal(attempt.attributes['http.response.status_code'], 200, 'the attempt records the status');
  t.equal(attempt.attributes['webhook.verdict'], 'delivered', 'and its classification');
  t.equal(attempt.attributes['webhook.state'], 'delivered', 'and its settled state');
  t.equal(receive.attributes['http.response.status_code'], 200);
  const got = app.received[0]!;
  const tp = String(got.headers.traceparent);
  t.equal(
    tp,
    `00-${traceId}-${receive.spanContext().spanId}-01`,
    "the app's traceparent names the receiver's span",
  );
  t.equal(got.headers['x-svc-task-id'], 'task-traced', 'beside the event headers');
});

t.test('a retried delivery: each attempt its own span in the same trace', async (t) => {
  exporter.reset();
  const h = await senderHarness(t);
  const rx = await startReceiver((_r, i) => ({ status: i === 0 ? 503 : 200 }));
  t.teardown(() => rx.close());
  h.startWorker();
  const core = new NotificationCore({
    pool: h.pool,
    schema: h.schema,
    queue: h.queue,
    profile,
    protocolVersion: '3.2',
    allowHosts: ['127.0.0.1'],
  });
  const [id] = await core.taskStatusChanged({
    taskId: 'task-retried',
    taskType: 'create_media_buy',
    status: 'working',
    initialStatus: 'submitted',
    pushNotificationConfig: { url: rx.url, operation_id: 'op-2' },
  });
  t.equal(await h.waitForState(id!), 'delivered');
  await attemptSpans(2);
  const spans = exporter.getFinishedSpans();
  const attempts = byName(spans, 'webhook.attempt');
  t.equal(attempts.length, 2, 'two attempt spans');
  const traceId = byName(spans, 'webhook.emit')[0]!.spanContext().traceId;
  t.same(
    attempts.map((a) => [
      a.spanContext().traceId,
      a.attributes['http.response.status_code'],
      a.attributes['webhook.verdict'],
    ]),
    [
      [traceId, 503, 'retry'],
      [traceId, 200, 'delivered'],
    ],
    'the retry (a row job) keeps the trace; status and classification per attempt',
  );
  t.equal(attempts[0]!.attributes['webhook.reason'], 'http_503');
  const sent = rx.received.map((r) => String(r.headers.traceparent));
  t.same(
    sent,
    attempts.map((a) => `00-${traceId}-${a.spanContext().spanId}-01`),
    'each request carries its own attempt span as traceparent',
  );
  for (const r of rx.received) {
    t.notMatch(String(r.headers['signature-input']), /traceparent/, 'traceparent is not signed');
  }
});

t.test(
  'a direct Outbox.enqueue (no emit): its own outbox span, the attempt under it',
  async (t) => {
    exporter.reset();
    const h = await senderHarness(t);
    const rx = await startReceiver(() => ({ status: 200 }));
    t.teardown(() => rx.close());
    h.startWorker();
    const key = newIdempotencyKey();
    const [id] = await h.outbox.enqueue([
      {
        target: { url: rx.url, auth: { mode: 'rfc9421' }, channel: 'task' },
        payload: { idempotency_key: key, task_id: 't-direct', status: 'completed' },
        idempotencyKey: key,
        notificationType: 'completed',
      },
    ]);
    t.equal(await h.waitForState(id!), 'delivered');
    await attemptSpans(1);
    const spans = exporter.getFinishedSpans();
    const [outbox] = byName(spans, 'webhook.outbox');
    const [attempt] = byName(spans, 'webhook.attempt');
    t.ok(outbox, 'an outbox span');
    t.equal(parentOf(outbox!), undefined, 'the root: no emit and no active span');
    t.equal(parentOf(attempt!), outbox!.spanContext().spanId, 'the attempt under it (via Redis)');
    t.equal(outbox!.attributes['webhook.events'], 1);
  },
);

t.test('a malformed traceparent starts a new trace, never an error', async (t) => {
  exporter.reset();
  const seller = await makeSender('seller-m');
  const app = await startReceiver(() => ({ status: 200 }));
  t.teardown(() => app.close());
  const { testDatabase } = await import('../helpers/db.js');
  const { pool, schema } = testDatabase(t, 'trbad');
  const receiver = new WebhookReceiver({
    pool,
    schema,
    profile,
    protocolVersion: '3.2',
    keys: inlineResolver([seller]),
    replay: new MemoryReplayStore(),
    publisher: new ForwardPublisher({ url: app.url, brand: 'svc' }),
  });
  await receiver.migrate();
  const { url, server } = await listen(receiver);
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const bad = [
    'garbage',
    '00-00000000000000000000000000000000-0000000000000001-01',
    '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
    'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    '00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01',
    `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01-extra`,
    ['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'x'].join(',, '),
  ];
  for (const [i, traceparent] of bad.entries()) {
    const s = signed(`${url}/hooks`, JSON.stringify(envelope()), seller);
    const res = await post(`${url}/hooks`, s.body, {
      ...s.headers,
      traceparent,
      tracestate: 'a=b',
    });
    t.equal(res.status, 200, `accepted with traceparent ${JSON.stringify(traceparent)}`);
    const receive = byName(exporter.getFinishedSpans(), 'webhook.receive')[i]!;
    t.equal(parentOf(receive), undefined, 'its span is a root: a new trace');
    t.notOk(traceparent.includes(receive.spanContext().traceId), 'not the trace id it named');
    const forwarded = String(app.received[i]!.headers.traceparent);
    t.match(
      forwarded,
      new RegExp(`^00-${receive.spanContext().traceId}-`),
      'the app gets the new trace',
    );
  }
  // A delivery a stage refuses: the span says which stage and with what status.
  const unsigned = await post(`${url}/hooks`, JSON.stringify(envelope()), {
    'content-type': 'application/json',
  });
  t.equal(unsigned.status, 401, 'an unsigned request is refused');
  const refused = byName(exporter.getFinishedSpans(), 'webhook.receive').at(-1)!;
  t.equal(refused.attributes['webhook.halt_stage'], 'webhook.verify', 'halted at verify');
  t.equal(refused.attributes['webhook.halt_status'], 401, 'with its status');
  t.equal(refused.attributes['webhook.claim_ms'], undefined, 'no later stage ran');
});
