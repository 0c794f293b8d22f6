/**
 * Attempts whose worker died before recording them (issue 13, item 7). A claim marks its
 * row's attempt open (`attempt_started_at`, committed durably before the request goes on
 * the wire) and the settle clears the mark in the statement that records the outcome. A
 * mark still set when the row is claimed again, or after its lease lapsed (the reconciler),
 * means the attempt may have reached the wire and nobody recorded it: it is recorded (or
 * its `pending` record closed) as `timeout` with the error `attempt_interrupted`. An
 * outcome already recorded (a settle that went through after all, a buffered record) is
 * never overwritten.
 */
import type { Pool } from '../../shared/infra/pg.js';

/** error_message of an attempt recorded as interrupted (its outcome is unknown). */
export const INTERRUPTED_ATTEMPT = 'attempt_interrupted';

/**
 * The URL as webhook_activity records it (as `recordedUrl` does): no query, no fragment,
 * no user info, which may carry tokens.
 */
function recordedUrlSql(col: string): string {
  return `regexp_replace(split_part(split_part(${col}, '#', 1), '?', 1),
            '^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@', '\\1')`;
}

/**
 * INSERT of interrupted attempts from `source`, a relation with the outbox row's columns
 * (id, media_buy_id, media_buy_ids, principal_id, subscriber_id, idempotency_key,
 * notification_id, notification_type, sequence_number, target_url), plus `attempt`,
 * `payload_size_bytes` and `fired_at` (when the attempt's claim started it). In key order,
 * as the other writers of the log insert (no lock-order deadlock with them).
 */
export function insertInterruptedSql(schema: string, source: string): string {
  return `INSERT INTO ${schema}.webhook_activity AS a (outbox_id, media_buy_id, media_buy_ids,
           principal_id, subscriber_id, idempotency_key, notification_id, notification_type,
           sequence_number, attempt, status, url, payload_size_bytes, error_message, fired_at,
           completed_at)
         SELECT i.id, i.media_buy_id, i.media_buy_ids, i.principal_id, i.subscriber_id,
                i.idempotency_key, i.notification_id, i.notification_type, i.sequence_number,
                i.attempt, 'timeout', ${recordedUrlSql('i.target_url')}, i.payload_size_bytes,
                '${INTERRUPTED_ATTEMPT}', i.fired_at, greatest(now(), i.fired_at)
           FROM ${source} i
          ORDER BY i.id, i.attempt
         ON CONFLICT (outbox_id, attempt) DO UPDATE
           SET status = 'timeout', error_message = EXCLUDED.error_message,
               completed_at = EXCLUDED.completed_at
           WHERE a.status = 'pending'`;
}

/**
 * "`alias` is pending" for statements that find their rows by id: written so no index can
 * serve it (a generic plan on the state pool otherwise took the partial state index with
 * the id range and filtered every pending row of the day for the batch's ids), leaving
 * the primary key (`id = ANY($1)`) as the way in.
 */
export function pendingById(alias: string): string {
  return `${alias}.state || '' = 'pending'`;
}

/**
 * A table of the outbox: the partitioned parent, or with `day` (a partition's suffix,
 * `p20261128`) that day's partition itself. A statement whose rows are all of one day runs
 * on the day's tables: no partitions to lock, prune and set up as it starts (with a month
 * of days, three tables of them), no tuple routing (see `Outbox.statementsFor`).
 */
export function table(schema: string, name: string, day?: string): string {
  return day ? `${schema}.${name}_${day}` : `${schema}.${name}`;
}

/** What either claim statement returns of each row it claimed (`id`: the row's id column). */
const claimedColumns = (
  id: string,
) => `${id}::text AS id, idempotency_key, body, target_url, auth_mode, auth_secret,
          channel, notification_type, notification_id, media_buy_id, media_buy_ids,
          principal_id, subscriber_id, sequence_number, attempts, horizon_seconds,
          (extract(epoch from first_attempt_at) * 1000)::float8 AS first_ms,
          (extract(epoch from now()) * 1000)::float8 AS now_ms`;

/** The event's columns a claim hands the worker (from outbox_event `e`). */
const EVENT_COLUMNS = `e.idempotency_key, e.body, e.target_url, e.auth_mode, e.auth_secret,
          e.channel, e.notification_type, e.notification_id, e.media_buy_id, e.media_buy_ids,
          e.principal_id, e.subscriber_id, e.sequence_number`;

/**
 * The claim's update (of the narrow `outbox_delivery o` joined to `v(id, lease)` and the
 * event it hands the worker): counts the attempt, starts
 * the horizon clock, leases the row past the attempt's timeout and marks the attempt open.
 * With `durable` the commit waits for the WAL flush even on a pool that commits
 * asynchronously (`set_config(..., true)` lasts the transaction: no extra round trip).
 * `id = ANY($1)` lets the planner find the rows by primary key: with the join alone, on a
 * fresh outbox without statistics it joined every pending row to the batch (a 20,000-row
 * backlog: 97 ms per 50-row quick claim against 1.7 ms; 1-worker throughput halved in
 * `bench sender`).
 */
function claimUpdate(
  s: string,
  durable: boolean,
  from: string,
  where: string,
  day?: string,
): string {
  return `UPDATE ${table(s, 'outbox_delivery', day)} o
            SET attempts = attempts + 1, first_attempt_at = coalesce(first_attempt_at, now()),
                next_attempt_at = now() + v.lease * interval '1 millisecond',
                attempt_started_at = now()
           FROM ${from}, ${table(s, 'outbox_event', day)} e${durable ? ", (SELECT set_config('synchronous_commit', 'on', true)) AS durable" : ''}
          WHERE o.id = v.id AND o.id = ANY($1::bigint[]) AND ${pendingById('o')}${where}
            AND o.id >= $3::bigint AND o.id < $4::bigint
            AND e.id = o.id AND e.id = ANY($1::bigint[]) AND e.id >= $3::bigint AND e.id < $4::bigint
            AND o.next_attempt_at <= now() + interval '50 milliseconds'
            AND (o.first_attempt_at IS NULL
                 OR o.first_attempt_at + o.horizon_seconds * interval '1 second' > now())`;
}

/**
 * The claim of rows for one attempt each ($1 ids, $2 lease ms) whose previous attempt is
 * not open: every claim but the first after a worker died mid-attempt. It is the claim of
 * `claimSql` without the look-up and the insert of an interrupted attempt, which cost the
 * claim about as much again as the update itself (issue 13 latency attribution, bench
 * `claim-cost`); a row it leaves unclaimed goes through `claimSql`. With `durable` the
 * request goes on the wire only after the commit's WAL flush, so a database crash cannot
 * forget an attempt that was sent.
 */
export function quickClaimSql(schema: string, durable: boolean, day?: string): string {
  const update = claimUpdate(
    schema,
    durable,
    'unnest($1::bigint[], $2::int[]) AS v(id, lease)',
    '\n            AND o.attempt_started_at IS NULL',
    day,
  );
  return `${update}\n          RETURNING ${claimedColumns('o.id')}`;
}

/**
 * The claim of rows for one attempt each ($1 ids, $2 lease ms), whatever their mark: as
 * `quickClaimSql`, and records the row's previous attempt as interrupted when its mark is
 * still set (its worker died before settling), in the same durable commit.
 */
export function claimSql(schema: string, durable: boolean): string {
  const s = schema;
  return `WITH v AS (SELECT * FROM unnest($1::bigint[], $2::int[]) AS v(id, lease)),
       open AS (
         SELECT p.id, p.attempt_started_at FROM ${s}.outbox_delivery p JOIN v ON p.id = v.id
          WHERE p.attempt_started_at IS NOT NULL AND p.id = ANY($1::bigint[])
            AND p.id >= $3::bigint AND p.id < $4::bigint
       ), claimed AS (
         ${claimUpdate(s, durable, 'v', '')}
          RETURNING o.id, o.attempts, o.horizon_seconds, o.first_attempt_at, ${EVENT_COLUMNS}
       ), interrupted AS (
         SELECT c.*, c.attempts - 1 AS attempt, octet_length(c.body) AS payload_size_bytes,
                open.attempt_started_at AS fired_at
           FROM claimed c JOIN open ON open.id = c.id
          WHERE c.attempts > 1
       ), closed AS (
         ${insertInterruptedSql(s, 'interrupted')}
       )
       SELECT ${claimedColumns('id')} FROM claimed`;
}

/**
 * The statement of `closeInterruptedAttempts` ($1 margin ms, $2 limit, $3 ids or null);
 * without ids it finds its rows along the due index (due-migration.ts).
 */
export function closeInterruptedSql(schema: string): string {
  return `WITH lapsed AS (
     UPDATE ${schema}.outbox_delivery o SET attempt_started_at = NULL
       FROM (SELECT id, attempt_started_at FROM ${schema}.outbox_delivery
              WHERE attempt_started_at IS NOT NULL AND state = 'pending'
                AND ($3::bigint[] IS NULL OR id = ANY($3::bigint[]))
                AND ($3::bigint[] IS NOT NULL
                     OR (next_attempt_at < now() - $1::int * interval '1 millisecond'
                         -- implied by the line above (due-migration.ts): the due index
                         AND due_at < now() - $1::int * interval '1 millisecond'
                                      + interval '1 second'))
              ORDER BY id LIMIT $2
              FOR UPDATE SKIP LOCKED) AS d
       JOIN ${schema}.outbox_event e ON e.id = d.id
      WHERE o.id = d.id
      RETURNING o.id, e.media_buy_id, e.media_buy_ids, e.principal_id, e.subscriber_id,
        e.idempotency_key, e.notification_id, e.notification_type, e.sequence_number,
        e.target_url, o.attempts AS attempt, octet_length(e.body) AS payload_size_bytes,
        d.attempt_started_at AS fired_at
   ), recorded AS (
     ${insertInterruptedSql(schema, 'lapsed')}
   )
   SELECT count(*)::int AS n FROM lapsed`;
}

/**
 * The reconciler's part: records the open attempts of rows whose claim lease lapsed more
 * than `marginMs` ago (their worker is dead: a live one renews the lease every third of
 * it) and clears their mark; with `ids`, those rows' open attempts whatever their lease
 * (a row expiring). Workers running it at once split the rows (SKIP LOCKED). Resolves to
 * the number of attempts recorded.
 */
export async function closeInterruptedAttempts(
  pool: Pool,
  schema: string,
  options: { marginMs?: number; ids?: string[]; limit?: number } = {},
): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(closeInterruptedSql(schema), [
    Math.round(options.marginMs ?? 1000),
    options.limit ?? 1000,
    options.ids ?? null,
  ]);
  return rows[0]?.n ?? 0;
}

/**
 * The settle of attempts ($1..$16, one array element per row; see `Outbox.settle`; $16 the
 * attempt's exchange as JSON text): the row's state, its attempt's activity record (even
 * when another job finished the row meanwhile: the attempt did reach the wire), the
 * clearing of the attempt's open mark, and the closing of records left pending by
 * interrupted earlier attempts, in one statement. $17, $18: the ids' days. With `day`, on
 * that day's partitions (`table`). $19: whether any row settles a retry or has no record, the only
 * rows with earlier records to close; false skips that part's index probes (one per id)
 * as the plan starts (a batch of first attempts, nearly every settle).
 */
export function settleSql(s: string, day?: string): string {
  const delivery = table(s, 'outbox_delivery', day);
  const activity = table(s, 'webhook_activity', day);
  const event = table(s, 'outbox_event', day);
  return `WITH v AS (
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::text[], $5::int[],
             $6::int[], $7::text[], $8::int[], $9::int[], $10::text[], $11::text[],
             $12::timestamptz[], $13::timestamptz[], $14::text[], $15::text[], $16::text[])
           AS v(id, state, status, error, delay, attempt, rstatus, rcode, rtime, rerror, url,
                fired, done, snippet, kid, exch)
       ), settled AS (
         UPDATE ${delivery} o
            SET state = v.state, last_status = v.status, last_error = v.error,
                completed_at = CASE WHEN v.state = 'pending' THEN NULL ELSE now() END,
                -- The attempt is recorded here: no longer open (unless a later claim's is).
                attempt_started_at = CASE WHEN v.attempt IS NULL OR v.attempt = o.attempts
                  THEN NULL ELSE o.attempt_started_at END,
                next_attempt_at = CASE WHEN v.state = 'pending'
                  THEN now() + v.delay * interval '1 millisecond' ELSE o.next_attempt_at END,
                due_at = CASE WHEN v.state = 'pending'
                  THEN now() + v.delay * interval '1 millisecond' ELSE o.due_at END
           FROM v
          WHERE o.id = v.id AND o.id = ANY($1::bigint[]) AND ${pendingById('o')}
            AND o.id >= $17::bigint AND o.id < $18::bigint
          RETURNING o.id::text AS id,
            (extract(epoch from o.next_attempt_at) * 1000)::float8 AS next_ms
       ), interrupted AS (
         UPDATE ${activity} a
            SET status = 'timeout', error_message = 'attempt_interrupted',
                completed_at = coalesce(v.fired, now())
           FROM v
          WHERE $19::boolean AND (v.attempt IS NULL OR v.attempt > 1)
            AND a.outbox_id = v.id AND a.outbox_id = ANY($1::bigint[]) AND a.status = 'pending'
            AND a.outbox_id >= $17::bigint AND a.outbox_id < $18::bigint
            AND (v.attempt IS NULL OR a.attempt < v.attempt)
       ), recorded AS (
         INSERT INTO ${activity} AS a (outbox_id, media_buy_id, media_buy_ids,
           principal_id, subscriber_id, idempotency_key, notification_id, notification_type,
           sequence_number, attempt, status, url, http_status_code, response_time_ms,
           payload_size_bytes, error_message, fired_at, completed_at, response_snippet,
           key_id, exchange)
         SELECT DISTINCT ON (v.id, v.attempt) e.id, e.media_buy_id, e.media_buy_ids,
                e.principal_id, e.subscriber_id, e.idempotency_key, e.notification_id,
                e.notification_type, e.sequence_number, v.attempt, v.rstatus, v.url, v.rcode,
                v.rtime, octet_length(e.body), v.rerror, v.fired, v.done, v.snippet, v.kid,
                v.exch::jsonb
           FROM v JOIN ${event} e ON e.id = v.id AND e.id = ANY($1::bigint[])
            AND e.id >= $17::bigint AND e.id < $18::bigint
          WHERE v.attempt IS NOT NULL
         ON CONFLICT (outbox_id, attempt) DO UPDATE
           SET status = EXCLUDED.status, http_status_code = EXCLUDED.http_status_code,
               response_time_ms = EXCLUDED.response_time_ms,
               error_message = EXCLUDED.error_message, completed_at = EXCLUDED.completed_at,
               response_snippet = EXCLUDED.response_snippet, key_id = EXCLUDED.key_id,
               exchange = EXCLUDED.exchange
       )
       SELECT * FROM settled`;
}
