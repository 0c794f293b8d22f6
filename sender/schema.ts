/**
 * The sender's tables, in one PostgreSQL schema (default `sender`): the outbox (the record
 * of every event and its delivery state) and webhook_activity (one row per attempt).
 */
import { migrate, type Migration, type Pool } from '../shared/infra/pg.js';
import { consoleMigrations } from './console/migrations.js';
import { consoleSearchMigrations } from './console/search-migrations.js';
import { partitionedOutbox } from './outbox/storage-migration.js';
import { dueIndex } from './outbox/due-migration.js';
import { ascendingIndexes } from './outbox/index-order-migration.js';
import {
  finishLegacyPartition,
  maintainPartitions,
  nameAllPartitions,
} from './outbox/partitions.js';

export const DEFAULT_SENDER_SCHEMA = 'sender';

export const senderMigrations: Migration[] = [
  {
    id: '001_outbox',
    sql: (s) => `
      CREATE TABLE ${s}.outbox (
        id bigserial PRIMARY KEY,
        idempotency_key text NOT NULL UNIQUE,
        body bytea NOT NULL,
        target_url text NOT NULL,
        auth_mode text NOT NULL CHECK (auth_mode IN ('rfc9421', 'hmac', 'bearer')),
        auth_secret text,
        channel text NOT NULL,
        notification_type text NOT NULL,
        notification_id text,
        media_buy_id text,
        principal_id text,
        task_id text,
        sequence_number integer,
        subscriber_id text,
        state text NOT NULL DEFAULT 'pending'
          CHECK (state IN ('pending', 'delivered', 'stopped', 'expired')),
        created_at timestamptz NOT NULL DEFAULT now(),
        first_attempt_at timestamptz,
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        horizon_seconds integer NOT NULL,
        last_status integer,
        last_error text,
        completed_at timestamptz
      );
      -- The reconciler's scan: only pending rows, by due time.
      CREATE INDEX outbox_pending_due ON ${s}.outbox (next_attempt_at) WHERE state = 'pending';
    `,
  },
  {
    id: '002_webhook_activity',
    sql: (s) => `
      CREATE TABLE ${s}.webhook_activity (
        id bigserial PRIMARY KEY,
        outbox_id bigint NOT NULL,
        media_buy_id text,
        principal_id text,
        subscriber_id text,
        idempotency_key text NOT NULL,
        notification_id text,
        notification_type text NOT NULL,
        sequence_number integer,
        attempt integer NOT NULL,
        status text NOT NULL
          CHECK (status IN ('success', 'failed', 'timeout', 'connection_error', 'pending')),
        url text NOT NULL,
        http_status_code integer,
        response_time_ms integer,
        payload_size_bytes integer NOT NULL,
        error_message text,
        fired_at timestamptz NOT NULL,
        completed_at timestamptz
      );
      CREATE INDEX webhook_activity_buy ON ${s}.webhook_activity (principal_id, media_buy_id, fired_at DESC);
      CREATE INDEX webhook_activity_age ON ${s}.webhook_activity ((coalesce(completed_at, fired_at)));
    `,
  },
  {
    // One record per attempt, completed in place: an attempt's pending record and its
    // outcome meet on this key.
    id: '003_webhook_activity_attempt',
    sql: (s) => `
      CREATE UNIQUE INDEX webhook_activity_attempt ON ${s}.webhook_activity (outbox_id, attempt);
    `,
  },
  {
    // The few records still pending, for closing an interrupted attempt's record without
    // scanning the log (30 days of attempts).
    id: '004_webhook_activity_pending',
    sql: (s) => `
      CREATE INDEX webhook_activity_pending ON ${s}.webhook_activity (outbox_id)
        WHERE status = 'pending';
    `,
  },
  {
    // An aggregated report's row covers several buys and has no media_buy_id: the buys
    // its payload covers, for reading its pending attempt per buy. No index: list() finds
    // it among the pending rows as it finds per-buy ones.
    id: '005_outbox_media_buy_ids',
    sql: (s) => `
      ALTER TABLE ${s}.outbox ADD COLUMN media_buy_ids text[];
    `,
  },
  {
    // The same buys on each attempt record, so list() shows it under every one of them.
    // Partial GIN: only aggregated records are indexed, per-buy inserts do no extra work.
    id: '006_webhook_activity_media_buy_ids',
    sql: (s) => `
      ALTER TABLE ${s}.webhook_activity ADD COLUMN media_buy_ids text[];
      CREATE INDEX webhook_activity_buys ON ${s}.webhook_activity USING gin (media_buy_ids)
        WHERE media_buy_ids IS NOT NULL;
    `,
  },
  {
    // What the operator console shows per attempt (#14): the start of the receiver's
    // answer, bounded and sanitised by the worker (delivery/snippet.ts), and the kid of the
    // key that signed it (null for HMAC and Bearer). Nullable, no index: free for inserts.
    id: '007_webhook_activity_response',
    sql: (s) => `
      ALTER TABLE ${s}.webhook_activity ADD COLUMN response_snippet text,
        ADD COLUMN key_id text;
    `,
  },
  {
    // When the row's latest claim started an attempt whose outcome is not settled yet (set
    // by the claim, in its durable commit; cleared by the settle). A claim that finds it
    // still set, or the reconciler once the lease lapsed, records that attempt as
    // interrupted: an attempt that reached the wire is recorded even if its worker died
    // before writing anything. The partial index holds only those open attempts.
    id: '008_outbox_attempt_started_at',
    sql: (s) => `
      ALTER TABLE ${s}.outbox ADD COLUMN attempt_started_at timestamptz;
      CREATE INDEX outbox_open_attempt ON ${s}.outbox (next_attempt_at)
        WHERE attempt_started_at IS NOT NULL AND state = 'pending';
    `,
  },
];

/**
 * The tables as 8faf630 left them: what `partitionedOutbox` (060) migrates from. Exported
 * for the migration test, which builds an old deployment with it.
 */
export const unpartitionedMigrations: Migration[] = [...senderMigrations, ...consoleMigrations];

/**
 * Creates or upgrades the sender's tables in `schema`, and makes sure today's partitions
 * and the days ahead exist (sender/outbox/partitions.ts): a process may write at once.
 */
export async function migrateSender(pool: Pool, schema = DEFAULT_SENDER_SCHEMA): Promise<string[]> {
  // The operator console's indexes and audit table (sender/console/migrations.ts), then
  // the split and partitioned outbox (after them: it moves their indexes).
  const applied = await migrate(pool, schema, [
    ...unpartitionedMigrations,
    partitionedOutbox,
    dueIndex,
    // The console's search columns and indexes, and paused destinations (issue 26).
    ...consoleSearchMigrations,
    // The list indexes ascending, the delivery pages' fillfactor (issue 19's CPU per delivery).
    ascendingIndexes,
  ]);
  if (applied.includes(partitionedOutbox.id)) await finishLegacyPartition(pool, schema);
  else if (applied.includes(ascendingIndexes.id)) await nameAllPartitions(pool, schema);
  await maintainPartitions(pool, schema);
  return applied;
}
