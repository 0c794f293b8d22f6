import t from 'tap';
import fc from 'fast-check';
import { backoffDelay, nextDelay } from '../../sender/delivery/backoff.js';
import { classify, parseRetryAfter } from '../../sender/delivery/classify.js';
import { OriginLimiter } from '../../sender/delivery/origin-limiter.js';
import { Semaphore } from '../../sender/delivery/semaphore.js';
import { IDEMPOTENCY_KEY_PATTERN, keyPrefix, newIdempotencyKey } from '../../sender/outbox/keys.js';

t.test('classification follows supplement 4.1', async (t) => {
  const r = (status: number, extra = {}) => classify({ kind: 'response', status, ...extra });
  for (const s of [200, 201, 202, 204, 299]) t.same(r(s), { action: 'delivered' }, `${s}`);
  t.same(r(409), { action: 'stop', reason: 'http_409_conflict' });
  t.same(r(401, { wwwAuthenticate: 'Signature error="webhook_signature_replayed"' }), {
    action: 'stop',
    reason: 'webhook_signature_replayed',
  });
  t.same(r(401, { wwwAuthenticate: 'Signature error="not_a_code"' }), {
    action: 'retry',
    reason: 'http_401',
  });
  t.same(r(401), { action: 'retry', reason: 'http_401' });
  t.same(r(401, { wwwAuthenticate: 'Bearer realm="x"' }), { action: 'retry', reason: 'http_401' });
  for (const s of [429, 500, 502, 503, 504, 599, 408])
    t.equal(r(s).action, 'retry', `${s} retries`);
  for (const s of [400, 403, 404, 405, 410, 413, 415, 422])
    t.equal(r(s).action, 'stop', `${s} stops`);
  t.same(r(503, { retryAfter: '7' }), { action: 'retry', reason: 'http_503', retryAfterMs: 7000 });
  t.same(
    r(503, { retryAfter: 'soon' }),
    { action: 'retry', reason: 'http_503' },
    'unreadable Retry-After ignored',
  );
  t.same(classify({ kind: 'error', failure: 'timeout', detail: 'x' }), {
    action: 'retry',
    reason: 'timeout',
  });
  t.same(classify({ kind: 'error', failure: 'connection_error', detail: 'x' }), {
    action: 'retry',
    reason: 'connection_error',
  });
  t.same(classify({ kind: 'error', failure: 'target_refused', detail: 'x' }), {
    action: 'stop',
    reason: 'target_refused',
  });
});

t.test('Retry-After: seconds or HTTP date', async (t) => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  t.equal(parseRetryAfter('120', now), 120_000);
  t.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now), 30_000);
  t.equal(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now), 0, 'a past date means now');
  t.equal(parseRetryAfter(undefined, now), null);
  t.equal(parseRetryAfter('-1', now), null);
  t.equal(parseRetryAfter('1.5', now), null);
});

t.test('back-off: exponential, jittered, capped; Retry-After bounded', async (t) => {
  const opts = { baseMs: 1000, capMs: 60_000, jitter: 0.25 };
  t.equal(
    backoffDelay(1, opts, () => 0.5),
    1000,
    'first retry within seconds',
  );
  t.equal(
    backoffDelay(2, opts, () => 0.5),
    2000,
  );
  t.equal(
    backoffDelay(30, opts, () => 0.5),
    60_000,
    'capped',
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 1000 }),
      fc.double({ min: 0, max: 0.9999, noNaN: true }),
      (n, r) => {
        const d = backoffDelay(n, opts, () => r);
        const raw = Math.min(60_000, 1000 * 2 ** Math.min(n - 1, 40));
        return d >= raw * 0.75 - 1 && d <= raw * 1.25 + 1;
      },
    ),
  );
  const bounds = { ...opts, retryAfterMinMs: 1000, retryAfterMaxMs: 3_600_000 };
  t.equal(
    nextDelay(1, 10_000, bounds, () => 0.5),
    10_000,
    'Retry-After longer than back-off wins',
  );
  t.equal(
    nextDelay(1, 0, bounds, () => 0.5),
    1000,
    'Retry-After 0 still waits the minimum',
  );
  t.equal(
    nextDelay(1, 99 * 3_600_000, bounds, () => 0.5),
    3_600_000,
    'absurd Retry-After is capped',
  );
  t.equal(
    nextDelay(20, 1000, bounds, () => 0.5),
    60_000,
    'never shorter than the back-off',
  );
});

t.test('idempotency keys: CSPRNG, pattern, unique', async (t) => {
  const keys = new Set(Array.from({ length: 2000 }, () => newIdempotencyKey()));
  t.equal(keys.size, 2000);
  for (const k of [...keys].slice(0, 50)) t.match(k, IDEMPOTENCY_KEY_PATTERN);
  t.equal(keyPrefix('whk_0123456789abcdef'), 'whk_01234567');
});

t.test('origin limiter: per-origin slots and pauses', async (t) => {
  const l = new OriginLimiter(2, () => 0);
  const a1 = l.tryAcquire('https://a', 0);
  const a2 = l.tryAcquire('https://a', 0);
  const a3 = l.tryAcquire('https://a', 0);
  const b1 = l.tryAcquire('https://b', 0);
  t.ok(a1.ok && a2.ok && b1.ok);
  t.notOk(a3.ok, 'third slot of a refused');
  if (a1.ok) {
    a1.release();
    a1.release(); // twice is harmless
  }
  t.equal(l.inFlight('https://a'), 1);
  t.ok(l.tryAcquire('https://a', 0).ok, 'slot back after release');
  l.pause('https://b', 1000, 0);
  const paused = l.tryAcquire('https://b', 500);
  t.same(paused, { ok: false, waitMs: 500 });
  t.ok(l.tryAcquire('https://c', 500).ok, 'other origins unaffected');
  t.ok(l.tryAcquire('https://b', 1001).ok, 'pause ends');
});

t.test('semaphore: waits in order', async (t) => {
  const s = new Semaphore(1);
  const order: number[] = [];
  await s.acquire();
  const p1 = s.acquire().then(() => order.push(1));
  const p2 = s.acquire().then(() => order.push(2));
  s.release();
  await p1;
  s.release();
  await p2;
  s.release();
  t.same(order, [1, 2]);
});
