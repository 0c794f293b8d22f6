/**
 * The console's additions made after the outbox was split and partitioned (issue 26), on
 * the partitioned parents (PostgreSQL carries each index and column to every day's
 * partition, and to the days created later):
 *
 * - `outbox_event.task_type`: the task's type (`create_media_buy`...) of a task event,
 *   whose `notification_type` is its status (`working`, `completed`). The Event type filter
 *   matches `coalesce(task_type, notification_type)`. Events written before it have none
 *   (their type is their notification type).
 * - Prefix indexes (`text_pattern_ops`, for `LIKE 'x%'` under any collation) for the task,
 *   principal and media-buy search.
 * - `console_paused_origin`: destinations the operator paused (their deliveries wait).
 * - `webhook_activity.exchange`: an attempt in full (headers both ways, timing), bounded
 *   and masked by the worker (sender/delivery/exchange.ts).
 * - Payload search (076): `console_body_json`, the frozen body parsed as JSON (null for a
 *   body that is not JSON), which the payload index is built over when an operator enables
 *   it. The contains and payload indexes are not migrations: search-index.ts (issue 26:
 *   off by default, each costs every event's insert).
 * - Trends' hourly totals (077): each rolled-up hour's all-origins sums (rollup.ts).
 * Ids start at 070: after 060 (the partitioned outbox), which they need.
 */
import type { Migration } from '../../shared/infra/pg.js';

const ORDER = 'created_at DESC, id DESC';

export const consoleSearchMigrations: Migration[] = [
  {
    id: '070_console_task_type',
    sql: (s) => `
      ALTER TABLE ${s}.outbox_event ADD COLUMN task_type text;
      CREATE INDEX outbox_console_event_type ON ${s}.outbox_event
        ((coalesce(task_type, notification_type)), ${ORDER});
    `,
  },
  {
    id: '071_console_prefix_search',
    sql: (s) => `
      CREATE INDEX outbox_console_task_prefix ON ${s}.outbox_event (task_id text_pattern_ops)
        WHERE task_id IS NOT NULL;
      CREATE INDEX outbox_console_principal_prefix ON ${s}.outbox_event
        (principal_id text_pattern_ops) WHERE principal_id IS NOT NULL;
      CREATE INDEX outbox_console_buy_prefix ON ${s}.outbox_event (media_buy_id text_pattern_ops)
        WHERE media_buy_id IS NOT NULL;
    `,
  },
  {
    id: '072_console_paused_origin',
    sql: (s) => `
      CREATE TABLE ${s}.console_paused_origin (
        origin text PRIMARY KEY,
        paused_at timestamptz NOT NULL DEFAULT now(),
        operator text NOT NULL
      );
    `,
  },
  {
    // One index per searched column, not two: a b-tree in text_pattern_ops answers both
    // the exact match (in the list's order) and the prefix, so 071's prefix indexes and the
    // plain ones merge; the type index 070 replaced goes. Every index here is written by
    // each event's insert, the sender's hottest statement (issue 19's CPU per delivery).
    id: '073_console_one_index_per_column',
    sql: (s) => `
      DROP INDEX ${s}.outbox_console_task_prefix;
      DROP INDEX ${s}.outbox_console_principal_prefix;
      DROP INDEX ${s}.outbox_console_buy_prefix;
      DROP INDEX ${s}.outbox_console_type;
      DROP INDEX ${s}.outbox_console_task;
      DROP INDEX ${s}.outbox_console_principal;
      DROP INDEX ${s}.outbox_console_buy;
      CREATE INDEX outbox_console_task ON ${s}.outbox_event (task_id text_pattern_ops, ${ORDER})
        WHERE task_id IS NOT NULL;
      CREATE INDEX outbox_console_principal ON ${s}.outbox_event
        (principal_id text_pattern_ops, ${ORDER}) WHERE principal_id IS NOT NULL;
      CREATE INDEX outbox_console_buy ON ${s}.outbox_event (media_buy_id text_pattern_ops, ${ORDER})
        WHERE media_buy_id IS NOT NULL;
    `,
  },
  {
    // An attempt in full (issue 26): request and response headers and timing, as jsonb
    // (at most ~12 KB, written by the settle). Nullable, no default, no index: adding it
    // rewrites nothing and costs an insert nothing when null (attempts recorded before,
    // or by the activity log's fallback, have none).
    id: '074_activity_exchange',
    sql: (s) => `
      ALTER TABLE ${s}.webhook_activity ADD COLUMN exchange jsonb;
    `,
  },
  {
    // The payload search reads the body as JSON through this function: a body that is not
    // JSON (or that jsonb refuses: a \u0000 escape, a lone surrogate) reads as null, so an
    // insert never fails for the payload index's sake when an operator has built it
    // (search-index.ts). IMMUTABLE holds: the same bytes always parse the same way.
    // PARALLEL UNSAFE: its exception block is a subtransaction, which a parallel worker
    // cannot start ("cannot start subtransactions during a parallel operation": a payload
    // search planned in parallel failed on the bench's 1M set). The indexes themselves
    // (contains: pg_trgm; payload) are not built here: each costs every event's insert, so
    // they are the operator's choice (`svc deliveries search-index`). Its id is not the
    // one h26e's unmerged 076 had, so a schema that ran that one gets this definition.
    id: '076_console_body_json',
    sql: (s) => `
      CREATE OR REPLACE FUNCTION ${s}.console_body_json(body bytea) RETURNS jsonb
        LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE AS $f$
      BEGIN
        RETURN convert_from(body, 'UTF8')::jsonb;
      EXCEPTION WHEN others THEN
        RETURN NULL;
      END
      $f$;
    `,
  },
  {
    // Trends' day and week read one all-origins row per hour: the hour's done marker
    // (origin '') now carries the sums (rollup.ts); the hours rolled up before get theirs.
    id: '077_console_hourly_totals',
    sql: (s) => `
      UPDATE ${s}.console_hourly m SET attempts = t.a, succeeded = t.ok, latency = t.l
        FROM (SELECT c.hour, sum(c.attempts)::int AS a, sum(c.succeeded)::int AS ok,
                     ARRAY(SELECT sum(x)::int
                             FROM ${s}.console_hourly c2, unnest(c2.latency) WITH ORDINALITY u(x, i)
                            WHERE c2.hour = c.hour AND c2.origin <> ''
                            GROUP BY i ORDER BY i) AS l
                FROM ${s}.console_hourly c WHERE c.origin <> '' GROUP BY c.hour) t
       WHERE m.origin = '' AND m.hour = t.hour;
    `,
  },
];
