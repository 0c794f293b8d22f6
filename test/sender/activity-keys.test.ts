import t from 'tap';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { brandProfile } from '../../shared/brand.js';
import type { Pool } from '../../shared/infra/pg.js';
import { generateSigningKey } from '../../shared/signing/keys.js';
import {
  ActivityLog,
  INTERRUPTED_ATTEMPT,
  recordedUrl,
  type AttemptRecord,
  type AttemptStart,
} from '../../sender/activity/activity-log.js';
import { KeySet, KeySetError, writeNewKey } from '../../sender/keys/key-set.js';
import type { brandJson } from '../../sender/keys/router.js';
import { keysRouter } from '../../sender/keys/router.js';
import { SenderMetrics } from '../../sender/metrics.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { migrateSender } from '../../sender/schema.js';
import { testDatabase } from '../helpers/db.js';
import { attemptRecord as record } from './fixtures/attempt-record.js';
import { senderHarness, startReceiver, verifyReceived } from './harness.js';

/** Counts the statements a pool runs. */
function counting(pool: Pool): { pool: Pool; inserts: () => number } {
  let n = 0;
  const proxy = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === 'query') {
        return (...args: unknown[]) => {
          if (String(args[0]).includes('INSERT INTO')) n++;
          return (target.query as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
  return { pool: proxy, inserts: () => n };
}

t.test('webhook_activity: batched writes, every field, newest first, limits', async (t) => {
  const { pool, schema } = testDatabase(t, 'act');
  await migrateSender(pool, schema);
  const c = counting(pool);
  const log = new ActivityLog({ pool: c.pool, schema, flushEveryMs: 60_000, maxBatch: 1000 });
  for (let i = 1; i <= 120; i++) log.add(record(i));
  log.add(record(200, { mediaBuyId: 'mb_other' }));
  log.add(
    record(121, {
      status: 'timeout',
      httpStatusCode: null,
      responseTimeMs: null,
      completedAt: null,
      errorMessage: 'x'.repeat(800),
      subscriberId: 'sub_9',
      notificationId: 'imp_1',
      sequenceNumber: null,
    }),
  );
  await log.flush();
  t.equal(c.inserts(), 1, '122 records, one INSERT');
  const rows = await log.list({ principalId: 'p_1', mediaBuyId: 'mb_1' });
  t.equal(rows.length, 50, 'default limit 50');
  const first = rows[0]!;
  t.same(Object.keys(first).sort(), [
    'attempt',
    'completed_at',
    'error_message',
    'fired_at',
    'http_status_code',
    'idempotency_key',
    'notification_id',
    'notification_type',
    'payload_size_bytes',
    'response_time_ms',
    'status',
    'subscriber_id',
    'url',
  ]);
  t.equal(first.status, 'timeout');
  t.equal(first.http_status_code, null, 'explicit null');
  t.equal(first.response_time_ms, null);
  t.equal(first.completed_at, null);
  t.equal(first.error_message?.length, 500, 'error_message capped at 500');
  t.equal(first.url, 'https://buyer.example/hook', 'query and fragment stripped');
  t.equal(rows[1]!.sequence_number, 120, 'most recent first');
  t.equal(rows[1]!.error_message, null);
  t.equal((await log.list({ principalId: 'p_1', mediaBuyId: 'mb_1', limit: 200 })).length, 121);
  t.equal((await log.list({ principalId: 'p_1', mediaBuyId: 'mb_1', limit: 1 })).length, 1);
  t.same(await log.list({ principalId: 'p_2', mediaBuyId: 'mb_1' }), [], 'scoped to the principal');
  for (const bad of [0, 201, 1.5, -1, Number.NaN]) {
    await t.rejects(log.list({ principalId: 'p_1', mediaBuyId: 'mb_1', limit: bad }), RangeError);
  }
  t.equal(recordedUrl('not a url?x=1'), 'not a url');
  t.equal(recordedUrl('https://u:p@h.example/a?b#c'), 'https://h.example/a');
});

function started(r: AttemptRecord): AttemptStart {
  const {
    status: _s,
    completedAt: _c,
    httpStatusCode: _h,
    responseTimeMs: _r,
    errorMessage: _e,
    ...rest
  } = r;
  return rest;
}

t.test('webhook_activity: pending when an attempt starts, completed in place', async (t) => {
  const { pool, schema } = testDatabase(t, 'actp');
  await migrateSender(pool, schema);
  const c = counting(pool);
  const log = new ActivityLog({ pool: c.pool, schema, flushEveryMs: 60_000 });
  const list = () => log.list({ principalId: 'p_1', mediaBuyId: 'mb_1' });

  // An attempt still running at a flush is written pending, every required field set.
  const a1 = record(1, { outboxId: '10', attempt: 1 });
  log.start(started(a1));
  await log.flush();
  t.equal(c.inserts(), 1, 'one statement per flush');
  t.same(await list(), [
    {
      idempotency_key: a1.idempotencyKey,
      fired_at: a1.firedAt.toISOString(),
      completed_at: null,
      notification_type: 'scheduled',
      sequence_number: 1,
      attempt: 1,
      status: 'pending',
      http_status_code: null,
      response_time_ms: null,
      payload_size_bytes: 321,
      url: 'https://buyer.example/hook',
      error_message: null,
    },
  ]);

  // Its outcome completes the same row; a stale start arriving later changes nothing.
  log.add({ ...a1, status: 'failed', httpStatusCode: 503, errorMessage: 'http_503' });
  await log.flush();
  log.start(started(a1));
  await log.flush();
  let rows = await list();
  t.equal(rows.length, 1, 'still one record for the attempt');
  t.match(rows[0], {
    status: 'failed',
    http_status_code: 503,
    response_time_ms: 12,
    error_message: 'http_503',
    completed_at: a1.completedAt!.toISOString(),
  });

  // A start and its outcome in the same flush: one row, written once, completed.
  const b1 = record(2, { outboxId: '11', attempt: 1 });
  log.start(started(b1));
  log.add(b1);
  await log.flush();
  rows = await list();
  t.equal(rows.length, 2);
  t.match(rows[0], { idempotency_key: b1.idempotencyKey, status: 'success', attempt: 1 });

  // A worker died mid-attempt: its pending record is closed when the next attempt starts.
  const d1 = record(3, { outboxId: '12', attempt: 1 });
  const d2 = record(4, { outboxId: '12', attempt: 2, idempotencyKey: d1.idempotencyKey });
  log.start(started(d1));
  await log.flush();
  log.start(started(d2));
  await log.flush();
  rows = (await list()).filter((r) => r.idempotency_key === d1.idempotencyKey);
  t.same(
    rows.map((r) => [r.attempt, r.status, r.error_message, r.completed_at]),
    [
      [2, 'pending', null, null],
      [1, 'timeout', INTERRUPTED_ATTEMPT, d2.firedAt.toISOString()],
    ],
  );

  // The same attempt finishing and the next one starting in one flush (a fast retry).
  const e1 = record(5, { outboxId: '13', attempt: 1 });
  const e2 = record(6, { outboxId: '13', attempt: 2, idempotencyKey: e1.idempotencyKey });
  log.start(started(e1));
  await log.flush();
  log.add({ ...e1, status: 'failed', httpStatusCode: 500, errorMessage: 'http_500' });
  log.start(started(e2));
  await log.flush();
  rows = (await list()).filter((r) => r.idempotency_key === e1.idempotencyKey);
  t.same(
    rows.map((r) => [r.attempt, r.status, r.http_status_code]),
    [
      [2, 'pending', null],
      [1, 'failed', 500],
    ],
    'the real outcome, not an interruption',
  );
  t.equal(c.inserts(), 8, 'one statement per flush throughout (8 flushes)');
  await log.close();
});

t.test('key set: directory, rotation, errors; JWKS and brand.json served', async (t) => {
  const profile = brandProfile('svc');
  const dir = await mkdtemp(join(tmpdir(), 'svc-ks-'));
  const a = await writeNewKey(dir, 'ed25519');
  await new Promise((r) => setTimeout(r, 20));
  const b = await writeNewKey(dir, 'ecdsa-p256-sha256');
  await new Promise((r) => setTimeout(r, 20));
  const c = await writeNewKey(dir, 'ed25519');
  const set = await KeySet.fromDirectory(dir);
  t.equal(set.keys.length, 3);
  t.equal(set.signingKey().kid, c.kid, 'newest Ed25519 key signs');
  t.equal(
    (await KeySet.fromDirectory(dir, { preferAlg: 'ecdsa-p256-sha256' })).signingKey().kid,
    b.kid,
  );
  t.equal((await KeySet.fromDirectory(dir, { activeKid: a.kid })).signingKey().kid, a.kid);
  await t.rejects(KeySet.fromDirectory(dir, { activeKid: 'nope' }), KeySetError);
  await t.rejects(KeySet.fromDirectory(join(dir, 'missing')), KeySetError);
  t.throws(() => new KeySet([]), KeySetError);
  const k = set.keys[0]!;
  t.throws(() => new KeySet([k, k]), KeySetError, 'duplicate kid');
  const bad = await mkdtemp(join(tmpdir(), 'svc-ks-bad-'));
  await writeFile(join(bad, 'x.json'), '{not json');
  await t.rejects(KeySet.fromDirectory(bad), { name: 'KeySetError', message: /x.json/ });
  const pub = await mkdtemp(join(tmpdir(), 'svc-ks-pub-'));
  await writeFile(join(pub, 'p.json'), JSON.stringify(set.jwks(profile).keys[0]));
  await t.rejects(KeySet.fromDirectory(pub), { name: 'KeySetError', message: /private part/ });

  const app = new Koa();
  const router = keysRouter({
    keys: set,
    profile,
    agents: [{ type: 'sales', url: 'https://seller.example/mcp', id: 'seller_sales' }],
  });
  app.use(router.routes());
  const server = app.listen(0, '127.0.0.1');
  t.teardown(() => server.close());
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const jwksRes = await fetch(`${base}/.well-known/jwks.json`);
  t.equal(jwksRes.headers.get('cache-control'), 'public, max-age=3600');
  const jwks = (await jwksRes.json()) as { keys: Record<string, unknown>[] };
  t.same(jwks.keys.map((j) => j.kid).sort(), [a.kid, b.kid, c.kid].sort());
  for (const j of jwks.keys) {
    t.equal(j.svc_use, 'request-signing');
    t.equal(j.use, 'sig');
    t.same(j.key_ops, ['verify']);
    t.notOk('d' in j);
  }
  const brand = (await (await fetch(`${base}/.well-known/brand.json`)).json()) as ReturnType<
    typeof brandJson
  >;
  t.equal(brand.agents[0]!.jwks_uri, 'https://seller.example/.well-known/jwks.json');
  t.equal(brand.agents[0]!.id, 'seller_sales');
});

function event(url: string): OutboundEvent {
  const key = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: { idempotency_key: key, task_id: 't', status: 'completed' },
    idempotencyKey: key,
    notificationType: 'completed',
  };
}

t.test('ES256 and the adcp brand sign deliveries that verify; metrics count them', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver((_r, i) => ({ status: i === 0 ? 500 : 200 }));
  t.teardown(() => rx.close());
  const profile = brandProfile('adcp');
  const { key } = await generateSigningKey('ecdsa-p256-sha256');
  const metrics = new SenderMetrics();
  metrics.watchQueue(h.queue);
  h.startWorker({ signer: { key, profile }, metrics });
  const [id] = await h.outbox.enqueue([event(rx.url)]);
  t.equal(await h.waitForState(id!), 'delivered');
  const jwks = new KeySet([key]).jwks(profile);
  t.equal((jwks.keys[0] as Record<string, unknown>).adcp_use, 'request-signing');

  // One assertion per property over every delivery (at-least-once: their number may vary).
  t.ok(rx.received.length >= 1);
  t.same(
    rx.received
      .map((r) => String(r.headers['signature-input']))
      .filter((s) => !/alg="ecdsa-p256-sha256";tag="adcp\/webhook-signing\/v1"/.test(s)),
    [],
  );
  const algs: unknown[] = [];
  for (const r of rx.received) algs.push((await verifyReceived(rx, r, key, profile)).alg);
  t.same([...new Set(algs)], ['ecdsa-p256-sha256']);
  const text = await metrics.registry.metrics();
  t.match(text, /webhook_deliveries_total\{outcome="delivered"\} 1/);
  t.match(text, /webhook_attempts_total\{result="failed"\} 1/);
  t.match(text, /webhook_attempts_total\{result="success"\} 1/);
  t.match(text, /webhook_retries_total 1/);
  t.match(text, /webhook_attempt_duration_seconds_count 2/);
  t.match(text, /webhook_queue_depth\{shard="0",state="waiting"\} 0/);
});

t.test('a 429 pauses that origin alone', async (t) => {
  const h = await senderHarness(t);
  let throttled = 0;
  const a = await startReceiver(() =>
    throttled++ === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 },
  );
  const b = await startReceiver();
  t.teardown(() => Promise.all([a.close(), b.close()]));
  h.startWorker({ concurrency: 1, backoff: { baseMs: 50, capMs: 100, retryAfterMinMs: 10 } });
  const [first] = await h.outbox.enqueue([event(a.url)]);
  await a.waitFor(1);
  const more = await h.outbox.enqueue([event(a.url), event(a.url)]);
  const others = await h.outbox.enqueue(Array.from({ length: 5 }, () => event(b.url)));
  for (const id of others) t.equal(await h.waitForState(id), 'delivered');
  t.equal(a.received.length, 1, 'the throttled origin got nothing more while paused');
  for (const id of [first!, ...more]) t.equal(await h.waitForState(id), 'delivered');
  t.equal(a.received.length, 4);
});
