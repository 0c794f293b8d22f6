/**
 * The quick claim and the settle on one day's partitions (sender/outbox/outbox.ts
 * `onDay`): a batch of one day's rows runs the statement naming that day's tables, a batch
 * spanning days or the legacy partition runs the parents' one, and an id of a day that has
 * no partition (dropped by retention, or never written) is missing, not an error.
 */
import { successRecord } from './attempt-record.js';
import t from 'tap';
import type { DeliveryQueue } from '../../sender/delivery/queue.js';
import { createStatePool, Outbox } from '../../sender/outbox/outbox.js';
import { dayOf, firstIdOf, suffixOf } from '../../sender/outbox/partitions.js';
import { migrateSender } from '../../sender/schema.js';
import { DATABASE_URL, testDatabase } from '../helpers/db.js';

const queue = {
  dispatchBatch: async () => {},
  dispatch: async () => {},
} as unknown as DeliveryQueue;

const event = (key: string) => ({
  target: {
    url: 'https://buyer.example/hook',
    auth: { mode: 'rfc9421' as const },
    channel: 'task' as const,
  },
  payload: { key },
  idempotencyKey: key,
  notificationType: 'completed',
});

const record = successRecord();

t.test('claims and settles run on their day, across days on the parents', async (t) => {
  const { pool, schema } = testDatabase(t, 'dayst');
  await migrateSender(pool, schema);
  // One session: the prepared statements it holds are the ones the outbox ran.
  const state = createStatePool(DATABASE_URL, 1);
  t.teardown(() => state.end());
  const outbox = new Outbox({ pool, statePool: state, queue, schema });
  const ids = await outbox.enqueue([event('day_stmt_0_key_pad'), event('day_stmt_1_key_pad')]);
  const claimed = await Promise.all(ids.map((id) => outbox.claim(id, 60_000)));
  t.ok(
    claimed.every((c) => 'body' in c),
    'both claimed',
  );
  await Promise.all(
    ids.map((id) => outbox.settle(id, { state: 'delivered', status: 200, error: null, record })),
  );
  const today = suffixOf(dayOf(new Date()));
  const { rows } = await state.query<{ statement: string }>(
    'SELECT statement FROM pg_prepared_statements',
  );
  const onToday = rows.filter((r) => r.statement.includes(`outbox_delivery_${today}`));
  t.equal(onToday.length, 2, "the quick claim and the settle ran on today's partitions");
  t.ok(
    onToday.every((r) => !new RegExp(`${schema}\\.outbox_delivery\\s`).test(r.statement)),
    'neither names the parent',
  );
  const { rows: states } = await pool.query<{ state: string; n: number }>(
    `SELECT d.state, count(a.*)::int AS n FROM ${schema}.outbox_delivery d
       LEFT JOIN ${schema}.webhook_activity a ON a.outbox_id = d.id
      GROUP BY d.id, d.state`,
  );
  t.same(
    states,
    [
      { state: 'delivered', n: 1 },
      { state: 'delivered', n: 1 },
    ],
    'settled with one record each',
  );

  // A row of yesterday (in the legacy partition, which a fresh schema's migration makes
  // up to today) and one of today in one batch.
  const yesterday = dayOf(new Date()) - 1;
  const old = (firstIdOf(yesterday) + 7n).toString();
  await pool.query(
    `INSERT INTO ${schema}.outbox (id, idempotency_key, body, target_url, auth_mode, channel,
       notification_type, horizon_seconds, created_at)
     VALUES ($1, 'day_stmt_old_key_pad', '{}'::bytea, 'https://buyer.example/hook', 'rfc9421',
       'task', 'completed', 86400, now() - interval '1 day')`,
    [old],
  );
  const [fresh] = await outbox.enqueue([event('day_stmt_2_key_pad')]);
  const both = await Promise.all([old, fresh!].map((id) => outbox.claim(id, 60_000)));
  t.ok(
    both.every((c) => 'body' in c),
    'a batch over two days claimed (on the parents)',
  );
  const next = await Promise.all(
    [old, fresh!].map((id) =>
      outbox.settle(id, { state: 'delivered', status: 200, error: null, record }),
    ),
  );
  t.ok(
    next.every((n) => typeof n === 'number'),
    'and settled',
  );
});

t.test('an id of a day without partitions: missing, never an error', async (t) => {
  const { pool, schema } = testDatabase(t, 'daygone');
  await migrateSender(pool, schema);
  const state = createStatePool(DATABASE_URL, 1);
  t.teardown(() => state.end());
  const outbox = new Outbox({ pool, statePool: state, queue, schema });
  // 100 days ago: dropped long since (or never written).
  const gone = (firstIdOf(dayOf(new Date()) - 100) + 1n).toString();
  t.same(await outbox.claim(gone, 60_000), { kind: 'missing' }, 'claim: missing');
  t.equal(
    await outbox.settle(gone, { state: 'delivered', status: 200, error: null, record }),
    null,
    'settle: nothing settled',
  );
  // A day's partition dropped after its statements were prepared on the session.
  const [id] = await outbox.enqueue([event('day_gone_0_key_pad')]);
  t.ok('body' in (await outbox.claim(id!, 60_000)), 'claimed while its day exists');
  await outbox.settle(id!, { state: 'delivered', status: 200, error: null, record });
  const today = suffixOf(dayOf(new Date()));
  for (const table of ['outbox_event', 'outbox_delivery', 'webhook_activity']) {
    await pool.query(`DROP TABLE ${schema}.${table}_${today}`);
  }
  t.same(await outbox.claim(id!, 60_000), { kind: 'missing' }, 'claim after the drop: missing');
  t.equal(
    await outbox.settle(id!, { state: 'delivered', status: 200, error: null, record }),
    null,
    'settle after the drop: nothing settled',
  );
});
