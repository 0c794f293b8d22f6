/**
 * Seeds a sender schema with `deliveries` outbox rows spread over the last 30 days and
 * `attemptsPer` attempt records each (generate_series, in SQL): the console bench's 1M /
 * 3M, and the plan tests' few thousand. 20 destination origins, 500 principals, buys and
 * tasks shared by a few rows each (one row in 30 an aggregated report over two buys); 99 % delivered, the rest stopped, expired or pending.
 */
import type { Pool } from '../shared/infra/pg.js';

export async function seedConsoleData(
  pool: Pool,
  schema: string,
  o: { deliveries: number; attemptsPer: number },
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SET synchronous_commit = off');
    await client.query(`SET maintenance_work_mem = '256MB'`);
    // In chunks, so a million rows do not make one huge transaction.
    const chunk = 100_000;
    for (let start = 1; start <= o.deliveries; start += chunk) {
      const end = Math.min(o.deliveries, start + chunk - 1);
      await client.query(
        `INSERT INTO ${schema}.outbox (idempotency_key, body, target_url, auth_mode, channel,
           notification_type, media_buy_id, principal_id, task_id, state, created_at,
           first_attempt_at, attempts, next_attempt_at, horizon_seconds, last_status, last_error,
           completed_at, media_buy_ids)
         SELECT 'seed_' || g, convert_to('{"idempotency_key":"seed_' || g || '","status":"completed"}', 'UTF8'),
                'https://buyer-' || (g % 20) || '.example/hooks/' || (g % 7),
                'rfc9421', CASE WHEN g % 3 = 0 THEN 'reporting' ELSE 'task' END,
                (ARRAY['completed', 'failed', 'working', 'scheduled', 'final'])[g % 5 + 1],
                CASE WHEN g % 30 = 0 THEN NULL ELSE 'mb_' || (g % 50000) END,
                'p_' || (g % 500), 'task_' || (g % 250000),
                s.state, c.at, c.at, $3, c.at + interval '1 minute', 86400,
                CASE s.state WHEN 'delivered' THEN 200 WHEN 'pending' THEN 503 ELSE 410 END,
                CASE WHEN s.state = 'delivered' THEN NULL ELSE 'http_410' END,
                CASE WHEN s.state = 'pending' THEN NULL ELSE c.at + interval '2 seconds' END,
                -- One row in 30 an aggregated report over two buys (no media_buy_id).
                CASE WHEN g % 30 = 0
                  THEN ARRAY['mb_' || (g % 50000), 'mb_' || ((g + 1) % 50000)] END
           FROM generate_series($1::int, $2::int) g,
                LATERAL (SELECT now() - interval '30 days' * (1 - g::float8 / $4) AS at) c,
                LATERAL (SELECT CASE WHEN g % 1000 < 5 THEN 'stopped' WHEN g % 1000 < 8 THEN 'expired'
                                     WHEN g % 1000 < 10 THEN 'pending' ELSE 'delivered' END AS state) s`,
        [start, end, o.attemptsPer, o.deliveries],
      );
    }
    const { rows } = await client.query(
      `SELECT min(id)::text AS lo, max(id)::text AS hi FROM ${schema}.outbox`,
    );
    // BigInt: ids carry their day (day << 44 | sequence), beyond a double's 2^53.
    const lo = BigInt(rows[0].lo);
    const hi = BigInt(rows[0].hi);
    const step = BigInt(chunk);
    for (let start = lo; start <= hi; start += step) {
      await client.query(
        `INSERT INTO ${schema}.webhook_activity (outbox_id, media_buy_id, principal_id,
           idempotency_key, notification_type, attempt, status, url, http_status_code,
           response_time_ms, payload_size_bytes, error_message, fired_at, completed_at)
         SELECT o.id, o.media_buy_id, o.principal_id, o.idempotency_key, o.notification_type,
                a, CASE WHEN a = o.attempts AND o.state = 'delivered' THEN 'success' ELSE 'failed' END,
                o.target_url, CASE WHEN a = o.attempts AND o.state = 'delivered' THEN 200 ELSE 503 END,
                (o.id * 7 + a * 13) % 500, octet_length(o.body),
                CASE WHEN a = o.attempts AND o.state = 'delivered' THEN NULL ELSE 'http_503' END,
                o.created_at + a * interval '1 second', o.created_at + a * interval '1 second' + interval '50 milliseconds'
           FROM ${schema}.outbox o, generate_series(1, $3::int) a
          WHERE o.id BETWEEN $1 AND $2`,
        [String(start), String(hi < start + step - 1n ? hi : start + step - 1n), o.attemptsPer],
      );
    }
    // The tables under the `outbox` view (sender/outbox/storage-migration.ts).
    for (const table of ['outbox_event', 'outbox_delivery', 'webhook_activity']) {
      await client.query(`VACUUM ANALYZE ${schema}.${table}`);
    }
  } finally {
    client.release();
  }
}
