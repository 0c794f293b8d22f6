/**
 * Runs the delivery store contract (contract.ts) against every implementation, then what
 * only the PostgreSQL store does: step 13's nonce in the same statement as the claim, and
 * the per-sender counter initialised by the migration from keys already stored.
 */
import t from 'tap';
import { migrate } from '../../../shared/infra/pg.js';
import { PgReplayStore } from '../../../receiver/replay/pg-replay-store.js';
import {
  MemoryDeliveryStore,
  PgDeliveryStore,
  RECEIVER_MIGRATIONS,
  type AcceptInput,
} from '../../../receiver/store/index.js';
import { testDatabase } from '../../helpers/db.js';
import { deliveryStoreContract } from './contract.js';

const { pool, schema } = testDatabase(t, 'rstore');

t.before(async () => {
  await migrate(pool, schema, RECEIVER_MIGRATIONS);
});

deliveryStoreContract(t, {
  name: 'postgres',
  make: async (o) => new PgDeliveryStore({ pool, schema, protocolVersion: '3.2', ...o }),
  expire: async (sender) => {
    for (const table of ['idempotency_keys', 'task_state']) {
      await pool.query(
        `UPDATE ${schema}.${table} SET expires_at = now() - interval '1 second' WHERE sender = $1`,
        [sender],
      );
    }
  },
  peer: async (_store, o) => new PgDeliveryStore({ pool, schema, protocolVersion: '3.2', ...o }),
});

let offsetMs = 0;
deliveryStoreContract(t, {
  name: 'memory',
  make: async (o) =>
    new MemoryDeliveryStore({
      protocolVersion: '3.2',
      ...o,
      clock: () => Date.now() + offsetMs,
    }),
  expire: async () => {
    offsetMs += 3 * 86_400_000;
  },
  peer: async (store) => store,
});

const delivery = (sender: string, key: string): AcceptInput => ({
  sender,
  key,
  fingerprint: key,
  observation: {
    taskId: null,
    at: null,
    status: null,
    taskType: null,
    value: null,
    source: 'webhook',
    notificationId: null,
  },
});

t.test('postgres: the nonce is inserted in the claim statement', async (t) => {
  const replay = new PgReplayStore(pool, { schema, perKeyidCap: 3 });
  await replay.migrate();
  const store = new PgDeliveryStore({ pool, schema, protocolVersion: '3.2' });
  t.equal(store.burnsNonces(new PgReplayStore(pool, { schema: 'elsewhere' })), false);
  t.equal(store.burnsNonces(new PgReplayStore(pool, { schema, clock: () => 0 })), false);
  t.equal(store.burnsNonces(replay), true);
  const nonce = (n: string) => ({ keyid: 'kid-1', nonce: n, ttlSeconds: 300 });
  const first = await store.accept({ ...delivery('s-n', 'key-1'), nonce: nonce('n1') });
  t.equal(first.kind, 'claimed');
  t.equal(await replay.liveCount('kid-1'), 1, 'the nonce is stored');
  const replayed = await store.accept({ ...delivery('s-n', 'key-2'), nonce: nonce('n1') });
  t.same(replayed, { kind: 'replayed' });
  t.equal((await store.accept(delivery('s-n', 'key-2'))).kind, 'claimed', 'nothing was claimed');
  // Concurrent: the same nonce twice in one batch, one wins.
  const pair = await Promise.all([
    store.accept({ ...delivery('s-n', 'key-3'), nonce: nonce('n2') }),
    store.accept({ ...delivery('s-n', 'key-4'), nonce: nonce('n2') }),
  ]);
  t.same(pair.map((p) => p.kind).sort(), ['claimed', 'replayed']);
  // The counters were bumped with the inserts: the cap (3) is met at the third nonce.
  await store.accept({ ...delivery('s-n', 'key-5'), nonce: nonce('n3') });
  t.equal(await replay.atCap('kid-1'), true, 'counted toward the cap');
  const over = await store.accept({ ...delivery('s-n', 'key-6'), nonce: nonce('n4') });
  t.same(over, { kind: 'rate_abuse' });
  t.same(
    await store.accept({ ...delivery('s-n', 'key-7'), nonce: nonce('n3') }),
    { kind: 'replayed' },
    'a live nonce still reads as a replay at the cap',
  );
  t.equal(await store.senderKeyCount('s-n'), 4);
});

t.test('postgres: one batch on the set path, with every case that leaves it', async (t) => {
  // The keyid's cap read is cached (far under the cap), so the nonces go in the set insert.
  const replay = new PgReplayStore(pool, { schema, atCapCacheMs: 600_000 });
  await replay.migrate();
  const store = new PgDeliveryStore({ pool, schema, protocolVersion: '3.2' });
  t.equal(store.burnsNonces(replay), true);
  t.equal(await replay.atCap('kid-set'), false);
  const s = `set-${process.pid}`;
  const at = (sec: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, sec)).toISOString();
  const d = (key: string, nonce: string, o: Partial<AcceptInput['observation']> = {}) => ({
    ...delivery(s, key),
    observation: { ...delivery(s, key).observation, ...o },
    nonce: { keyid: 'kid-set', nonce, ttlSeconds: 300 },
  });
  // Stored before the batch: a nonce, a done key, a task at 20 s, a notification_id.
  await store.accept(d('pre-1', 'pre-n', { taskId: 'tk-a', status: 'working', at: at(20) }));
  const pre = await store.accept(d('pre-2', 'pre-n2', { notificationId: 'nid-pre' }));
  if (pre.kind === 'claimed') await store.complete(pre.claim, 'published');
  const before = await replay.liveCount('kid-set');
  const count = await store.senderKeyCount(s);
  const out = await Promise.all([
    store.accept(d('k-1', 'n-1', { taskId: 'tk-b', status: 'working', at: at(5) })), // fresh
    store.accept(d('k-2', 'pre-n')), // nonce already stored
    store.accept(d('k-3', 'n-3')), // same nonce twice in the batch:
    store.accept(d('k-4', 'n-3')), //   the first wins
    store.accept(d('pre-2', 'n-5')), // key already done
    store.accept(d('k-6', 'n-6', { taskId: 'tk-a', status: 'working', at: at(10) })), // older
    store.accept(d('k-7', 'n-7', { taskId: 'tk-c', status: 'working', at: at(1) })), // a task
    store.accept(d('k-8', 'n-8', { taskId: 'tk-c', status: 'working', at: at(2) })), //   twice
    store.accept(d('k-9', 'n-9', { notificationId: 'nid-pre' })), // a re-emission
    store.accept(d('k-10', 'n-10', { notificationId: 'nid-x' })), // a notification_id
    store.accept(d('k-11', 'n-11', { notificationId: 'nid-x' })), //   twice
    store.accept(d('k-12', 'n-12', { taskId: 'tk-d', status: 'completed', at: at(3) })),
  ]);
  const view = out.map((o) =>
    o.kind === 'claimed' ? `${o.decision}${o.reEmission ? ' re' : ''}` : o.kind,
  );
  t.same(view.slice(0, 6), ['current', 'replayed', 'current', 'replayed', 'done', 'stale']);
  t.equal(view[7], 'current', 'a task twice: the newer is current whichever goes first');
  t.same(view.slice(8), ['current re', 'current', 'current re', 'terminal_won']);
  t.equal(await replay.liveCount('kid-set'), before + 10, 'ten nonces went in (not k-2, k-4)');
  t.equal(await store.senderKeyCount(s), count + 9, 'nine keys claimed and counted');
  const { rows } = await pool.query(
    `SELECT expires_at - now() > interval '23 hours 59 minutes' AS kept FROM ${schema}.task_state
     WHERE sender = $1`,
    [s],
  );
  t.ok(rows.length === 4 && rows.every((r) => r.kept), 'task rows kept for their retention');
});

t.test(
  "postgres: a restarted process takes a dead owner's claims over, nonces and all",
  async (t) => {
    // The sidecar's path in the chaos run: the replay cache in the same schema, so each retry's
    // fresh nonce goes in the claim statement, on the cap-checked path (a new process knows no
    // count yet) and on the set path (its count cached).
    const restart = async (cacheMs: number) => {
      const replay = new PgReplayStore(pool, { schema, atCapCacheMs: cacheMs });
      await replay.migrate();
      const store = new PgDeliveryStore({ pool, schema, protocolVersion: '3.2', leaseMs: 300 });
      store.burnsNonces(replay);
      if (cacheMs > 0) await replay.atCap('kid-dead');
      return store;
    };
    let n = 0;
    const d = (key: string): AcceptInput => ({
      ...delivery(`dead-${process.pid}`, key),
      nonce: { keyid: 'kid-dead', nonce: `nonce-${++n}`, ttlSeconds: 300 },
    });
    const dead = await restart(0);
    const open = await Promise.all(['a', 'b', 'c', 'd'].map((k) => dead.accept(d(k))));
    t.ok(open.every((o) => o.kind === 'claimed'));
    const kinds = async (store: PgDeliveryStore, keys: string[]) =>
      (await Promise.all(keys.map((k) => store.accept(d(k))))).map((o) =>
        o.kind === 'claimed'
          ? `${o.claim.takeover ? 'takeover' : 'new'} ${o.claim.generation}`
          : o.kind,
      );
    const early = await restart(0);
    t.same(await kinds(early, ['a', 'e', 'b']), ['in_flight', 'new 1', 'in_flight']);
    await new Promise((r) => setTimeout(r, 350));
    t.same(await kinds(await restart(0), ['a', 'f', 'b']), ['takeover 2', 'new 1', 'takeover 2']);
    t.same(await kinds(await restart(60_000), ['c', 'g', 'd']), [
      'takeover 2',
      'new 1',
      'takeover 2',
    ]);
  },
);

t.test('postgres: a call that fails alone throws; its batch neighbours go through', async (t) => {
  const store = new PgDeliveryStore({ pool, schema, protocolVersion: '3.2' });
  const s = `alone-${process.pid}`;
  const [good, bad] = await Promise.allSettled([
    store.accept(delivery(s, 'fine')),
    // PostgreSQL text cannot hold a NUL: the batch fails, then this call alone.
    store.accept(delivery(s, 'bad\u0000key')),
  ]);
  t.equal(good.status === 'fulfilled' && good.value.kind, 'claimed');
  t.equal(bad.status, 'rejected', 'an error, not "in flight"');
  t.equal(await store.senderKeyCount(s), 1);
});

t.test('postgres: the migration counts the keys already stored', async (t) => {
  const { pool: p2, schema: s2 } = testDatabase(t, 'rstoremig');
  const before = RECEIVER_MIGRATIONS.filter((m) => !m.id.startsWith('store_'));
  await migrate(p2, s2, before);
  await p2.query(
    `INSERT INTO ${s2}.idempotency_keys (sender, idempotency_key, fingerprint, state, lease_until, expires_at)
     SELECT 'old-' || (i % 3), 'k' || i, 'f', 'done', now(), now() + interval '1 day'
     FROM generate_series(1, 3000) i`,
  );
  await migrate(p2, s2, RECEIVER_MIGRATIONS);
  const store = new PgDeliveryStore({ pool: p2, schema: s2, protocolVersion: '3.2' });
  t.equal(await store.senderKeyCount('old-0'), 1000);
  t.equal(await store.senderKeyCount('old-1'), 1000);
  await store.accept(delivery('old-1', 'new-key'));
  t.equal(await store.senderKeyCount('old-1'), 1001);
  t.equal(await store.senderKeyCount('old-9'), 0);
});

t.test('postgres: store_002 replaces accept_batch under stored state', async (t) => {
  const { pool: p2, schema: s2 } = testDatabase(t, 'rstore002');
  await migrate(
    p2,
    s2,
    RECEIVER_MIGRATIONS.filter((m) => m.id !== 'store_002_accept_batch_set_based'),
  );
  const store = new PgDeliveryStore({ pool: p2, schema: s2, protocolVersion: '3.2' });
  const done = await store.accept(delivery('up', 'k-done'));
  const open = await store.accept(delivery('up', 'k-open'));
  if (done.kind !== 'claimed' || open.kind !== 'claimed') throw new Error('not claimed');
  t.equal(await store.complete(done.claim, 'published'), true);
  await migrate(p2, s2, RECEIVER_MIGRATIONS);
  t.same(await store.accept(delivery('up', 'k-done')), { kind: 'done', outcome: 'published' });
  t.same(await store.accept(delivery('up', 'k-open')), { kind: 'in_flight' });
  t.equal(await store.complete(open.claim, 'published'), true, 'the old claim completes');
  t.equal((await store.accept(delivery('up', 'k-new'))).kind, 'claimed');
  t.equal(await store.senderKeyCount('up'), 3);
});

t.test('postgres: store_003 from store_002: claims carry over, done-marks are HOT', async (t) => {
  const { pool: p2, schema: s2 } = testDatabase(t, 'rstore003');
  await migrate(
    p2,
    s2,
    RECEIVER_MIGRATIONS.filter((m) => m.id !== 'store_003_claim_one_statement'),
  );
  const replay = new PgReplayStore(p2, { schema: s2 });
  await replay.migrate();
  const store = new PgDeliveryStore({ pool: p2, schema: s2, protocolVersion: '3.2' });
  t.equal(store.burnsNonces(replay), true);
  const nonce = (n: string) => ({ keyid: 'k3', nonce: n, ttlSeconds: 300 });
  const done = await store.accept({ ...delivery('up3', 'k-done'), nonce: nonce('n1') });
  const open = await store.accept({ ...delivery('up3', 'k-open'), nonce: nonce('n2') });
  if (done.kind !== 'claimed' || open.kind !== 'claimed') throw new Error('not claimed');
  t.equal(await store.complete(done.claim, 'published'), true);
  await migrate(p2, s2, RECEIVER_MIGRATIONS);
  const { rows } = await p2.query<{ opts: string[] }>(
    `SELECT reloptions AS opts FROM pg_class WHERE oid = $1::regclass`,
    [`${s2}.idempotency_keys`],
  );
  t.same(rows[0]?.opts, ['fillfactor=50'], 'room on each page for the done-marks');
  t.same(await store.accept({ ...delivery('up3', 'k-done'), nonce: nonce('n3') }), {
    kind: 'done',
    outcome: 'published',
  });
  t.same(await store.accept({ ...delivery('up3', 'k-open'), nonce: nonce('n4') }), {
    kind: 'in_flight',
  });
  t.same(await store.accept({ ...delivery('up3', 'k-new'), nonce: nonce('n4') }), {
    kind: 'replayed',
  });
  t.equal(await store.complete(open.claim, 'published'), true, 'the old claim completes');
  const fresh = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      store.accept({ ...delivery('up3', `k-${i}`), nonce: nonce(`m-${i}`) }),
    ),
  );
  const claims = fresh.map((o) => (o.kind === 'claimed' ? o.claim : null));
  t.ok(claims.every(Boolean), 'a batch on the new statement claims every new key');
  // A done-mark changes no indexed column, so it is HOT exactly when the row's new version
  // fits on its page: every row is still on the page it was inserted on.
  const pages = () =>
    p2
      .query<{ key: string; page: string }>(
        `SELECT idempotency_key AS key, (ctid::text::point)[0]::text AS page
           FROM ${s2}.idempotency_keys WHERE sender = 'up3' AND idempotency_key LIKE 'k-%'
             AND idempotency_key NOT IN ('k-done', 'k-open') ORDER BY 1`,
      )
      .then((r) => r.rows);
  const before = await pages();
  await Promise.all(claims.map((c) => store.complete(c!, 'published')));
  t.same(await pages(), before, 'every done-mark stayed on its page (HOT)');
  t.equal(await store.senderKeyCount('up3'), 42);
  t.equal(await replay.liveCount('k3'), 44, 'four nonces before, forty in the batch');
});

t.test('memory: refuses a nonce (it holds no replay cache)', async (t) => {
  const store = new MemoryDeliveryStore({ protocolVersion: '3.2' });
  t.equal(store.burnsNonces(), false);
  await t.rejects(
    store.accept({ ...delivery('m', 'k'), nonce: { keyid: 'a', nonce: 'b', ttlSeconds: 1 } }),
  );
});
