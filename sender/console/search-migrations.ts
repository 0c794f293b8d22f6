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
];
