/** What the sidecar console reads from the event log: groups of refusals, recent events. */
import { assertSchemaName, type Pool } from '../../shared/infra/pg.js';

export interface RejectionGroup {
  code: string;
  /** The verified sender, else `keyid <kid>` as claimed, else `unidentified`. */
  sender: string;
  httpStatus: number;
  lastHour: number;
  lastDay: number;
  lastAt: string;
}

export interface EventRow {
  id: string;
  at: string;
  httpStatus: number;
  code: string;
  sender: string | null;
  keyid: string | null;
  taskId: string | null;
  eventStatus: string | null;
  idempotencyKey: string | null;
}

/** Answers per hour and code over the last day (the Overview's chart and its table). */
export interface AnswersByCode {
  codes: string[];
  /** Oldest first; each point has its hour (`at`) and a count per code (absent: 0). */
  points: Array<{ at: string } & Record<string, number | string>>;
}

export interface EventFilter {
  code?: string;
  sender?: string;
  key?: string;
  before?: string;
}

export class ReceiverConsoleStore {
  readonly schema: string;
  constructor(
    private readonly pool: Pool,
    schema: string,
  ) {
    this.schema = assertSchemaName(schema);
  }

  /** Everything but plain acceptances over the last day, grouped by code and sender. */
  async rejections(): Promise<RejectionGroup[]> {
    const { rows } = await this.pool.query(
      `SELECT code, coalesce(sender, 'keyid ' || keyid, 'unidentified') AS who,
              max(http_status) AS http_status,
              count(*) FILTER (WHERE at >= now() - interval '1 hour')::int AS h,
              count(*)::int AS d, max(at) AS last_at
         FROM ${this.schema}.console_events
        WHERE at >= now() - interval '1 day' AND code <> 'published'
        GROUP BY 1, 2 ORDER BY h DESC, d DESC, 1, 2 LIMIT 200`,
    );
    return rows.map((r) => ({
      code: r.code,
      sender: r.who,
      httpStatus: r.http_status,
      lastHour: r.h,
      lastDay: r.d,
      lastAt: (r.last_at as Date).toISOString(),
    }));
  }

  /**
   * Answers per hour and code over the last day. Plain acceptances have no time index, so
   * this reads the day's rows of the log (bounded to 1,000,000 rows by the pruner).
   */
  async answersByCode(): Promise<AnswersByCode> {
    const { rows } = await this.pool.query(
      `SELECT date_trunc('hour', at) AS hour, code, count(*)::int AS n
         FROM ${this.schema}.console_events
        WHERE at >= now() - interval '1 day'
        GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    const codes = [...new Set(rows.map((r) => r.code as string))].sort();
    const byHour = new Map<string, { at: string } & Record<string, number | string>>();
    for (const r of rows) {
      const at = (r.hour as Date).toISOString();
      const p = byHour.get(at) ?? { at };
      p[r.code] = r.n;
      byHour.set(at, p);
    }
    return { codes, points: [...byHour.values()] };
  }

  async events(f: EventFilter, limit = 100): Promise<EventRow[]> {
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (sql: string, v: unknown) => {
      values.push(v);
      where.push(sql.replace('?', `$${values.length}`));
    };
    if (f.code) add('code = ?', f.code);
    if (f.sender) add('sender = ?', f.sender);
    if (f.key) add('idempotency_key = ?', f.key);
    if (f.before && /^\d{1,18}$/.test(f.before)) add('id < ?::bigint', f.before);
    values.push(limit);
    const { rows } = await this.pool.query(
      `SELECT id::text AS id, at, http_status, code, sender, keyid, task_id, event_status,
              idempotency_key
         FROM ${this.schema}.console_events
        ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        -- The column, not the text alias: numeric order, as the before cursor compares.
        ORDER BY console_events.id DESC LIMIT $${values.length}`,
      values,
    );
    return rows.map((r) => ({
      id: r.id,
      at: (r.at as Date).toISOString(),
      httpStatus: r.http_status,
      code: r.code,
      sender: r.sender,
      keyid: r.keyid,
      taskId: r.task_id,
      eventStatus: r.event_status,
      idempotencyKey: r.idempotency_key,
    }));
  }
}
