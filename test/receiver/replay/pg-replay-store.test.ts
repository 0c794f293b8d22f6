import t from 'tap';
import { PgReplayStore } from '../../../receiver/replay/pg-replay-store.js';
import { testDatabase } from '../../helpers/db.js';

type Opts = ConstructorParameters<typeof PgReplayStore>[1];

async function store(t: { teardown(fn: () => unknown): void }, opts: Opts = {}) {
  const { pool, schema } = testDatabase(t, 'replay');
  const s = new PgReplayStore(pool, { schema, ...opts });
  await s.migrate();
  t.teardown(() => s.stop());
  return { s, pool, schema };
}

function clock(start = Date.parse('2026-04-18T12:00:00Z')) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

t.test('insert, seen and replay', async (t) => {
  const { s } = await store(t);
  t.equal(await s.seen('k1', 'n1'), false);
  t.equal(await s.insert('k1', 'n1', 360), 'inserted');
  t.equal(await s.seen('k1', 'n1'), true);
  t.equal(await s.insert('k1', 'n1', 360), 'replayed');
  t.equal(await s.seen('k2', 'n1'), false, 'keyed by keyid too');
  t.equal(await s.insert('k2', 'n1', 360), 'inserted');
  t.equal(await s.liveCount('k1'), 1);
});

t.test('migrations are idempotent and live in the given schema', async (t) => {
  const { s, pool, schema } = await store(t);
  await s.migrate();
  const { rows } = await pool.query(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`,
    [schema],
  );
  t.same(
    rows.map((r) => r.table_name),
    ['replay_counts', 'replay_nonces', 'schema_migrations'],
  );
});

t.test('concurrent inserts of one nonce: exactly one inserted', async (t) => {
  const { s } = await store(t);
  for (let round = 0; round < 5; round++) {
    const results = await Promise.all(
      Array.from({ length: 40 }, () => s.insert('kc', `nonce-${round}`, 300)),
    );
    t.equal(results.filter((r) => r === 'inserted').length, 1, `round ${round}`);
    t.equal(results.filter((r) => r === 'replayed').length, 39);
  }
  t.equal(await s.liveCount('kc'), 5);
});

t.test('TTL expiry: expired entries are ignored, re-insertable, then purged', async (t) => {
  const c = clock();
  const { s, pool, schema } = await store(t, { clock: c.now, minTtlSeconds: 60 });
  t.equal(await s.insert('kt', 'a', 10), 'inserted', 'TTL raised to the 60 s floor');
  t.equal(await s.insert('kt', 'b', 600), 'inserted');
  c.advance(59_000);
  t.equal(await s.seen('kt', 'a'), true, 'floor applied');
  c.advance(2_000);
  t.equal(await s.seen('kt', 'a'), false, 'expired');
  t.equal(await s.seen('kt', 'b'), true);
  t.equal(await s.insert('kt', 'a', 60), 'inserted', 'expired nonce may be used again');
  t.equal(await s.insert('kt', 'a', 60), 'replayed');
  c.advance(61_000);
  t.equal(await s.purgeExpired(), 1, 'a purged');
  t.equal(await s.seen('kt', 'b'), true, 'live entries survive the purge');
  c.advance(600_000);
  t.equal(await s.purgeExpired(), 1);
  const { rows } = await pool.query(
    `SELECT coalesce(sum(n), 0)::int AS n FROM ${schema}.replay_counts`,
  );
  t.equal(rows[0].n, 0, 'counters follow the purge');
});

t.test('TTL bounds: floor 360 s by default, ceiling one hour', async (t) => {
  const { s, pool, schema } = await store(t);
  await s.insert('kb', 'short', 1);
  await s.insert('kb', 'long', 999_999);
  await s.insert('kb', 'nan', Number.NaN);
  const { rows } = await pool.query(
    `SELECT nonce, round(extract(epoch FROM expires_at - now()))::int AS ttl
     FROM ${schema}.replay_nonces ORDER BY nonce`,
  );
  t.same(
    rows.map((r) => [r.nonce, r.ttl]),
    [
      ['long', 3600],
      ['nan', 360],
      ['short', 360],
    ],
  );
});

t.test(
  'per-keyid cap: atCap, cap at insert, replay precedence, other keyids unaffected',
  async (t) => {
    const { s } = await store(t, { perKeyidCap: 5, atCapCacheMs: 0 });
    for (let i = 0; i < 5; i++) t.equal(await s.insert('kcap', `n${i}`, 300), 'inserted');
    t.equal(await s.atCap('kcap'), true);
    t.equal(await s.atCap('other'), false);
    t.equal(await s.insert('kcap', 'n5', 300), 'cap');
    t.equal(await s.insert('kcap', 'n0', 300), 'replayed', 'a live duplicate reads as replay');
    t.equal(await s.seen('kcap', 'n5'), false, 'nothing stored over the cap');
    t.equal(await s.insert('other', 'n5', 300), 'inserted');
  },
);

t.test('cap frees up as entries expire', async (t) => {
  const c = clock();
  const { s } = await store(t, {
    perKeyidCap: 3,
    clock: c.now,
    minTtlSeconds: 60,
    atCapCacheMs: 0,
  });
  for (let i = 0; i < 3; i++) await s.insert('ke', `n${i}`, 60);
  t.equal(await s.atCap('ke'), true);
  c.advance(61_000);
  t.equal(await s.atCap('ke'), false, 'atCap purges expired rows before answering');
  t.equal(await s.insert('ke', 'n9', 60), 'inserted');
});

t.test('aggregate cap covers all keyids', async (t) => {
  const { s } = await store(t, { perKeyidCap: 100, aggregateCap: 4, atCapCacheMs: 0 });
  for (let i = 0; i < 4; i++) t.equal(await s.insert(`ka${i}`, 'n', 300), 'inserted');
  t.equal(await s.atCap('ka9'), true);
  t.equal(await s.insert('ka9', 'n', 300), 'cap');
});

t.test('concurrent inserts at the cap overshoot by less than the concurrency', async (t) => {
  const { s } = await store(t, { perKeyidCap: 50, atCapCacheMs: 0 });
  const results = await Promise.all(
    Array.from({ length: 120 }, (_, i) => s.insert('kr', `n${i}`, 300)),
  );
  const inserted = results.filter((r) => r === 'inserted').length;
  t.ok(inserted >= 50, `at least the cap admitted (${inserted})`);
  t.ok(inserted < 50 + 20, 'overshoot bounded by the pool size');
  t.equal(results.filter((r) => r === 'cap').length, 120 - inserted);
  t.equal(await s.liveCount('kr'), inserted);
});

t.test('harness: fill the cap cheaply (vector 018) and clear it', async (t) => {
  const { s } = await store(t);
  t.equal(await s.atCap('test-ed25519-webhook-2026'), false);
  await s.harnessFillCap('test-ed25519-webhook-2026');
  t.equal(await s.atCap('test-ed25519-webhook-2026'), true, 'atCap cache invalidated');
  t.equal(await s.insert('test-ed25519-webhook-2026', 'x', 300), 'cap');
  t.equal(await s.atCap('another'), false);
  await s.purgeExpired();
  t.equal(await s.atCap('test-ed25519-webhook-2026'), true, 'purge leaves the harness row');
  await s.harnessClearCap('test-ed25519-webhook-2026');
  t.equal(await s.atCap('test-ed25519-webhook-2026'), false);
  await s.harnessInstallEntries([{ keyid: 'k', nonce: 'REPLAYEDwebhook16byteA' }]);
  t.equal(await s.seen('k', 'REPLAYEDwebhook16byteA'), true);
});

t.test('recount rebuilds counters from rows', async (t) => {
  const { s, pool, schema } = await store(t, { perKeyidCap: 3, atCapCacheMs: 0 });
  for (let i = 0; i < 3; i++) await s.insert('kx', `n${i}`, 300);
  await pool.query(`UPDATE ${schema}.replay_counts SET n = 0`);
  t.equal(await s.atCap('kx'), false, 'counters wiped by hand');
  await s.recount();
  t.equal(await s.atCap('kx'), true);
});

t.test('periodic purge runs on a timer and stops', async (t) => {
  const c = clock();
  const { s, pool, schema } = await store(t, { clock: c.now, minTtlSeconds: 1 });
  const rowsLeft = async () =>
    (await pool.query(`SELECT count(*)::int AS n FROM ${schema}.replay_nonces`)).rows[0].n;
  await s.insert('kp', 'a', 1);
  c.advance(5_000);
  s.startPurging(20);
  s.startPurging(20); // idempotent
  for (let i = 0; i < 200 && (await rowsLeft()) > 0; i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  t.equal(await rowsLeft(), 0, 'expired row removed by the timer');
  await s.stop();
});

t.test('concurrent purgers do not double-count', async (t) => {
  const c = clock();
  const { s, pool, schema } = await store(t, { clock: c.now, minTtlSeconds: 1 });
  await Promise.all(Array.from({ length: 200 }, (_, i) => s.insert(`k${i % 3}`, `n${i}`, 1)));
  await s.insert('k0', 'live', 3600);
  c.advance(10_000);
  const other = new PgReplayStore(pool, { schema, clock: c.now });
  const [a, b] = await Promise.all([s.purgeExpired(50), other.purgeExpired(50)]);
  const rest = await s.purgeExpired(50);
  t.equal(a + b + rest, 200);
  const { rows } = await pool.query(
    `SELECT coalesce(sum(n), 0)::int AS n FROM ${schema}.replay_counts`,
  );
  t.equal(rows[0].n, 1, 'only the live entry is counted');
});

t.test('asyncCommit mode keeps the same outcomes', async (t) => {
  const { s } = await store(t, { asyncCommit: true, perKeyidCap: 3, atCapCacheMs: 0 });
  const results = await Promise.all(Array.from({ length: 10 }, () => s.insert('ka', 'same', 300)));
  t.equal(results.filter((r) => r === 'inserted').length, 1);
  t.equal(await s.seen('ka', 'same'), true);
  t.equal(await s.insert('ka', 'b', 300), 'inserted');
  t.equal(await s.insert('ka', 'c', 300), 'inserted');
  t.equal(await s.insert('ka', 'd', 300), 'cap');
});

t.test('one batch mixing new, duplicate, replayed and capped nonces', async (t) => {
  const { s } = await store(t, { perKeyidCap: 3, atCapCacheMs: 0 });
  await s.insert('km', 'old', 300);
  const results = await Promise.all([
    s.insert('km', 'a', 300),
    s.insert('km', 'a', 300),
    s.insert('km', 'old', 300),
    s.insert('km', 'b', 300),
    s.insert('km', 'c', 300),
    s.insert('other', 'a', 300),
  ]);
  t.same(results, ['inserted', 'replayed', 'replayed', 'inserted', 'cap', 'inserted']);
  const seen = await Promise.all([s.seen('km', 'a'), s.seen('km', 'c'), s.seen('other', 'a')]);
  t.same(seen, [true, false, true]);
});

t.test(
  'the cached generic plan probes the index per nonce, even when made on an empty table',
  async (t) => {
    // A prepared statement keeps the generic plan it made first; made while the table was
    // empty, an EXISTS could become a hashed subplan reading the whole table per batch.
    const { s, pool } = await store(t, { asyncCommit: true });
    const text = (s as unknown as { sql: { insert: { text: string } } }).sql.insert.text;
    const client = await pool.connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE replay_plan AS ${text}`);
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN EXECUTE replay_plan(ARRAY['k'], ARRAY['n'], ARRAY[300], NULL, 0, 100, 1000)`,
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      t.notMatch(plan, /hashed SubPlan/i, 'no hashed subplan');
      t.notMatch(plan, /Seq Scan on replay_nonces/, 'no scan of the whole nonce table');
      t.match(plan, /Index (Only )?Scan using replay_nonces_pkey/, 'an index probe per nonce');
    } finally {
      await client.query('DEALLOCATE ALL').catch(() => {});
      client.release();
    }
    // And the statement itself still works as a named prepared statement, twice on one pool.
    t.equal(await s.insert('kp', 'n1', 300), 'inserted');
    t.equal(await s.insert('kp', 'n1', 300), 'replayed');
  },
);
