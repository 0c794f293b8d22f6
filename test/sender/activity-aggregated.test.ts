/**
 * webhook_activity of events covering several buys (aggregated reports, `mediaBuyIds`):
 * listed under each covered buy and its principal, never under another; the lookup stays
 * an index probe; a malformed `mediaBuyIds` is refused by the outbox.
 */
import t from 'tap';
import { ActivityLog, listSql } from '../../sender/activity/activity-log.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../sender/outbox/types.js';
import { migrateSender } from '../../sender/schema.js';
import { testDatabase } from '../helpers/db.js';
import { attemptRecord as record } from './fixtures/attempt-record.js';
import { senderHarness } from './harness.js';
import { withoutEmptyPartitions } from '../helpers/plans.js';

t.test('an attempt covering several buys is listed under each of them only', async (t) => {
  const { pool, schema } = testDatabase(t, 'actagg');
  await migrateSender(pool, schema);
  const log = new ActivityLog({ pool, schema, flushEveryMs: 60_000 });
  log.add(record(1));
  log.add(record(2, { mediaBuyId: null, mediaBuyIds: ['mb_1', 'mb_2'], sequenceNumber: 7 }));
  log.add(
    record(3, { mediaBuyId: null, mediaBuyIds: ['mb_2', 'mb_3'], status: 'failed', attempt: 2 }),
  );
  log.add(record(4, { mediaBuyId: null, mediaBuyIds: ['mb_1'], principalId: 'p_2' }));
  await log.flush();
  const seqs = async (principalId: string, mediaBuyId: string) =>
    (await log.list({ principalId, mediaBuyId })).map((r) => [r.sequence_number, r.status]);
  t.same(await seqs('p_1', 'mb_1'), [
    [7, 'success'],
    [1, 'success'],
  ]);
  t.same(await seqs('p_1', 'mb_2'), [
    [3, 'failed'],
    [7, 'success'],
  ]);
  t.same(await seqs('p_1', 'mb_3'), [[3, 'failed']]);
  t.same(await seqs('p_1', 'mb_9'), [], 'a buy not covered sees nothing');
  t.same(await seqs('p_2', 'mb_1'), [[4, 'success']], 'scoped to the principal');
  t.same(await seqs('p_2', 'mb_2'), []);
  // Like-looking ids are not prefixes of one another.
  t.same(await seqs('p_1', 'mb_'), []);
  const { rows } = await pool.query(
    `SELECT media_buy_id, media_buy_ids FROM ${schema}.webhook_activity WHERE outbox_id = 2`,
  );
  t.same(rows, [{ media_buy_id: null, media_buy_ids: ['mb_1', 'mb_2'] }]);

  // A start and its outcome in separate flushes keep the buys (the upsert leaves them).
  const fifth = record(5, { mediaBuyId: null, mediaBuyIds: ['mb_5', 'mb_6'] });
  log.start(fifth);
  await log.flush();
  t.same(
    (await log.list({ principalId: 'p_1', mediaBuyId: 'mb_6' })).map((r) => r.status),
    ['pending'],
  );
  log.add(fifth);
  await log.flush();
  t.same(
    (await log.list({ principalId: 'p_1', mediaBuyId: 'mb_5' })).map((r) => r.status),
    ['success'],
  );
});

t.test('the per-buy lookup probes indexes, not the whole log', async (t) => {
  const { pool, schema } = testDatabase(t, 'actaggplan');
  await migrateSender(pool, schema);
  const log = new ActivityLog({ pool, schema, flushEveryMs: 60_000, maxBatch: 100_000 });
  // 20,000 records over 400 buys and 4 principals, one in ten aggregated over 3 buys.
  for (let i = 1; i <= 20_000; i++) {
    const b = i % 400;
    const agg = i % 10 === 0;
    log.add(
      record(i, {
        principalId: `p_${b % 4}`,
        mediaBuyId: agg ? null : `mb_${b}`,
        ...(agg && { mediaBuyIds: [`mb_${b}`, `mb_${(b + 4) % 400}`, `mb_${(b + 8) % 400}`] }),
      }),
    );
  }
  await log.flush();
  await pool.query(`ANALYZE ${schema}.webhook_activity`);
  await pool.query(`ANALYZE ${schema}.outbox_event, ${schema}.outbox_delivery`);
  // mb_18 (p_2): its own 50 records and the 50 aggregated ones of mb_10's that cover it.
  const list = await log.list({ principalId: 'p_2', mediaBuyId: 'mb_18', limit: 200 });
  t.equal(list.length, 100);

  const client = await pool.connect();
  try {
    for (const mode of ['force_custom_plan', 'force_generic_plan']) {
      await client.query(`SET plan_cache_mode = ${mode}`);
      await client.query(`PREPARE list_plan AS ${listSql(schema)}`);
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN EXECUTE list_plan('p_2', 'mb_18', 50)`,
      );
      await client.query('DEALLOCATE list_plan');
      const plan = withoutEmptyPartitions(rows.map((r) => r['QUERY PLAN']).join('\n'));
      t.notMatch(plan, /Seq Scan on webhook_activity/, `${mode}: no scan of the log`);
      t.match(plan, /webhook_activity_buys/, `${mode}: the GIN index for aggregated records`);
      t.match(
        plan,
        /webhook_activity_buy(_p\d{8}|_legacy)?\b/,
        `${mode}: the btree index for per-buy records`,
      );
    }
  } finally {
    await client.query('DEALLOCATE ALL').catch(() => {});
    await client.query('RESET plan_cache_mode').catch(() => {});
    client.release();
  }
});

function event(extra: Partial<OutboundEvent> = {}): OutboundEvent {
  const idempotencyKey = newIdempotencyKey();
  return {
    target: { url: 'http://127.0.0.1:9/hook', auth: { mode: 'rfc9421' }, channel: 'reporting' },
    payload: { idempotency_key: idempotencyKey, result: { notification_type: 'scheduled' } },
    idempotencyKey,
    notificationType: 'scheduled',
    principalId: 'p_1',
    taskId: 'reporting.stream',
    sequenceNumber: 3,
    ...extra,
  };
}

t.test('the outbox keeps the buys, lists a waiting event per buy, refuses bad ones', async (t) => {
  const h = await senderHarness(t);
  // No worker: the row stays pending, listed as its coming attempt.
  const [id] = await h.outbox.enqueue([event({ mediaBuyIds: ['mb_a', 'mb_b'] })]);
  const { rows } = await h.pool.query(
    `SELECT media_buy_id, media_buy_ids, body FROM ${h.schema}.outbox WHERE id = $1`,
    [id],
  );
  t.same(rows[0].media_buy_ids, ['mb_a', 'mb_b']);
  t.equal(rows[0].media_buy_id, null);
  t.notMatch(rows[0].body.toString(), /mb_a/, 'the buys are bookkeeping, not payload');
  for (const buy of ['mb_a', 'mb_b']) {
    const list = await h.activity.list({ principalId: 'p_1', mediaBuyId: buy });
    t.same(
      list.map((r) => [r.notification_type, r.sequence_number, r.status, r.attempt]),
      [['scheduled', 3, 'pending', 1]],
      `${buy}: the waiting event`,
    );
  }
  t.same(await h.activity.list({ principalId: 'p_1', mediaBuyId: 'mb_c' }), []);
  t.same(await h.activity.list({ principalId: 'p_2', mediaBuyId: 'mb_a' }), []);

  // One batch mixing a per-buy event and an aggregated one: each row keeps its own.
  const mixed = await h.outbox.enqueue([
    event({ mediaBuyId: 'mb_c' }),
    event({ mediaBuyIds: ['mb_c', 'mb_d'] }),
  ]);
  const both = await h.pool.query(
    `SELECT media_buy_id, media_buy_ids FROM ${h.schema}.outbox WHERE id = ANY($1::bigint[])
      ORDER BY id`,
    [mixed],
  );
  t.same(both.rows, [
    { media_buy_id: 'mb_c', media_buy_ids: null },
    { media_buy_id: null, media_buy_ids: ['mb_c', 'mb_d'] },
  ]);
  t.equal((await h.activity.list({ principalId: 'p_1', mediaBuyId: 'mb_c' })).length, 2);
  t.equal((await h.activity.list({ principalId: 'p_1', mediaBuyId: 'mb_d' })).length, 1);

  const bad: unknown[] = [[], [1], ['mb_a', null], [''], 'mb_a', { 0: 'mb_a' }];
  for (const mediaBuyIds of bad) {
    await t.rejects(
      h.outbox.enqueue([event({ mediaBuyIds: mediaBuyIds as string[] })]),
      { name: 'OutboxError', message: /mediaBuyIds must be a non-empty array/ },
      `refused: ${JSON.stringify(mediaBuyIds)}`,
    );
  }
  const count = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.outbox`);
  t.equal(count.rows[0].n, 3, 'nothing written for a refused event');
});
