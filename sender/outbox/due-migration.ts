/**
 * Migration 061 (issue 19, item 1): a due-time index the reconciler and the closing of
 * interrupted attempts read, without costing the claims their HOT updates.
 *
 * `next_attempt_at` is both when a row is due and, once claimed, its lease: claims and
 * lease renewals rewrite it, so an index on it would make every claim write an index.
 * `due_at` is when the row last became due (enqueue, a retry's settle, the reconciler,
 * a resend); claims and renewals never touch it, so they stay HOT. A claim only moves
 * `next_attempt_at` forward from a due row (at most 50 ms early), hence
 * `next_attempt_at >= due_at - 50 ms` always, and "`next_attempt_at` before T" implies
 * "`due_at` before T + 50 ms": the passes find their rows through the partial index on
 * `due_at` of pending rows and check `next_attempt_at` on each, instead of reading every
 * pending row (8faf630 had `next_attempt_at` indexed, at the price of every claim).
 */
import type { Migration } from '../../shared/infra/pg.js';
import { EVENT_COLUMNS, DELIVERY_COLUMNS } from './storage-migration.js';
import { originSql } from '../console/migrations.js';
import { newIdSql } from './partitions.js';

/** The view's trigger (storage-migration.ts) keeping `due_at` at or before the due time. */
function viewTrigger(s: string): string {
  return `
    CREATE OR REPLACE FUNCTION ${s}.outbox_write() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        NEW.id := coalesce(NEW.id, ${newIdSql(s)});
        NEW.created_at := coalesce(NEW.created_at, now());
        INSERT INTO ${s}.outbox_event (${EVENT_COLUMNS})
          VALUES (NEW.id, NEW.idempotency_key, NEW.created_at, NEW.target_url, NEW.auth_mode,
                  NEW.auth_secret, NEW.channel, NEW.notification_type, NEW.notification_id,
                  NEW.media_buy_id, NEW.media_buy_ids, NEW.principal_id, NEW.task_id,
                  NEW.sequence_number, NEW.subscriber_id, NEW.body);
        INSERT INTO ${s}.outbox_delivery (${DELIVERY_COLUMNS}, due_at)
          VALUES (NEW.id, NEW.created_at, ${originSql('NEW.target_url')},
                  coalesce(NEW.state, 'pending'), coalesce(NEW.attempts, 0),
                  NEW.first_attempt_at, coalesce(NEW.next_attempt_at, now()),
                  NEW.horizon_seconds, NEW.attempt_started_at, NEW.completed_at,
                  NEW.last_status, NEW.last_error, coalesce(NEW.next_attempt_at, now()));
        RETURN NEW;
      ELSIF TG_OP = 'UPDATE' THEN
        UPDATE ${s}.outbox_delivery
           SET state = NEW.state, attempts = NEW.attempts,
               first_attempt_at = NEW.first_attempt_at, next_attempt_at = NEW.next_attempt_at,
               due_at = least(due_at, NEW.next_attempt_at),
               horizon_seconds = NEW.horizon_seconds,
               attempt_started_at = NEW.attempt_started_at, completed_at = NEW.completed_at,
               last_status = NEW.last_status, last_error = NEW.last_error
         WHERE id = OLD.id;
        RETURN NEW;
      END IF;
      DELETE FROM ${s}.outbox_delivery WHERE id = OLD.id;
      DELETE FROM ${s}.outbox_event WHERE id = OLD.id;
      RETURN OLD;
    END $f$;`;
}

export const dueIndex: Migration = {
  id: '061_outbox_due_index',
  sql: (s) => `
    ALTER TABLE ${s}.outbox_delivery ADD COLUMN due_at timestamptz;
    UPDATE ${s}.outbox_delivery SET due_at = next_attempt_at WHERE state = 'pending';
    ALTER TABLE ${s}.outbox_delivery ALTER COLUMN due_at SET DEFAULT now();
    CREATE INDEX outbox_delivery_due ON ${s}.outbox_delivery (due_at) WHERE state = 'pending';
    ${viewTrigger(s)}
  `,
};
