/**
 * Migration 078 (issue 19, item 1: PostgreSQL CPU per delivery): the console's list indexes
 * in ascending order, and room on outbox_delivery's pages for every claim's HOT update.
 *
 * - The list indexes end in `created_at, id` (webhook_activity's in `fired_at`), ascending.
 *   The console still reads them newest first (an index scan backward: the same pages, the
 *   same plans), but an event's insert now lands where B-trees handle it cheaply: at the
 *   right end of its group, where a page split leaves the left page full (PostgreSQL's
 *   split after a localized monotonic insert) and, for `outbox_console_created`, on the
 *   rightmost leaf, which an insert reaches without a descent from the root (the fastpath).
 *   In descending order every insert went to the left end of its group: a descent from the
 *   root each time and 50:50 splits, twice the pages for the same entries. Every event's
 *   insert writes these indexes: they were most of the enqueue's backend CPU.
 *   `outbox_console_failed_origin` is left as it is: only a failed delivery writes it.
 * - outbox_delivery's existing partitions take the new fillfactor (partitions.ts): at 50 %
 *   a page's rows had not all room for their claim's new version, and a fifth of the claims
 *   were not HOT (each then wrote three indexes). It applies to rows inserted from now on.
 *
 * The indexes are rebuilt over the partitions that exist (one transaction, like 060: the
 * workers of the previous version are stopped first; sender/README.md "Upgrading"). Their
 * per-partition names are given back afterwards (`nameAllPartitions`).
 */
import type { Migration } from '../../shared/infra/pg.js';
import { originSql } from '../console/migrations.js';
import { DELIVERY_FILLFACTOR } from './partitions.js';

const ORDER = 'created_at, id';

export const ascendingIndexes: Migration = {
  id: '078_outbox_ascending_indexes',
  sql: (s) => `
    DROP INDEX ${s}.outbox_console_created, ${s}.outbox_console_origin,
      ${s}.outbox_console_buy, ${s}.outbox_console_principal, ${s}.outbox_console_task,
      ${s}.outbox_console_event_type, ${s}.outbox_console_state, ${s}.webhook_activity_buy;
    CREATE INDEX outbox_console_created ON ${s}.outbox_event (${ORDER});
    CREATE INDEX outbox_console_origin ON ${s}.outbox_event
      ((${originSql('target_url')}), ${ORDER});
    CREATE INDEX outbox_console_buy ON ${s}.outbox_event (media_buy_id text_pattern_ops, ${ORDER})
      WHERE media_buy_id IS NOT NULL;
    CREATE INDEX outbox_console_principal ON ${s}.outbox_event
      (principal_id text_pattern_ops, ${ORDER}) WHERE principal_id IS NOT NULL;
    CREATE INDEX outbox_console_task ON ${s}.outbox_event (task_id text_pattern_ops, ${ORDER})
      WHERE task_id IS NOT NULL;
    CREATE INDEX outbox_console_event_type ON ${s}.outbox_event
      ((coalesce(task_type, notification_type)), ${ORDER});
    CREATE INDEX outbox_console_state ON ${s}.outbox_delivery (state, ${ORDER})
      WHERE state <> 'delivered';
    CREATE INDEX webhook_activity_buy ON ${s}.webhook_activity
      (principal_id, media_buy_id, fired_at);
    DO $$
    DECLARE p regclass;
    BEGIN
      FOR p IN SELECT inhrelid::regclass FROM pg_inherits
                WHERE inhparent = '${s}.outbox_delivery'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (fillfactor = ${DELIVERY_FILLFACTOR})', p);
      END LOOP;
    END $$;
  `,
};
