/**
 * Migration 078 (sender/outbox/index-order-migration.ts) on a deployment that is already
 * partitioned (060-073 applied, days created, deliveries pending, open and settled): the
 * console's list indexes come back ascending under their names on every partition, the
 * delivery partitions take the new fillfactor, no row changes, the rows in flight are
 * claimed and settled once each afterwards, and the console still lists newest first
 * along the same indexes. On a fresh schema a batch's claims are all HOT updates.
 */
import { successRecord } from './attempt-record.js';
import t from 'tap';
import { migrate } from '../../shared/infra/pg.js';
import type { DeliveryQueue } from '../../sender/delivery/queue.js';
import { listStatement } from '../../sender/console/store.js';
import { consoleSearchMigrations } from '../../sender/console/search-migrations.js';
import { dueIndex } from '../../sender/outbox/due-migration.js';
import { ascendingIndexes } from '../../sender/outbox/index-order-migration.js';
import { createStatePool, Outbox } from '../../sender/outbox/outbox.js';
import {
  DELIVERY_FILLFACTOR,
  finishLegacyPartition,
  maintainPartitions,
} from '../../sender/outbox/partitions.js';
import { partitionedOutbox } from '../../sender/outbox/storage-migration.js';
import { migrateSender, unpartitionedMigrations } from '../../sender/schema.js';
import { DATABASE_URL, testDatabase } from '../helpers/db.js';

const REBUILT = [
  'outbox_console_created',
  'outbox_console_origin',
  'outbox_console_buy',
  'outbox_console_principal',
  'outbox_console_task',
  'outbox_console_event_type',
  'outbox_console_state',
  'webhook_activity_buy',
];

const queue = {
  dispatchBatch: async () => {},
  dispatch: async () => {},
} as unknown as DeliveryQueue;

const event = (key: string, i: number) => ({
  target: {
    url: 'https://buyer.example/hook',
    auth: { mode: 'rfc9421' as const },
    channel: 'task' as const,
  },
  payload: { key, pad: 'x'.repeat(i) },
  idempotencyKey: key,
  notificationType: 'completed',
  mediaBuyId: 'mb_1',
  principalId: 'p_1',
  taskId: `task_${i}`,
});

const record = successRecord;

t.test('078 on a partitioned deployment with deliveries in flight', async (t) => {
  const { pool, schema } = testDatabase(t, 'idxord');
  // The deployment as 073 left it: partitioned, today's and the days ahead created.
  await migrate(pool, schema, [
    ...unpartitionedMigrations,
    partitionedOutbox,
    dueIndex,
    ...consoleSearchMigrations,
  ]);
  await finishLegacyPartition(pool, schema);
  await maintainPartitions(pool, schema);
  const state = createStatePool(DATABASE_URL, 2);
  t.teardown(() => state.end());
  const before = new Outbox({ pool, statePool: state, queue, schema });
  const ids = await before.enqueue(
    Array.from({ length: 6 }, (_, i) => event(`ord_${i}_key_padding`, i)),
  );
  const delivered = await before.claim(ids[0]!, 60_000);
  t.ok('body' in delivered, 'claimed before the migration');
  await before.settle(ids[0]!, { state: 'delivered', status: 200, error: null, record: record(1) });
  // Claimed and never settled: its worker died mid-attempt.
  t.ok('body' in (await before.claim(ids[1]!, 1)), 'left open before the migration');
  const snapshot = `SELECT d.id::text, d.state, d.attempts, d.attempt_started_at IS NOT NULL AS open,
                           e.body, e.idempotency_key
                      FROM ${schema}.outbox_delivery d JOIN ${schema}.outbox_event e ON e.id = d.id
                     ORDER BY d.id`;
  const rowsBefore = (await pool.query(snapshot)).rows;

  t.same(await migrateSender(pool, schema), [ascendingIndexes.id], 'only 078 is applied');
  t.same((await pool.query(snapshot)).rows, rowsBefore, 'no row changed');

  const { rows: defs } = await pool.query<{ name: string; parent: string; def: string }>(
    `SELECT ci.relname AS name, coalesce(pi.relname, ci.relname) AS parent,
            pg_get_indexdef(ci.oid) AS def
       FROM pg_class ci JOIN pg_namespace n ON n.oid = ci.relnamespace
       LEFT JOIN pg_inherits h ON h.inhrelid = ci.oid
       LEFT JOIN pg_class pi ON pi.oid = h.inhparent
      WHERE n.nspname = $1 AND ci.relkind IN ('i', 'I')`,
    [schema],
  );
  for (const name of REBUILT) {
    const mine = defs.filter((d) => d.parent === name);
    // The parent and one per partition: the legacy one, today and the days ahead.
    t.ok(mine.length >= 5, `${name}: on the parent and every partition`);
    for (const d of mine) {
      t.notMatch(d.def, /DESC/, `${d.name} is ascending`);
      t.match(d.name, new RegExp(`^${name}(_p\\d{8}|_legacy)?$`), `${d.name}: named after ${name}`);
    }
  }
  const { rows: ff } = await pool.query<{ name: string; options: string[] | null }>(
    `SELECT c.relname AS name, c.reloptions AS options FROM pg_inherits h
       JOIN pg_class c ON c.oid = h.inhrelid WHERE h.inhparent = $1::regclass`,
    [`${schema}.outbox_delivery`],
  );
  for (const r of ff) {
    t.ok(
      r.options?.includes(`fillfactor=${DELIVERY_FILLFACTOR}`),
      `${r.name}: fillfactor ${DELIVERY_FILLFACTOR}`,
    );
  }

  // The rows in flight go on: the open one through the full claim (its attempt recorded
  // as interrupted), the pending ones through the quick claim; the delivered one stays.
  const after = new Outbox({ pool, statePool: state, queue, schema });
  await new Promise((r) => setTimeout(r, 20)); // the open row's 1 ms lease lapses
  for (const id of ids.slice(1)) {
    const c = await after.claim(id, 60_000);
    t.ok('body' in c, `${id} claimed after the migration`);
    if ('body' in c) {
      await after.settle(id, {
        state: 'delivered',
        status: 200,
        error: null,
        record: record(c.attempt),
      });
    }
  }
  const miss = await after.claim(ids[0]!, 60_000);
  t.same(miss, { kind: 'finished', state: 'delivered' }, 'the delivered row is not sent again');
  const { rows: attempts } = await pool.query<{ id: string; attempt: number; status: string }>(
    `SELECT outbox_id::text AS id, attempt, status FROM ${schema}.webhook_activity ORDER BY outbox_id, attempt`,
  );
  t.same(
    attempts.filter((a) => a.id === ids[1]).map((a) => [a.attempt, a.status]),
    [
      [1, 'timeout'],
      [2, 'success'],
    ],
    'the open attempt recorded as interrupted, then sent once more',
  );
  t.equal(attempts.length, 7, 'one record per attempt');

  // The console lists newest first along the rebuilt indexes.
  for (const filter of [
    {},
    { principalId: 'p_1' },
    { taskId: 'task_3' },
    { origin: 'https://buyer.example' },
  ]) {
    const q = listStatement(schema, filter, null, 10);
    const { rows } = await pool.query<{ id: string }>(q);
    const want = filter.taskId ? [ids[3]] : [...ids].reverse();
    t.same(
      rows.map((r) => r.id),
      want,
      `newest first: ${JSON.stringify(filter)}`,
    );
  }
});

t.test('a batch of claims on a fresh schema: every update HOT', async (t) => {
  const { pool, schema } = testDatabase(t, 'idxhot');
  await migrateSender(pool, schema);
  const state = createStatePool(DATABASE_URL, 1);
  t.teardown(() => state.end());
  const outbox = new Outbox({ pool, statePool: state, queue, schema });
  // Wide rows (a long origin) need the most room on their page.
  const ids = await outbox.enqueue(
    Array.from({ length: 400 }, (_, i) => ({
      ...event(`hot_${i}_key_padding`, 1),
      target: {
        url: `https://a-rather-long-buyer-host-name-for-the-origin-column.example/hook`,
        auth: { mode: 'rfc9421' as const },
        channel: 'task' as const,
      },
    })),
  );
  const claimed = await Promise.all(ids.map((id) => outbox.claim(id, 60_000)));
  t.ok(
    claimed.every((c) => 'body' in c),
    'all claimed',
  );
  // The state pool's one session flushes its statistics when next idle.
  await state.query('SELECT pg_stat_force_next_flush()');
  await state.query('SELECT 1');
  let stats = { upd: 0, hot: 0 };
  for (let i = 0; i < 50 && stats.upd < ids.length; i++) {
    const { rows } = await pool.query<{ upd: number; hot: number }>(
      `SELECT coalesce(sum(n_tup_upd), 0)::int AS upd, coalesce(sum(n_tup_hot_upd), 0)::int AS hot
         FROM pg_stat_user_tables
        WHERE schemaname = $1 AND relname LIKE 'outbox\\_delivery\\_%'`,
      [schema],
    );
    stats = rows[0]!;
    if (stats.upd < ids.length) await new Promise((r) => setTimeout(r, 200));
  }
  t.equal(stats.upd, ids.length, 'one update per claim');
  t.equal(stats.hot, ids.length, 'every claim a HOT update (no index written)');
});
