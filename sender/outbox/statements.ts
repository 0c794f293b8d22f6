/**
 * The outbox's claim and settle statements as node-postgres runs them (issue 19, item 1:
 * PostgreSQL CPU per delivery): the row a claim returns, and the quick claim and settle on
 * one day's partitions when a batch's rows are all of one day (the INSERT is insert.ts).
 */
import type pg from 'pg';
import type { Pool, PoolClient } from '../../shared/infra/pg.js';
import { dayOfId, suffixOf } from './partitions.js';
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
