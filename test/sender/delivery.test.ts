import t from 'tap';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { senderHarness, startReceiver } from './harness.js';

function event(url: string, extra: Partial<OutboundEvent> = {}): OutboundEvent {
  const key = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: {
      idempotency_key: key,
      task_id: 'task_1',
      operation_id: 'op_1',
      task_type: 'create_media_buy',
      status: 'completed',
      timestamp: '2026-01-01T00:00:00.000Z',
      result: { media_buy_id: 'mb_1', note: 'ünïcödé' },
    },
    idempotencyKey: key,
    notificationType: 'completed',
    mediaBuyId: 'mb_1',
    principalId: 'p_1',
    ...extra,
  };
}

function nonceOf(signatureInput: unknown): string {
  const m = /;nonce="([^"]+)"/.exec(String(signatureInput));
  return m?.[1] ?? '';
}

t.test(
  'a receiver failing 3 times then answering 200 sees identical bodies and keys, fresh nonces',
  async (t) => {
    const h = await senderHarness(t);
    const rx = await startReceiver((_r, i) => ({ status: i < 3 ? 503 : 200 }));
    t.teardown(() => rx.close());
    h.startWorker();
    const e = event(rx.url);
    const [id] = await h.outbox.enqueue([e]);
    t.equal(await h.waitForState(id!), 'delivered');
    t.equal(rx.received.length, 4);
    const first = rx.received[0]!;
    t.equal(
      first.body.toString(),
      JSON.stringify(e.payload),
      'body is the compact JSON serialised once',
    );
    for (const r of rx.received) {
      t.ok(r.body.equals(first.body), 'same body bytes');
      t.equal(JSON.parse(r.body.toString()).idempotency_key, e.idempotencyKey, 'same key');
      t.equal(r.headers['content-type'], 'application/json');
      t.match(String(r.headers['content-digest']), /^sha-256=:/);
    }
    const nonces = rx.received.map((r) => nonceOf(r.headers['signature-input']));
    t.equal(new Set(nonces).size, 4, 'every attempt carries a fresh nonce');
    t.same(
      h.attempts.map((a) => [a.attempt, a.state]),
      [
        [1, 'pending'],
        [2, 'pending'],
        [3, 'pending'],
        [4, 'delivered'],
      ],
    );
    await h.activity.flush();
    const log = await h.activity.list({ principalId: 'p_1', mediaBuyId: 'mb_1' });
    t.equal(log.length, 4);
    t.same(
      log.map((r) => r.attempt),
      [4, 3, 2, 1],
      'most recent first',
    );
    t.equal(log[0]!.status, 'success');
    t.equal(log[1]!.status, 'failed');
    t.equal(log[1]!.http_status_code, 503);
    t.equal(log[0]!.url, rx.url);
    t.equal(log[0]!.payload_size_bytes, first.body.length);
    t.equal(log[0]!.error_message, null);
  },
);

t.test('an attempt in flight reads as one pending record, completed in place', async (t) => {
  const h = await senderHarness(t);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const rx = await startReceiver(async () => {
    await held;
    return { status: 200 };
  });
  t.teardown(() => {
    release();
    return rx.close();
  });
  h.startWorker();
  const e = event(rx.url);
  const [id] = await h.outbox.enqueue([e]);
  await rx.waitFor(1);
  const list = () => h.activity.list({ principalId: 'p_1', mediaBuyId: 'mb_1' });
  // The harness flushes every 20 ms: wait (bounded) for the pending record to land.
  let log = await list();
  for (let i = 0; i < 100 && !log.some((r) => r.status === 'pending' && r.attempt === 1); i++) {
    await new Promise((r) => setTimeout(r, 20));
    log = await list();
  }
  t.equal(log.length, 1, 'the in-flight attempt, not also a queued one');
  t.match(log[0], {
    idempotency_key: e.idempotencyKey,
    attempt: 1,
    status: 'pending',
    notification_type: 'completed',
    url: rx.url,
    completed_at: null,
    http_status_code: null,
    response_time_ms: null,
    error_message: null,
    payload_size_bytes: rx.received[0]!.body.length,
  });
  const firedAt = log[0]!.fired_at;
  release();
  t.equal(await h.waitForState(id!), 'delivered');
  await h.activity.flush();
  log = await list();
  t.equal(log.length, 1, 'completed in place');
  t.equal(log[0]!.status, 'success');
  t.equal(log[0]!.http_status_code, 200);
  t.equal(log[0]!.fired_at, firedAt, 'fired_at kept from the start');
  t.ok(log[0]!.completed_at, 'completed_at set');
  const { rows } = await h.pool.query(
    `SELECT count(*)::int AS n FROM ${h.schema}.webhook_activity WHERE outbox_id = $1`,
    [id],
  );
  t.equal(rows[0].n, 1);
});

t.test('a worker made with autorun false takes jobs only once started', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const w = h.startWorker({ autorun: false });
  const [id] = await h.outbox.enqueue([event(rx.url)]);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(rx.received.length, 0, 'nothing sent before start()');
  t.equal((await h.queue.depth()).waiting, 1, 'the job still waits');
  await w.start();
  t.equal(await w.start().then(() => 'same'), 'same', 'start() twice is harmless');
  t.equal(await h.waitForState(id!), 'delivered');
  t.equal(rx.received.length, 1);
});

t.test('409 stops the key; the next event to the same target is still delivered', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver((_r, i) => ({ status: i === 0 ? 409 : 200 }));
  t.teardown(() => rx.close());
  h.startWorker({ concurrency: 1 });
  const [a] = await h.outbox.enqueue([event(rx.url)]);
  t.equal(await h.waitForState(a!), 'stopped');
  const [b] = await h.outbox.enqueue([event(rx.url)]);
  t.equal(await h.waitForState(b!), 'delivered');
  t.equal(rx.received.length, 2);
  t.equal((await h.outbox.state(a!))?.lastError, 'http_409_conflict');
});

t.test('401 with a webhook_* code stops; a bare 401 keeps retrying and is recorded', async (t) => {
  const h = await senderHarness(t);
  const coded = await startReceiver(() => ({
    status: 401,
    headers: { 'www-authenticate': 'Signature error="webhook_signature_key_unknown"' },
  }));
  const bare = await startReceiver((_r, i) => ({ status: i < 3 ? 401 : 200 }));
  t.teardown(() => Promise.all([coded.close(), bare.close()]));
  h.startWorker();
  const [c, b] = await h.outbox.enqueue([
    event(coded.url, { mediaBuyId: 'mb_c' }),
    event(bare.url, { mediaBuyId: 'mb_b' }),
  ]);
  t.equal(await h.waitForState(c!), 'stopped');
  t.equal((await h.outbox.state(c!))?.lastError, 'webhook_signature_key_unknown');
  t.equal(coded.received.length, 1, 'coded 401 is not retried');
  t.equal(await h.waitForState(b!), 'delivered');
  t.equal(bare.received.length, 4, 'bare 401 retried until it succeeded');
  await h.activity.flush();
  const log = await h.activity.list({ principalId: 'p_1', mediaBuyId: 'mb_b' });
  t.same(
    log.map((r) => [r.status, r.http_status_code]),
    [
      ['success', 200],
      ['failed', 401],
      ['failed', 401],
      ['failed', 401],
    ],
  );
});

t.test('other 4xx stop; 429 with Retry-After is retried', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver((r) => {
    const body = JSON.parse(r.body.toString());
    if (body.task_id === 'bad') return { status: 400 };
    const n = rx.received.filter((x) => JSON.parse(x.body.toString()).task_id === 'busy').length;
    return n === 1 ? { status: 429, headers: { 'retry-after': '0' } } : { status: 200 };
  });
  t.teardown(() => rx.close());
  h.startWorker();
  const bad = event(rx.url);
  bad.payload.task_id = 'bad';
  const busy = event(rx.url);
  busy.payload.task_id = 'busy';
  const [x, y] = await h.outbox.enqueue([bad, busy]);
  t.equal(await h.waitForState(x!), 'stopped');
  t.equal(await h.waitForState(y!), 'delivered');
  t.equal((await h.outbox.state(y!))?.attempts, 2);
});

t.test('the retry horizon ends retries', async (t) => {
  const h = await senderHarness(t, { horizonSeconds: 1 });
  const rx = await startReceiver(() => ({ status: 500 }));
  t.teardown(() => rx.close());
  h.startWorker({ backoff: { baseMs: 300, capMs: 300, jitter: 0 } });
  const [id] = await h.outbox.enqueue([event(rx.url)]);
  t.equal(await h.waitForState(id!), 'expired');
  t.ok(
    rx.received.length >= 2 && rx.received.length <= 5,
    `${rx.received.length} attempts within 1 s`,
  );
});

t.test('connection errors are retried and recorded as connection_error', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  const deadUrl = rx.url;
  await rx.close();
  h.startWorker();
  const [id] = await h.outbox.enqueue([event(deadUrl)]);
  await new Promise<void>((resolve) => {
    const check = () => (h.attempts.length >= 2 ? resolve() : setTimeout(check, 20));
    check();
  });
  t.equal((await h.outbox.state(id!))?.state, 'pending', 'still pending: connection errors retry');
  await h.activity.flush();
  const log = await h.activity.list({ principalId: 'p_1', mediaBuyId: 'mb_1' });
  const queued = log.filter((r) => r.status === 'pending');
  t.equal(queued.length, 1, 'the queued next attempt shows as pending');
  t.equal(queued[0]!.completed_at, null);
  t.equal(queued[0]!.http_status_code, null);
  t.ok(queued[0]!.attempt >= 2);
  t.equal(log.at(-1)?.status, 'connection_error');
  t.equal(log.at(-1)?.http_status_code, null);
  t.match(log.at(-1)?.error_message, /^connection_error/);
});

t.test('finished jobs are removed from Redis', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  h.startWorker();
  const ids = await h.outbox.enqueue(Array.from({ length: 20 }, () => event(rx.url)));
  for (const id of ids) await h.waitForState(id);
  const counts = await h.queue.jobCounts();
  t.same(
    Object.values(counts).reduce((a, b) => a + b, 0),
    0,
    'no completed, failed or waiting jobs remain',
  );
});

t.test(
  'enqueue refuses bad keys, bad URLs and reused keys without failing other callers',
  async (t) => {
    const h = await senderHarness(t);
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const bad = event(rx.url);
    bad.idempotencyKey = 'short';
    await t.rejects(h.outbox.enqueue([bad]), { name: 'OutboxError', message: /idempotency key/ });
    await t.rejects(h.outbox.enqueue([event('not a url')]), {
      name: 'OutboxError',
      message: /url/,
    });
    const reused = event(rx.url);
    await h.outbox.enqueue([reused]);
    // Concurrent callers share one INSERT; the one reusing a key fails alone.
    const results = await Promise.allSettled([
      h.outbox.enqueue([event(rx.url)]),
      h.outbox.enqueue([reused]),
      h.outbox.enqueue([event(rx.url), event(rx.url)]),
    ]);
    t.equal(results[0]!.status, 'fulfilled');
    t.match(results[1], {
      status: 'rejected',
      reason: { name: 'OutboxError', message: /already used/ },
    });
    t.equal(results[2]!.status, 'fulfilled');
    if (results[2]!.status === 'fulfilled') t.equal(results[2]!.value.length, 2);
    const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.outbox`);
    t.equal(rows[0].n, 4);
    t.same(await h.outbox.enqueue([]), []);
  },
);
