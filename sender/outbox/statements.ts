/**
 * The outbox's hot statements as node-postgres runs them (issue 19, item 1: PostgreSQL CPU
 * per delivery): the enqueue's INSERT, the row a claim returns, and the quick claim and
 * settle on one day's partitions when a batch's rows are all of one day.
 */
import type pg from 'pg';
import type { Pool, PoolClient } from '../../shared/infra/pg.js';
import { originSql } from '../console/migrations.js';
import { dayOfId, newIdSql, suffixOf } from './partitions.js';
import type { WebhookChannel } from './types.js';

/** A statement as node-postgres takes it: named (prepared per session) or not. */
export type Statement = { name: string | undefined; text: string };

export type DayKind = 'quickClaim' | 'settle';

/** A row as either claim statement returns it (attempts.ts `claimedColumns`). */
export interface ClaimRow {
  id: string;
  idempotency_key: string;
  body: Buffer;
  target_url: string;
  auth_mode: string;
  auth_secret: string | null;
  channel: WebhookChannel;
  notification_type: string;
  notification_id: string | null;
  media_buy_id: string | null;
  media_buy_ids: string[] | null;
  principal_id: string | null;
  subscriber_id: string | null;
  sequence_number: number | null;
  attempts: number;
  horizon_seconds: number;
  first_ms: number;
  now_ms: number;
}

/**
 * The enqueue's INSERT ($1..$13 and $15 (the task type) one array element per event, $14 the
 * horizon, $18 the buys as JSON text when `buys`): the event written once to outbox_event, its delivery
 * state to the narrow outbox_delivery (storage-migration.ts). Without `buys` it runs as it
 * did before the column of buys existed. The bodies come as one bytea ($16, every body's
 * bytes in a row, sent in binary) cut at $2 (offsets) and $17 (lengths): a bytea[] goes as
 * hex text that PostgreSQL's array parser reads a character at a time, an eighth of the
 * insert's backend CPU (issue 19).
 */
export function insertSql(s: string, buys: boolean): string {
  return `
      WITH x AS (
        SELECT ${newIdSql(s)} AS id, k, substring($16::bytea from bo + 1 for bl) AS b, u, m, sc,
               c, t, n, mb, p, tk, sq, sb, tt${buys ? ', mbs' : ''}
          FROM unnest($1::text[], $2::int[], $17::int[], $3::text[], $4::text[], $5::text[],
                      $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
                      $12::int[], $13::text[], $15::text[]${buys ? ', $18::text[]' : ''})
            WITH ORDINALITY AS x(k, bo, bl, u, m, sc, c, t, n, mb, p, tk, sq, sb, tt, ${buys ? 'mbs, ' : ''}ord)
          ORDER BY ord
      ), e AS (
        INSERT INTO ${s}.outbox_event (id, idempotency_key, body, target_url, auth_mode,
          auth_secret, channel, notification_type, notification_id, media_buy_id, principal_id,
          task_id, sequence_number, subscriber_id, task_type${buys ? ', media_buy_ids' : ''})
        SELECT id, k, b, u, m, sc, c, t, n, mb, p, tk, sq, sb, tt${
          buys
            ? `,
               CASE WHEN mbs IS NOT NULL
                 THEN ARRAY(SELECT jsonb_array_elements_text(mbs::jsonb)) END`
            : ''
        }
          FROM x
      )
      INSERT INTO ${s}.outbox_delivery (id, created_at, origin, horizon_seconds)
        SELECT id, now(), ${originSql('u')}, $14 FROM x
      RETURNING id::text`;
}

/** Days whose statements an Outbox keeps (today, yesterday's retries, a few older ones). */
const DAY_STATEMENTS_KEPT = 8;

/** PostgreSQL's error for a relation that does not exist (a day's partition dropped). */
const UNDEFINED_TABLE = '42P01';

/**
 * The quick claim and the settle of a batch: on its day's partitions when its ids are all
 * of one day (nearly every batch: a worker's jobs are mostly the day's rows), else
 * (several days, the legacy partition, none) on the parents. On the parents a generic plan
 * starts by locking, pruning and setting up every partition of the three tables (a month
 * of days: about a hundred relations); on one day's tables it has one of each. A day whose
 * partition is gone (dropped by retention) has no rows either: the parents' statement
 * answers for it.
 */
export class DayStatements {
  private readonly byDay = new Map<number, Record<DayKind, Statement>>();

  constructor(
    private readonly parents: Record<DayKind, Statement>,
    private readonly make: (suffix: string) => Record<DayKind, Statement>,
  ) {}

  async run<R extends pg.QueryResultRow>(
    db: Pool | PoolClient,
    ids: readonly string[],
    kind: DayKind,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    const day = ids.length > 0 ? dayOfId(ids[0]!) : 0;
    const oneDay = day > 0 && ids.every((id) => dayOfId(id) === day);
    if (!oneDay) return db.query<R>({ ...this.parents[kind], values });
    try {
      return await db.query<R>({ ...this.of(day)[kind], values });
    } catch (err) {
      if ((err as { code?: string }).code !== UNDEFINED_TABLE) throw err;
      return db.query<R>({ ...this.parents[kind], values });
    }
  }

  private of(day: number): Record<DayKind, Statement> {
    let s = this.byDay.get(day);
    if (!s) {
      s = this.make(suffixOf(day));
      this.byDay.set(day, s);
      if (this.byDay.size > DAY_STATEMENTS_KEPT) {
        this.byDay.delete(this.byDay.keys().next().value!);
      }
    }
    return s;
  }
}
