/**
 * Trends (issue 26): deliveries' attempts by outcome over time, attempt latency p50/p99,
 * and the destinations failing most, over the last hour (per minute, from the attempts
 * window index alone), day or week (per hour, from the hourly rollup: 24 or 168 small rows
 * per origin, whatever the traffic). The page's tables and the JSON its charts draw are
 * this one result.
 */
import { assertSchemaName, type Pool } from '../../shared/infra/pg.js';
import { ConsoleInputError } from '../../shared/console/errors.js';
import { originSql } from './migrations.js';
import { histogramPercentile, HourlyRollup } from './rollup.js';

export const TREND_RANGES = ['hour', 'day', 'week'] as const;
export type TrendRange = (typeof TREND_RANGES)[number];

export interface TrendPoint {
  /** Start of the minute (range hour) or hour (day, week), ISO 8601. */
  at: string;
  succeeded: number;
  failed: number;
  p50Ms: number | null;
  p99Ms: number | null;
}

export interface FailingDestination {
  origin: string;
  attempts: number;
  failed: number;
  failureRate: number;
}

export interface Trends {
  range: TrendRange;
  step: 'minute' | 'hour';
  points: TrendPoint[];
  failing: FailingDestination[];
}

export function parseRange(v: unknown): TrendRange {
  if (v === undefined || v === '') return 'day';
  if (typeof v !== 'string' || !(TREND_RANGES as readonly string[]).includes(v)) {
    throw new ConsoleInputError('range', `one of ${TREND_RANGES.join(', ')}`);
  }
  return v as TrendRange;
}

export class TrendStore {
  private readonly schema: string;
  private readonly rollup: HourlyRollup;
  constructor(
    private readonly pool: Pool,
    schema: string,
  ) {
    this.schema = assertSchemaName(schema);
    this.rollup = new HourlyRollup(pool, this.schema);
  }

  async trends(range: TrendRange, now = Date.now()): Promise<Trends> {
    return range === 'hour' ? this.lastHour() : this.byHour(range === 'day' ? 24 : 168, now);
  }

  /** Per minute, read from the window index (fired_at INCLUDE url, status, response time). */
  private async lastHour(): Promise<Trends> {
    const [points, failing] = await Promise.all([
      this.pool.query(
        `SELECT date_trunc('minute', fired_at) AS at,
                count(*) FILTER (WHERE status = 'success')::int AS ok,
                count(*) FILTER (WHERE status <> 'success')::int AS bad,
                percentile_disc(0.5) WITHIN GROUP (ORDER BY response_time_ms) AS p50,
                percentile_disc(0.99) WITHIN GROUP (ORDER BY response_time_ms) AS p99
           FROM ${this.schema}.webhook_activity
          WHERE fired_at >= now() - interval '1 hour' AND status <> 'pending'
          GROUP BY 1 ORDER BY 1`,
      ),
      this.pool.query(
        `SELECT ${originSql('url')} AS origin, count(*)::int AS n,
                count(*) FILTER (WHERE status <> 'success')::int AS bad
           FROM ${this.schema}.webhook_activity
          WHERE fired_at >= now() - interval '1 hour' AND status <> 'pending'
          GROUP BY 1`,
      ),
    ]);
    return {
      range: 'hour',
      step: 'minute',
      points: points.rows.map((r) => ({
        at: (r.at as Date).toISOString(),
        succeeded: r.ok,
        failed: r.bad,
        p50Ms: r.p50,
        p99Ms: r.p99,
      })),
      failing: topFailing(
        failing.rows.map((r) => ({ origin: r.origin, attempts: r.n, failed: r.bad })),
      ),
    };
  }

  /** Per hour, from the rollup's all-origins rows; failing destinations from its sums. */
  private async byHour(hours: number, now: number): Promise<Trends> {
    const t = await this.rollup.totals(hours, now);
    const points = t.hours
      .sort((a, b) => a.hour.getTime() - b.hour.getTime())
      .map((h) => ({
        at: h.hour.toISOString(),
        succeeded: h.succeeded,
        failed: h.attempts - h.succeeded,
        p50Ms: histogramPercentile(h.latency, 0.5),
        p99Ms: histogramPercentile(h.latency, 0.99),
      }));
    const failing = topFailing(
      t.origins.map((o) => ({
        origin: o.origin,
        attempts: o.attempts,
        failed: o.attempts - o.succeeded,
      })),
    );
    return { range: hours === 24 ? 'day' : 'week', step: 'hour', points, failing };
  }
}

/** The ten origins with the most failed attempts (ties: the higher rate first). */
function topFailing(
  list: Array<{ origin: string; attempts: number; failed: number }>,
): FailingDestination[] {
  return list
    .filter((d) => d.failed > 0)
    .map((d) => ({ ...d, failureRate: d.failed / d.attempts }))
    .sort((a, b) => b.failed - a.failed || b.failureRate - a.failureRate)
    .slice(0, 10);
}
