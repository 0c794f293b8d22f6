/**
 * Migration 060 (issue 19, item 1): today's one-table outbox and unpartitioned activity
 * log become `outbox_event` (the frozen event, written once), `outbox_delivery` (the
 * small mutable state a claim and a settle touch: its key and two partial indexes)
 * and a partitioned `webhook_activity`, all partitioned by day on the outbox id
 * (partitions.ts). A claim and a retry's settle are HOT updates of outbox_delivery
 * (no index covers what they change); a final settle writes its primary key only.
 * Every row keeps its id, so a job already in Redis finds its row and
 * nothing is lost or sent twice; the rows written before it sit in the `legacy` partition
 * until retention drops it. `outbox` stays as a view of the two tables (with a trigger
 * for tools that insert or update through it); the service writes the tables. One
 * transaction: workers of the old code must be stopped first (sender/README.md).
 */
import type { Migration } from '../../shared/infra/pg.js';
import { originSql } from '../console/migrations.js';
import { DELIVERY_FILLFACTOR, ID_SHIFT, newIdSql } from './partitions.js';

export const EVENT_COLUMNS = `id, idempotency_key, created_at, target_url, auth_mode, auth_secret,
  channel, notification_type, notification_id, media_buy_id, media_buy_ids, principal_id,
  task_id, sequence_number, subscriber_id, body`;

export const DELIVERY_COLUMNS = `id, created_at, origin, state, attempts, first_attempt_at,
  next_attempt_at, horizon_seconds, attempt_started_at, completed_at, last_status, last_error`;

const ACTIVITY_COLUMNS = `id, outbox_id, media_buy_id, media_buy_ids, principal_id,
  subscriber_id, idempotency_key, notification_id, notification_type, sequence_number,
  attempt, status, url, http_status_code, response_time_ms, payload_size_bytes,
  error_message, fired_at, completed_at, response_snippet, key_id, requested_by`;

function tables(s: string): string {
  return `
    CREATE TABLE ${s}.outbox_event (
      id bigint NOT NULL DEFAULT ${newIdSql(s)},
      idempotency_key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      target_url text NOT NULL,
      auth_mode text NOT NULL CHECK (auth_mode IN ('rfc9421', 'hmac', 'bearer')),
      auth_secret text,
      channel text NOT NULL,
      notification_type text NOT NULL,
      notification_id text,
      media_buy_id text,
      media_buy_ids text[],
      principal_id text,
      task_id text,
      sequence_number integer,
      subscriber_id text,
      body bytea NOT NULL,
      PRIMARY KEY (id)
    ) PARTITION BY RANGE (id);
    -- created_at and origin are copies of the event's: the console's state views read
    -- this table alone in their order.
    CREATE TABLE ${s}.outbox_delivery (
      id bigint NOT NULL,
      created_at timestamptz NOT NULL,
      origin text NOT NULL,
      state text NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'delivered', 'stopped', 'expired')),
      attempts integer NOT NULL DEFAULT 0,
      first_attempt_at timestamptz,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      horizon_seconds integer NOT NULL,
      attempt_started_at timestamptz,
      completed_at timestamptz,
      last_status integer,
      last_error text,
      PRIMARY KEY (id)
    ) PARTITION BY RANGE (id);
    CREATE TABLE ${s}.webhook_activity (
      id bigint NOT NULL DEFAULT nextval('${s}.webhook_activity_id_seq'),
      outbox_id bigint NOT NULL,
      media_buy_id text,
      media_buy_ids text[],
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
      completed_at timestamptz,
      response_snippet text,
      key_id text,
      requested_by text
    ) PARTITION BY RANGE (outbox_id);`;
}

/** The rows written before: one partition below today's first id, indexed afterwards. */
function legacy(s: string): string {
  return `
    DO $$
    DECLARE upper bigint := floor(extract(epoch from now()) / 86400)::bigint << ${ID_SHIFT};
    BEGIN
      EXECUTE format('CREATE TABLE ${s}.outbox_event_legacy PARTITION OF ${s}.outbox_event
        FOR VALUES FROM (MINVALUE) TO (%s)', upper);
      EXECUTE format('CREATE TABLE ${s}.outbox_delivery_legacy PARTITION OF ${s}.outbox_delivery
        FOR VALUES FROM (MINVALUE) TO (%s) WITH (fillfactor = ${DELIVERY_FILLFACTOR})', upper);
      EXECUTE format('CREATE TABLE ${s}.webhook_activity_legacy PARTITION OF ${s}.webhook_activity
        FOR VALUES FROM (MINVALUE) TO (%s)', upper);
    END $$;
    INSERT INTO ${s}.outbox_event (${EVENT_COLUMNS})
      SELECT ${EVENT_COLUMNS} FROM ${s}.outbox_old;
    INSERT INTO ${s}.outbox_delivery (${DELIVERY_COLUMNS})
      SELECT id, created_at, ${originSql('target_url')}, state, attempts, first_attempt_at,
             next_attempt_at, horizon_seconds, attempt_started_at, completed_at, last_status,
             last_error
        FROM ${s}.outbox_old;
    INSERT INTO ${s}.webhook_activity (${ACTIVITY_COLUMNS})
      SELECT ${ACTIVITY_COLUMNS} FROM ${s}.webhook_activity_old;
    ALTER SEQUENCE ${s}.outbox_id_seq OWNED BY NONE;
    ALTER SEQUENCE ${s}.webhook_activity_id_seq OWNED BY NONE;
    DROP TABLE ${s}.outbox_old, ${s}.webhook_activity_old;`;
}

/**
 * Indexes on the parents (each partition gets its own, named after them). The event's
 * are written once per event; the delivery's partial ones only while a row matches.
 */
function indexes(s: string): string {
  const order = 'created_at DESC, id DESC';
  return `
    CREATE INDEX outbox_console_created ON ${s}.outbox_event (${order});
    CREATE INDEX outbox_console_origin ON ${s}.outbox_event
      ((${originSql('target_url')}), ${order});
    CREATE INDEX outbox_console_buy ON ${s}.outbox_event (media_buy_id, ${order})
      WHERE media_buy_id IS NOT NULL;
    CREATE INDEX outbox_console_principal ON ${s}.outbox_event (principal_id, ${order})
      WHERE principal_id IS NOT NULL;
    CREATE INDEX outbox_console_task ON ${s}.outbox_event (task_id, ${order})
      WHERE task_id IS NOT NULL;
    CREATE INDEX outbox_console_type ON ${s}.outbox_event (notification_type, ${order});
    CREATE INDEX outbox_console_buys ON ${s}.outbox_event USING gin (media_buy_ids)
      WHERE media_buy_ids IS NOT NULL;
    -- No index on what a claim or a retry changes (attempts, next_attempt_at, the open
    -- mark): those updates are HOT, writing no index at all. The reconciler and the
    -- closing of interrupted attempts read the pending rows through outbox_console_state.
    -- Delivered rows (99 %) are listed along the event's created index: never indexed here.
    CREATE INDEX outbox_console_state ON ${s}.outbox_delivery (state, ${order})
      WHERE state <> 'delivered';
    CREATE INDEX outbox_console_failed_origin ON ${s}.outbox_delivery (origin, ${order})
      WHERE state IN ('stopped', 'expired');
    CREATE UNIQUE INDEX webhook_activity_attempt ON ${s}.webhook_activity (outbox_id, attempt);
    CREATE INDEX webhook_activity_buy ON ${s}.webhook_activity
      (principal_id, media_buy_id, fired_at DESC);
    CREATE INDEX webhook_activity_age ON ${s}.webhook_activity ((coalesce(completed_at, fired_at)));
    CREATE INDEX webhook_activity_pending ON ${s}.webhook_activity (outbox_id)
      WHERE status = 'pending';
    CREATE INDEX webhook_activity_buys ON ${s}.webhook_activity USING gin (media_buy_ids)
      WHERE media_buy_ids IS NOT NULL;
    CREATE INDEX webhook_activity_console_window ON ${s}.webhook_activity (fired_at)
      INCLUDE (url, status, response_time_ms);
    CREATE UNIQUE INDEX outbox_idempotency_key_key_legacy
      ON ${s}.outbox_event_legacy (idempotency_key);`;
}

/**
 * `outbox`, as it was: the two tables joined. Tools (benches, seeds, ad hoc SQL) may still
 * insert, update and delete through it; the trigger writes the tables.
 */
function view(s: string): string {
  return `
    CREATE VIEW ${s}.outbox AS
      SELECT e.id, e.idempotency_key, e.body, e.target_url, e.auth_mode, e.auth_secret,
             e.channel, e.notification_type, e.notification_id, e.media_buy_id,
             e.principal_id, e.task_id, e.sequence_number, e.subscriber_id, d.state,
             e.created_at, d.first_attempt_at, d.attempts, d.next_attempt_at,
             d.horizon_seconds, d.last_status, d.last_error, d.completed_at, e.media_buy_ids,
             d.attempt_started_at
        FROM ${s}.outbox_event e JOIN ${s}.outbox_delivery d ON d.id = e.id;
    CREATE FUNCTION ${s}.outbox_write() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        NEW.id := coalesce(NEW.id, ${newIdSql(s)});
        NEW.created_at := coalesce(NEW.created_at, now());
        INSERT INTO ${s}.outbox_event (${EVENT_COLUMNS})
          VALUES (NEW.id, NEW.idempotency_key, NEW.created_at, NEW.target_url, NEW.auth_mode,
                  NEW.auth_secret, NEW.channel, NEW.notification_type, NEW.notification_id,
                  NEW.media_buy_id, NEW.media_buy_ids, NEW.principal_id, NEW.task_id,
                  NEW.sequence_number, NEW.subscriber_id, NEW.body);
        INSERT INTO ${s}.outbox_delivery (${DELIVERY_COLUMNS})
          VALUES (NEW.id, NEW.created_at, ${originSql('NEW.target_url')},
                  coalesce(NEW.state, 'pending'), coalesce(NEW.attempts, 0),
                  NEW.first_attempt_at, coalesce(NEW.next_attempt_at, now()),
                  NEW.horizon_seconds, NEW.attempt_started_at, NEW.completed_at,
                  NEW.last_status, NEW.last_error);
        RETURN NEW;
      ELSIF TG_OP = 'UPDATE' THEN
        UPDATE ${s}.outbox_delivery
           SET state = NEW.state, attempts = NEW.attempts,
               first_attempt_at = NEW.first_attempt_at, next_attempt_at = NEW.next_attempt_at,
               horizon_seconds = NEW.horizon_seconds,
               attempt_started_at = NEW.attempt_started_at, completed_at = NEW.completed_at,
               last_status = NEW.last_status, last_error = NEW.last_error
         WHERE id = OLD.id;
        RETURN NEW;
      END IF;
      DELETE FROM ${s}.outbox_delivery WHERE id = OLD.id;
      DELETE FROM ${s}.outbox_event WHERE id = OLD.id;
      RETURN OLD;
    END $f$;
    CREATE TRIGGER outbox_write INSTEAD OF INSERT OR UPDATE OR DELETE ON ${s}.outbox
      FOR EACH ROW EXECUTE FUNCTION ${s}.outbox_write();`;
}

export const partitionedOutbox: Migration = {
  id: '060_partitioned_outbox',
  sql: (s) => `
    ALTER TABLE ${s}.outbox RENAME TO outbox_old;
    ALTER TABLE ${s}.webhook_activity RENAME TO webhook_activity_old;
    ${tables(s)}
    ${legacy(s)}
    ${indexes(s)}
    ${view(s)}
  `,
};
