/**
 * The console's additions to the sender schema: one index per list filter, each ending in
 * the list's order (created_at DESC, id DESC) so a filtered page is an index range read
 * that stops after `limit` rows, the attempts window the Destinations view aggregates
 * (index-only), who asked for an attempt (`requested_by`), and the audit of actions.
 * Ids start at 050 so the sender's own numbering can grow below them.
 */
import type { Migration } from '../../shared/infra/pg.js';

/** The origin of an outbox row's target, as every console statement and index spells it. */
export function originSql(column: string): string {
  return `lower(split_part(${column}, '/', 1) || '//' || split_part(split_part(split_part(${column}, '/', 3), '?', 1), '#', 1))`;
}

export const consoleMigrations: Migration[] = [
  {
    id: '050_console_outbox_filters',
    sql: (s) => `
      CREATE INDEX outbox_console_created ON ${s}.outbox (created_at DESC, id DESC);
      CREATE INDEX outbox_console_state ON ${s}.outbox (state, created_at DESC, id DESC);
      CREATE INDEX outbox_console_origin ON ${s}.outbox
        ((${originSql('target_url')}), created_at DESC, id DESC);
      CREATE INDEX outbox_console_buy ON ${s}.outbox (media_buy_id, created_at DESC, id DESC)
        WHERE media_buy_id IS NOT NULL;
      CREATE INDEX outbox_console_principal ON ${s}.outbox (principal_id, created_at DESC, id DESC)
        WHERE principal_id IS NOT NULL;
      CREATE INDEX outbox_console_task ON ${s}.outbox (task_id, created_at DESC, id DESC)
        WHERE task_id IS NOT NULL;
      CREATE INDEX outbox_console_type ON ${s}.outbox (notification_type, created_at DESC, id DESC);
    `,
  },
  {
    // Destinations: attempts of the last day read from the index alone (no heap visit).
    id: '051_console_activity',
    sql: (s) => `
      ALTER TABLE ${s}.webhook_activity ADD COLUMN requested_by text;
      CREATE INDEX webhook_activity_console_window ON ${s}.webhook_activity (fired_at)
        INCLUDE (url, status, response_time_ms);
    `,
  },
  {
    id: '052_console_audit',
    sql: (s) => `
      CREATE TABLE ${s}.console_audit (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now(),
        operator text NOT NULL,
        via text NOT NULL,
        action text NOT NULL,
        target text NOT NULL,
        detail jsonb NOT NULL DEFAULT '{}'
      );
      CREATE INDEX console_audit_at ON ${s}.console_audit (at DESC);
    `,
  },
];

/**
 * Destinations' hourly rollup: attempts per origin and finished hour with a latency
 * histogram, computed once per hour by the console (rollup.ts) so the day view reads 24
 * small rows per origin instead of a day of attempts. `origin = ''` marks an hour done.
 */
consoleMigrations.push({
  id: '053_console_hourly',
  sql: (s) => `
    CREATE TABLE ${s}.console_hourly (
      hour timestamptz NOT NULL,
      origin text NOT NULL,
      attempts integer NOT NULL,
      succeeded integer NOT NULL,
      latency integer[] NOT NULL,
      PRIMARY KEY (hour, origin)
    );
  `,
});

/**
 * Stopped and expired deliveries per origin (under 1 % of rows): what "recover" picks, and
 * the list filtered by origin and one of those states, without walking the origin's
 * delivered rows.
 */
consoleMigrations.push({
  id: '054_console_failed_origin',
  sql: (s) => `
    CREATE INDEX outbox_console_failed_origin ON ${s}.outbox
      ((${originSql('target_url')}), created_at DESC, id DESC)
      WHERE state IN ('stopped', 'expired');
  `,
});

/**
 * The media-buy filter covers aggregated reports too: their rows name no single buy
 * (`media_buy_id` null) but list the buys they cover in `media_buy_ids`. Partial GIN, as on
 * webhook_activity: only aggregated rows are indexed, per-buy inserts do no extra work.
 */
consoleMigrations.push({
  id: '055_console_outbox_buys',
  sql: (s) => `
    CREATE INDEX outbox_console_buys ON ${s}.outbox USING gin (media_buy_ids)
      WHERE media_buy_ids IS NOT NULL;
  `,
});

/**
 * Every index the console's migrations add (outbox and webhook_activity), for the
 * sender bench's A/B of their cost on the insert and settle path (bench/sender.ts).
 */
export const CONSOLE_INDEXES = [
  'outbox_console_created',
  'outbox_console_state',
  'outbox_console_origin',
  'outbox_console_buy',
  'outbox_console_principal',
  'outbox_console_task',
  'outbox_console_failed_origin',
  'outbox_console_buys',
  'webhook_activity_console_window',
  // Issue 26 (search-migrations.ts): the event type (the prefix searches use the task,
  // principal and buy indexes above, in text_pattern_ops since 073).
  'outbox_console_event_type',
  // Not the contains and payload search indexes: off unless an operator enables them
  // (search-index.ts), their cost measured by `npm run bench -- console-write`.
] as const;
