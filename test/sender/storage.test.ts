/**
 * Storage that stays flat (issue 19, item 1; sender/outbox/partitions.ts and
 * storage-migration.ts): partitions created ahead and dropped behind over a simulated
 * month on a virtual clock, a delivery still retrying never dropped, the console showing
 * every delivery the retention promises; the migration of 8faf630's tables with pending,
 * retrying, open and settled deliveries, none lost and none sent again; and the
 * retention refused at start when it is not a duration or shorter than the retry horizon.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { ConfigError, loadConfig } from '../../shared/config.js';
import { migrate } from '../../shared/infra/pg.js';
import { ConsoleStore } from '../../sender/console/store.js';
import type { DeliveryQueue } from '../../sender/delivery/queue.js';
import { Outbox, OutboxError } from '../../sender/outbox/outbox.js';
import {
  DAY_MS,
  DEFAULT_DAYS_AHEAD,
  dayOf,
  firstIdOf,
  suffixOf,
} from '../../sender/outbox/partitions.js';
import { unpartitionedMigrations } from '../../sender/schema.js';
import { senderHarness, startReceiver, type SenderHarness } from './harness.js';

const RETENTION_DAYS = 7;
const PER_DAY = 20;

/** `n` delivered rows (and one attempt record each) written on the virtual day `day`. */
async function writeDay(
  pool: { query: (sql: string, values?: unknown[]) => Promise<unknown> },
  schema: string,
  day: number,
  at: Date,
): Promise<void> {
  const first = firstIdOf(day).toString();
  await pool.query(
    `INSERT INTO ${schema}.outbox (id, idempotency_key, body, target_url, auth_mode, channel,
       notification_type, state, created_at, first_attempt_at, attempts, horizon_seconds,
       last_status, completed_at)
     SELECT $1::bigint + g, 'day_' || $2 || '_' || g || '_key_padding', '{}'::bytea,
            'https://buyer.example/hook', 'rfc9421', 'task', 'completed', 'delivered', $3,
            $3, 1, 86400, 200, $3
       FROM generate_series(1, $4) g`,
    [first, day, at, PER_DAY],
  );
  await pool.query(
    `INSERT INTO ${schema}.webhook_activity (outbox_id, idempotency_key, notification_type,
       attempt, status, url, http_status_code, response_time_ms, payload_size_bytes, fired_at,
       completed_at)
     SELECT id, idempotency_key, notification_type, 1, 'success', target_url, 200, 5, 2,
            created_at, created_at
       FROM ${schema}.outbox WHERE id > $1::bigint AND id <= $1::bigint + $2`,
    [first, PER_DAY],
  );
}

async function exists(pool: SenderHarness['pool'], schema: string, table: string) {
  const { rows } = await pool.query(`SELECT to_regclass($1) IS NOT NULL AS there`, [
    `${schema}.${table}`,
  ]);
  return rows[0].there as boolean;
}

t.test('retention on a virtual clock: a month of days created ahead, dropped behind', async (t) => {
  const h = await senderHarness(t, { retentionSeconds: RETENTION_DAYS * 86_400 });
  const start = dayOf(Date.now());
  const retrying = firstIdOf(start + 3) + 10_000n;
  for (let i = 0; i <= 30; i++) {
    const day = start + i;
    const now = new Date(day * DAY_MS + 12 * 3_600_000);
    const result = await h.outbox.maintainStorage(now);
    await writeDay(h.pool, h.schema, day, now);
    if (i === 3) {
      // Retried for the whole simulated fortnight: its day is never dropped meanwhile.
      await h.pool.query(
        `INSERT INTO ${h.schema}.outbox (id, idempotency_key, body, target_url, auth_mode,
           channel, notification_type, created_at, first_attempt_at, attempts, next_attempt_at,
           horizon_seconds, last_status)
         VALUES ($1, 'still_retrying_key_0001', '{}', 'https://buyer.example/hook', 'rfc9421',
           'task', 'completed', $2, $2, 2, $2::timestamptz + interval '1 hour', 86400, 503)`,
        [retrying.toString(), now],
      );
    }
    if (i === 20) {
      await h.pool.query(
        `UPDATE ${h.schema}.outbox_delivery SET state = 'expired', completed_at = $2
          WHERE id = $1`,
        [retrying.toString(), now],
      );
    }
    for (let d = day; d <= day + DEFAULT_DAYS_AHEAD; d++) {
      t.ok(await exists(h.pool, h.schema, `outbox_event_${suffixOf(d)}`), `day ${i}: +${d - day}`);
    }
    const lastGone = day - RETENTION_DAYS - 1;
    for (let d = start; d <= lastGone; d++) {
      const held = d === start + 3 && i <= 20;
      for (const table of ['outbox_event', 'outbox_delivery', 'webhook_activity']) {
        t.equal(
          await exists(h.pool, h.schema, `${table}_${suffixOf(d)}`),
          held,
          `day ${i}: ${table} of day ${d - start} ${held ? 'held (pending)' : 'dropped'}`,
        );
      }
    }
    if (i === 12) t.ok(result.held.includes(suffixOf(start + 3)), 'the held day is reported');
    t.ok(!result.dropped.includes(suffixOf(day - RETENTION_DAYS)), 'never a day inside retention');
  }
  t.equal((await h.outbox.state(retrying.toString()))?.state, undefined, 'dropped once expired');

  // The console lists every delivery created within the retention, and nothing older
  // than the retention plus the day a partition spans.
  const now = new Date((start + 30) * DAY_MS + 12 * 3_600_000);
  const store = new ConsoleStore(h.pool, h.schema);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const { decodeCursor } = await import('../../sender/console/filters.js');
    const page = await store.list({}, cursor ? decodeCursor(cursor) : null, 200);
    for (const item of page.items) seen.push(item.createdAt);
    cursor = page.next;
  } while (cursor);
  const within = seen.filter((c) => Date.parse(c) >= now.getTime() - RETENTION_DAYS * DAY_MS);
  t.equal(within.length, (RETENTION_DAYS + 1) * PER_DAY, 'every delivery within retention');
  t.ok(
    seen.every((c) => Date.parse(c) >= now.getTime() - (RETENTION_DAYS + 1) * DAY_MS),
    'nothing older than retention + one day',
  );
  const kept = await store.list({ from: new Date(now.getTime() - DAY_MS) }, null, 1);
  const detail = await store.get(kept.items[0]!.id);
  t.equal(detail?.attemptList.length, 1, 'a kept delivery keeps its attempt record');
  const { rows } = await h.pool.query(
    `SELECT count(*)::int AS n FROM ${h.schema}.webhook_activity WHERE outbox_id < $1`,
    [firstIdOf(start + 30 - RETENTION_DAYS - 1).toString()],
  );
  t.equal(rows[0].n, 0, 'attempt records leave with their day');
});

t.test('a deployment on 8faf630 tables migrates without losing or resending', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const target = rx.url;
  const h = await senderHarness(t, {
    before: async (pool, schema) => {
      await migrate(pool, schema, unpartitionedMigrations);
      const row = (key: string, state: string, extra: string) =>
        pool.query(
          `INSERT INTO ${schema}.outbox (idempotency_key, body, target_url, auth_mode, channel,
             notification_type, horizon_seconds, state ${extra ? ',' + extra.split('=')[0] : ''})
           VALUES ($1, convert_to('{"key":"' || $1 || '"}', 'UTF8'), $2, 'rfc9421', 'task',
             'completed', 86400, $3 ${extra ? ',' + extra.split('=')[1] : ''})`,
          [key, target, state],
        );
      for (let i = 0; i < 5; i++) await row(`mig_pending_${i}_key_pad`, 'pending', '');
      for (let i = 0; i < 5; i++) {
        await row(`mig_delivered_${i}_key_pad`, 'delivered', 'completed_at=now()');
      }
      await row('mig_stopped_0_key_pad', 'stopped', 'completed_at=now()');
      // Retrying: two attempts made and recorded, the next one due in a moment.
      await row('mig_retrying_0_key_pad', 'pending', 'attempts=2');
      await pool.query(
        `UPDATE ${schema}.outbox SET first_attempt_at = now() - interval '1 minute',
           next_attempt_at = now() + interval '300 milliseconds', last_status = 503
         WHERE idempotency_key = 'mig_retrying_0_key_pad'`,
      );
      // An attempt its worker never settled (the worker died mid-attempt).
      await row('mig_open_0_key_pad', 'pending', 'attempts=1');
      await pool.query(
        `UPDATE ${schema}.outbox SET first_attempt_at = now() - interval '10 seconds',
           attempt_started_at = now() - interval '10 seconds',
           next_attempt_at = now() - interval '5 seconds'
         WHERE idempotency_key = 'mig_open_0_key_pad'`,
      );
      await pool.query(
        `INSERT INTO ${schema}.webhook_activity (outbox_id, idempotency_key, notification_type,
           attempt, status, url, http_status_code, payload_size_bytes, fired_at, completed_at)
         SELECT o.id, o.idempotency_key, o.notification_type, a,
                CASE WHEN o.state = 'delivered' THEN 'success' ELSE 'failed' END, o.target_url,
                CASE WHEN o.state = 'delivered' THEN 200 ELSE 503 END, 10, now(), now()
           FROM ${schema}.outbox o, generate_series(1, greatest(o.attempts, 1)) a
          WHERE o.state <> 'pending' OR o.idempotency_key LIKE 'mig_retrying%'`,
      );
    },
  });
  const { rows: before } = await h.pool.query(
    `SELECT id::text, idempotency_key, state, attempts FROM ${h.schema}.outbox ORDER BY id`,
  );
  t.equal(before.length, 13, 'every row moved');
  const pending = before.filter((r) => r.state === 'pending');
  // Their jobs were in Redis before the migration (one of them lost: the reconciler's).
  await h.queue.dispatch(
    pending
      .filter((r) => !r.idempotency_key.startsWith('mig_pending_4'))
      .map((r) => ({ id: r.id, origin: new URL(target).origin })),
  );
  h.startWorker({ reconcileEveryMs: 200, reconcileGraceMs: -60_000 });
  for (const r of pending) t.equal(await h.waitForState(r.id), 'delivered', r.idempotency_key);
  // A new event after the migration lands in today's partition.
  const [fresh] = await h.outbox.enqueue([
    {
      target: { url: target, auth: { mode: 'rfc9421' }, channel: 'task' },
      payload: { key: 'mig_fresh_0_key_pad' },
      idempotencyKey: 'mig_fresh_0_key_pad',
      notificationType: 'completed',
    },
  ]);
  t.equal(await h.waitForState(fresh!), 'delivered');
  t.equal(dayOf(Number(BigInt(fresh!) >> 44n) * DAY_MS), dayOf(Date.now()), 'id carries today');
  const keys = rx.received.map((r) => JSON.parse(r.body.toString('utf8')).key as string);
  for (const r of before) {
    const n = keys.filter((k) => k === r.idempotency_key).length;
    t.equal(n, r.state === 'pending' ? 1 : 0, `${r.idempotency_key} sent ${n} time(s)`);
  }
  const { rows: records } = await h.pool.query(
    `SELECT o.idempotency_key, a.attempt, a.status, a.error_message
       FROM ${h.schema}.webhook_activity a JOIN ${h.schema}.outbox o ON o.id = a.outbox_id
      ORDER BY o.idempotency_key, a.attempt`,
  );
  const of = (key: string) => records.filter((r) => r.idempotency_key === key);
  t.same(
    of('mig_retrying_0_key_pad').map((r) => [r.attempt, r.status]),
    [
      [1, 'failed'],
      [2, 'failed'],
      [3, 'success'],
    ],
    'a retrying delivery keeps its past attempts and adds the third',
  );
  t.same(
    of('mig_open_0_key_pad').map((r) => [r.attempt, r.status, r.error_message]),
    [
      [1, 'timeout', 'attempt_interrupted'],
      [2, 'success', null],
    ],
    'the open attempt is recorded as interrupted, then the row is sent once',
  );
  t.equal(of('mig_delivered_0_key_pad').length, 1, 'settled records kept');
});

t.test('bad retention: refused at start, naming the variable', async (t) => {
  for (const bad of ['12h', '23h', '3600s', '30 days', 'abc', '0d', '-1d', '30', '1.5d', 'd']) {
    let err: unknown = null;
    try {
      loadConfig({ SVC_RETENTION: bad });
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof ConfigError, `SVC_RETENTION=${bad} refused`);
    t.equal((err as ConfigError).variable, 'SVC_RETENTION');
    t.match((err as Error).message, /^SVC_RETENTION=.*a whole number and s, m, h or d/);
  }
  t.throws(
    () => loadConfig({ SVC_RETENTION: '5d', SVC_RETRY_HORIZON_SECONDS: '604800' }),
    /SVC_RETENTION="5d" is not valid: .*at least 604800s/,
    'shorter than a longer horizon',
  );
  t.equal(loadConfig({}).SVC_RETENTION, 30 * 86_400, 'default 30 days');
  t.equal(loadConfig({ SVC_RETENTION: '24h' }).SVC_RETENTION, 86_400, 'the horizon itself');
  t.equal(loadConfig({ SVC_RETENTION: '720h' }).SVC_RETENTION, 30 * 86_400);
  const queue = {} as DeliveryQueue;
  t.throws(
    () => new Outbox({ pool: {} as never, queue, retentionSeconds: 3600 }),
    OutboxError,
    'the library refuses it too',
  );
});

t.test('svc worker refuses a bad SVC_RETENTION at start; svc --help lists it', async (t) => {
  const run = promisify(execFile);
  const svc = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));
  for (const bad of ['12h', 'a month']) {
    const out = await run(process.execPath, [svc, 'worker'], {
      env: { ...process.env, SVC_RETENTION: bad },
    }).catch((e: { code: number; stderr: string }) => e);
    t.equal((out as { code?: number }).code, 2, `SVC_RETENTION=${bad}: exit 2`);
    t.match((out as { stderr: string }).stderr, /configuration error: SVC_RETENTION=/);
  }
  const help = (await run(process.execPath, [svc, '--help'])).stdout;
  t.match(help.replace(/\s+/g, ' '), /SVC_RETENTION.*at least SVC_RETRY_HORIZON_SECONDS/);
});
