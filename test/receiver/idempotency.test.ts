import t from 'tap';
import { migrate } from '../../shared/infra/pg.js';
import { IdempotencyStore, MIN_RETENTION_SECONDS } from '../../receiver/store/index.js';
import { RECEIVER_MIGRATIONS } from '../../receiver/store/index.js';
import { testDatabase } from '../helpers/db.js';

const { pool, schema } = testDatabase(t, 'ridem');

t.before(async () => {
  await migrate(pool, schema, RECEIVER_MIGRATIONS);
});

const store = (over: Partial<ConstructorParameters<typeof IdempotencyStore>[0]> = {}) =>
  new IdempotencyStore({ pool, schema, protocolVersion: '3.2', ...over });

t.test('3.2 claim table: new, in flight, done, changed payload', async (t) => {
  const s = store();
  const first = await s.claim({ sender: 'a', key: 'k-0000000000000001', fingerprint: 'f1' });
  t.equal(first.kind, 'claimed');
  t.same(await s.claim({ sender: 'a', key: 'k-0000000000000001', fingerprint: 'f1' }), {
    kind: 'in_flight',
  });
  t.same(await s.claim({ sender: 'a', key: 'k-0000000000000001', fingerprint: 'f2' }), {
    kind: 'conflict',
  });
  if (first.kind !== 'claimed') return;
  t.equal(await s.complete(first.claim, 'published'), true);
  t.same(await s.claim({ sender: 'a', key: 'k-0000000000000001', fingerprint: 'f1' }), {
    kind: 'done',
    outcome: 'published',
  });
  // The first binding is kept: a changed payload still conflicts after completion.
  t.same(await s.claim({ sender: 'a', key: 'k-0000000000000001', fingerprint: 'f2' }), {
    kind: 'conflict',
  });
  // Keyspaces are per sender.
  const other = await s.claim({ sender: 'b', key: 'k-0000000000000001', fingerprint: 'f2' });
  t.equal(other.kind, 'claimed');
});

t.test('3.1: no payload comparison, first copy wins', async (t) => {
  const s = store({ protocolVersion: '3.1' });
  const c = await s.claim({ sender: 'a31', key: 'k31', fingerprint: 'f1' });
  t.equal(c.kind, 'claimed');
  t.same(await s.claim({ sender: 'a31', key: 'k31', fingerprint: 'f2' }), { kind: 'in_flight' });
  if (c.kind === 'claimed') await s.complete(c.claim, 'published');
  t.same(await s.claim({ sender: 'a31', key: 'k31', fingerprint: 'f2' }), {
    kind: 'done',
    outcome: 'published',
  });
});

t.test('expired lease is taken over; the late owner is fenced out', async (t) => {
  const s = store({ leaseMs: 100 });
  const a = await s.claim({ sender: 'c', key: 'kc', fingerprint: 'f' });
  t.equal(a.kind, 'claimed');
  await new Promise((r) => setTimeout(r, 150));
  // A changed payload never takes over (3.2 keeps the first binding).
  t.same(await s.claim({ sender: 'c', key: 'kc', fingerprint: 'g' }), { kind: 'conflict' });
  const b = await s.claim({ sender: 'c', key: 'kc', fingerprint: 'f' });
  t.equal(b.kind, 'claimed');
  if (a.kind !== 'claimed' || b.kind !== 'claimed') return;
  t.equal(b.claim.takeover, true);
  t.equal(b.claim.generation, a.claim.generation + 1);
  t.equal(await s.renew(a.claim), false, 'late owner cannot renew');
  t.equal(await s.complete(a.claim, 'published'), false, 'late owner cannot mark done');
  t.equal(await s.complete(b.claim, 'published'), true);
});

t.test('release lets the retry claim at once; heartbeat keeps a long claim', async (t) => {
  const s = store({ leaseMs: 300 });
  const a = await s.claim({ sender: 'd', key: 'kd', fingerprint: 'f' });
  if (a.kind !== 'claimed') return t.fail('not claimed');
  await s.release(a.claim);
  const b = await s.claim({ sender: 'd', key: 'kd', fingerprint: 'f' });
  t.equal(b.kind, 'claimed');
  if (b.kind !== 'claimed') return;
  const beat = s.heartbeat(b.claim);
  await new Promise((r) => setTimeout(r, 700));
  t.same(await s.claim({ sender: 'd', key: 'kd', fingerprint: 'f' }), { kind: 'in_flight' });
  beat.stop();
  t.equal(beat.lost(), false);
});

t.test('200 concurrent claims on 20 connections: exactly one owner', async (t) => {
  const s = store();
  const results = await Promise.all(
    Array.from({ length: 200 }, () => s.claim({ sender: 'e', key: 'ke', fingerprint: 'f' })),
  );
  t.equal(results.filter((r) => r.kind === 'claimed').length, 1);
  t.equal(results.filter((r) => r.kind === 'in_flight').length, 199);
});

t.test('per-sender bound answers over_limit for new keys only', async (t) => {
  const s = store({ maxKeysPerSender: 2 });
  for (const k of ['b1', 'b2']) {
    const c = await s.claim({ sender: 'bounded', key: k, fingerprint: 'f' });
    if (c.kind === 'claimed') await s.complete(c.claim, 'published');
  }
  t.same(await s.claim({ sender: 'bounded', key: 'b3', fingerprint: 'f' }), {
    kind: 'over_limit',
  });
  t.same(await s.claim({ sender: 'bounded', key: 'b1', fingerprint: 'f' }), {
    kind: 'done',
    outcome: 'published',
  });
  t.equal((await s.claim({ sender: 'other', key: 'b3', fingerprint: 'f' })).kind, 'claimed');
});

t.test('retention: max(24 h, horizon), from first acceptance; purge deletes expired', async (t) => {
  const s = store({ retryHorizonSeconds: (x) => (x === 'long' ? 172_800 : undefined) });
  t.equal(s.retentionSeconds('short'), MIN_RETENTION_SECONDS);
  t.equal(s.retentionSeconds('long'), 172_800);
  const c = await s.claim({ sender: 'long', key: 'kl', fingerprint: 'f' });
  if (c.kind === 'claimed') await s.complete(c.claim, 'published');
  const { rows } = await pool.query(
    `SELECT extract(epoch FROM expires_at - accepted_at)::int AS secs FROM ${schema}.idempotency_keys
     WHERE sender = 'long'`,
  );
  t.equal(rows[0].secs, 172_800);
  await pool.query(
    `UPDATE ${schema}.idempotency_keys SET expires_at = now() - interval '1 second' WHERE sender = 'long'`,
  );
  t.equal(await s.purgeExpired(), 1);
  t.equal((await s.claim({ sender: 'long', key: 'kl', fingerprint: 'g' })).kind, 'claimed');
});
