/** Destinations' hourly rollup: finished hours stored once, the rest live, percentiles close. */
import t from 'tap';
import { BUCKET_RATIO, histogramPercentile, HourlyRollup } from '../../../sender/console/rollup.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import { migrateSender } from '../../../sender/schema.js';
import { consoleSearchMigrations } from '../../../sender/console/search-migrations.js';
import { TrendStore } from '../../../sender/console/trends.js';
import { testDatabase } from '../../helpers/db.js';

t.test('histogram percentiles', async (t) => {
  t.equal(histogramPercentile([0, 0], 0.5), null);
  const h = new Array(64).fill(0);
  h[10] = 99;
  h[30] = 1;
  t.equal(histogramPercentile(h, 0.5), Math.round(BUCKET_RATIO ** 10.5));
  t.equal(histogramPercentile(h, 0.99), Math.round(BUCKET_RATIO ** 10.5));
  t.equal(histogramPercentile(h, 1), Math.round(BUCKET_RATIO ** 30.5));
});

t.test('rollup over the last day', async (t) => {
  const { pool, schema } = testDatabase(t, 'croll');
  await migrateSender(pool, schema);
  // 3 hours ago: 100 attempts to a.example (90 ok at 100 ms, 10 failed at 1000 ms); now: 10 to b.
  await pool.query(
    `INSERT INTO ${schema}.webhook_activity (outbox_id, idempotency_key, notification_type,
       attempt, status, url, http_status_code, response_time_ms, payload_size_bytes, fired_at, completed_at)
     SELECT g, 'k' || g, 'completed', 1, CASE WHEN g <= 90 THEN 'success' ELSE 'failed' END,
            'https://a.example/hook', CASE WHEN g <= 90 THEN 200 ELSE 500 END,
            CASE WHEN g <= 90 THEN 100 ELSE 1000 END, 10,
            now() - interval '3 hours', now() - interval '3 hours'
       FROM generate_series(1, 100) g
     UNION ALL
     SELECT 1000 + g, 'kb' || g, 'completed', 1, 'connection_error', 'https://b.example/x?token=1', NULL, NULL, 10,
            now() - interval '1 minute', now() - interval '1 minute'
       FROM generate_series(1, 10) g`,
  );
  const store = new ConsoleStore(pool, schema);
  const list = await store.destinations();
  t.same(
    list.map((d) => d.origin),
    ['https://a.example', 'https://b.example'],
  );
  const a = list[0]!;
  t.equal(a.day.attempts, 100);
  t.equal(a.day.succeeded, 90);
  t.equal(a.day.successRate, 0.9);
  t.ok(Math.abs(a.day.p50Ms! - 100) / 100 < 0.13, `p50 ${a.day.p50Ms} within 13 % of 100`);
  t.ok(Math.abs(a.day.p99Ms! - 1000) / 1000 < 0.13, `p99 ${a.day.p99Ms} within 13 % of 1000`);
  t.equal(a.hour.attempts, 0, 'nothing in the last hour');
  t.equal(a.series.length, 1);
  t.match(a.lastError, { status: 500 });
  const b = list[1]!;
  t.equal(b.hour.attempts, 10);
  t.equal(b.hour.p50Ms, null, 'no response, no latency');
  t.equal(b.day.attempts, 10);
  t.equal(b.day.successRate, 0);

  // The finished hour is stored: the attempts behind it are no longer read.
  const stored = await pool.query(
    `SELECT count(*)::int AS n FROM ${schema}.console_hourly WHERE origin = ''`,
  );
  t.ok(stored.rows[0].n >= 20, 'every finished hour of the day is marked done');
  await pool.query(`DELETE FROM ${schema}.webhook_activity WHERE url LIKE 'https://a.example%'`);
  const again = await store.destinations();
  t.equal(again.find((d) => d.origin === 'https://a.example')?.day.attempts, 100);

  // Concurrent catch-ups share one run.
  const r = new HourlyRollup(pool, schema);
  await Promise.all([r.catchUp(), r.catchUp()]);
});

t.test("each hour's all-origins row: written by the roll, backfilled by 077", async (t) => {
  const { pool, schema } = testDatabase(t, 'ctot');
  await migrateSender(pool, schema);
  // Two origins, 3 hours ago: 30 attempts at 100 ms (all ok) and 10 at 1000 ms (none ok).
  await pool.query(
    `INSERT INTO ${schema}.webhook_activity (outbox_id, idempotency_key, notification_type,
       attempt, status, url, http_status_code, response_time_ms, payload_size_bytes, fired_at, completed_at)
     SELECT g, 'k' || g, 'completed', 1, CASE WHEN g <= 30 THEN 'success' ELSE 'failed' END,
            CASE WHEN g <= 30 THEN 'https://a.example/h' ELSE 'https://b.example/h' END,
            CASE WHEN g <= 30 THEN 200 ELSE 500 END, CASE WHEN g <= 30 THEN 100 ELSE 1000 END, 10,
            now() - interval '3 hours', now() - interval '3 hours'
       FROM generate_series(1, 40) g`,
  );
  const r = new HourlyRollup(pool, schema);
  const fresh = await r.totals(24);
  const hour = fresh.hours.find((h) => h.attempts > 0)!;
  t.match(hour, { attempts: 40, succeeded: 30 });
  t.equal(
    hour.latency.reduce((s, n) => s + n, 0),
    40,
    'the histograms merged',
  );
  t.same(
    fresh.origins.sort((a, b) => a.origin.localeCompare(b.origin)),
    [
      { origin: 'https://a.example', attempts: 30, succeeded: 30 },
      { origin: 'https://b.example', attempts: 10, succeeded: 0 },
    ],
  );
  // Hours rolled up before 077 carry zeros in their marker row: the migration sums them.
  await pool.query(
    `UPDATE ${schema}.console_hourly SET attempts = 0, succeeded = 0, latency = '{}' WHERE origin = ''`,
  );
  t.same((await r.totals(24)).hours, [], 'a zero marker is no point');
  const m = consoleSearchMigrations.find((x) => x.id === '077_console_hourly_totals')!;
  await pool.query(m.sql(schema));
  t.same((await r.totals(24)).hours, fresh.hours, 'backfilled: the same sums');
  const trends = await new TrendStore(pool, schema).trends('day');
  t.match(trends.points, [{ succeeded: 30, failed: 10 }]);
  t.match(trends.failing, [{ origin: 'https://b.example', attempts: 10, failed: 10 }]);
});
