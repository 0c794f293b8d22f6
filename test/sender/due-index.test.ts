/**
 * The outbox's hot statements (issue 19, item 1; sender/outbox/due-migration.ts and
 * outbox.ts): no index of `outbox_delivery` covers what a claim writes (claims stay HOT);
 * the reconciler and the interrupted-attempt pass find their rows along the `due_at`
 * index; `due_at` moves with the due time only (enqueue, a retry's settle, the
 * reconciler), never with a claim's lease or its renewal; and the claims, renewals and
 * settles run prepared on a pool made by `createStatePool` (generic plans pruned by the
 * ids' days), over rows of two partitions in one batch.
 */
import t from 'tap';
import { createStatePool, Outbox } from '../../sender/outbox/outbox.js';
import { closeInterruptedSql } from '../../sender/outbox/attempts.js';
import { overduePageSql } from '../../sender/outbox/redispatch.js';
import { DATABASE_URL } from '../helpers/db.js';
import { senderHarness } from './harness.js';

const CLAIM_COLUMNS = ['attempts', 'first_attempt_at', 'next_attempt_at', 'attempt_started_at'];

const event = (key: string) => ({
  target: {
    url: 'http://127.0.0.1:9/hook',
    auth: { mode: 'rfc9421' as const },
    channel: 'task' as const,
  },
  payload: { k: key },
  idempotencyKey: key,
  notificationType: 'completed',
});

t.test('no index of outbox_delivery reads a column a claim writes', async (t) => {
  const h = await senderHarness(t);
  const { rows } = await h.pool.query<{ name: string; cols: string[]; expr: string }>(
    `SELECT c.relname AS name,
            array(SELECT a.attname::text FROM pg_attribute a
                   WHERE a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey)) AS cols,
            coalesce(pg_get_expr(x.indexprs, x.indrelid), '') || ' ' ||
            coalesce(pg_get_expr(x.indpred, x.indrelid), '') AS expr
       FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
      WHERE x.indrelid = $1::regclass`,
    [`${h.schema}.outbox_delivery`],
  );
  t.ok(rows.length >= 3, 'the table has its indexes');
  t.ok(
    rows.some((r) => r.cols.includes('due_at')),
    'due_at is indexed',
  );
  for (const r of rows) {
    for (const c of CLAIM_COLUMNS) {
      t.notOk(r.cols.includes(c) || r.expr.includes(c), `${r.name} does not read ${c}`);
    }
  }
});

t.test('the reconciler and the interrupted-attempt pass read the due index', async (t) => {
  const h = await senderHarness(t);
  const client = await h.pool.connect();
  try {
    // With sequential scans priced out, a plan without a usable index would still show one.
    await client.query('SET enable_seqscan = off');
    const plan = async (sql: string, values: unknown[]) => {
      await client.query('BEGIN');
      try {
        const { rows } = await client.query(`EXPLAIN ${sql}`, values);
        return rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
      } finally {
        await client.query('ROLLBACK');
      }
    };
    const reconcile = await plan(overduePageSql(h.schema), [30_000, 1000]);
    t.match(reconcile, /outbox_delivery_due/, 'reconciler page along the due index');
    const interrupted = await plan(closeInterruptedSql(h.schema), [1000, 1000, null]);
    t.match(interrupted, /outbox_delivery_due/, 'interrupted pass along the due index');
  } finally {
    client.release();
  }
});

t.test('prepared on the state pool: due_at follows the due time, not the lease', async (t) => {
  const h = await senderHarness(t);
  const state = createStatePool(DATABASE_URL, 2);
  t.teardown(() => state.end());
  const outbox = new Outbox({ pool: h.pool, statePool: state, queue: h.queue, schema: h.schema });
  await outbox.warmUp();
  const due = async (id: string) =>
    (
      await h.pool.query<{ due: Date; next: Date; attempts: number; state: string }>(
        `SELECT due_at AS due, next_attempt_at AS next, attempts, state
           FROM ${h.schema}.outbox_delivery WHERE id = $1`,
        [id],
      )
    ).rows[0]!;
  const [today] = await outbox.enqueue([event('due_index_today_key_pad')]);
  // A row of the legacy partition (below today's first id), as migration 060 leaves them.
  await h.pool.query(
    `INSERT INTO ${h.schema}.outbox (id, idempotency_key, body, target_url, auth_mode, channel,
       notification_type, horizon_seconds)
     VALUES (7, 'due_index_legacy_key_pad', '{}', 'http://127.0.0.1:9/hook', 'rfc9421', 'task',
             'completed', 86400)`,
  );
  const before = await due(today!);
  t.equal(before.due.getTime(), before.next.getTime(), 'enqueued: due when next');
  // Six rounds: past the five after which a prepared statement may switch plans.
  for (let round = 0; round < 6; round++) {
    const dueAt = (await due(today!)).due.getTime();
    const claimed = await Promise.all([today!, '7'].map((id) => outbox.claim(id, 60_000)));
    t.ok(
      claimed.every((c) => 'attempt' in c && c.attempt === round + 1),
      `round ${round + 1}: both days' rows claimed in one batch`,
    );
    const leased = await due(today!);
    t.equal(leased.due.getTime(), dueAt, 'a claim leaves due_at');
    t.ok(leased.next.getTime() > leased.due.getTime() + 50_000, 'and leases next_attempt_at');
    t.equal(await outbox.renewLeases([today!, '7'], 120_000), 2, 'both leases renewed');
    t.equal((await due(today!)).due.getTime(), dueAt, 'a renewal leaves due_at');
    const settled = await Promise.all(
      [today!, '7'].map((id) =>
        outbox.settle(id, { state: 'pending', status: 503, error: 'http_503', delayMs: 0 }),
      ),
    );
    t.ok(
      settled.every((n) => typeof n === 'number'),
      'retry settles both',
    );
    const retry = await due(today!);
    t.equal(retry.due.getTime(), retry.next.getTime(), "a retry's settle moves due_at with it");
  }
  await Promise.all([today!, '7'].map((id) => outbox.claim(id, 60_000)));
  await Promise.all(
    [today!, '7'].map((id) => outbox.settle(id, { state: 'delivered', status: 200, error: null })),
  );
  t.equal((await due(today!)).state, 'delivered');
  t.equal((await due('7')).state, 'delivered');
  t.equal((await due('7')).attempts, 7);
});
