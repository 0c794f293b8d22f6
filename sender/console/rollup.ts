/**
 * Destinations without reading a day of attempts per request: finished hours are rolled
 * up once into `console_hourly` (per origin: attempts, successes, a latency histogram;
 * and, under origin '', the hour's all-origins sums, which also mark it done), and only the
 * time since the last finished hour is aggregated live. An hour counts as
 * finished 5 minutes after it ends (attempt records land up to a flush and an attempt's
 * timeout late). Percentiles over the day come from the histogram: buckets 25 % wide, so
 * p50 and p99 are within about 12 % of the exact value; the last hour's are exact.
 */
import type { Pool } from '../../shared/infra/pg.js';
import { originSql } from './migrations.js';

export const BUCKET_RATIO = 1.25;
export const BUCKETS = 64;
const SETTLE_MS = 5 * 60_000;
const HOUR = 3_600_000;
/** How far back hours are kept: a week (Trends' longest range). */
const ROLLUP_HOURS = 168;

/** The histogram bucket of a response time, in SQL over `response_time_ms`. */
const BUCKET_SQL = `least(${BUCKETS - 1}, floor(ln(greatest(response_time_ms, 1)) / ln(${BUCKET_RATIO})))::int`;

export interface HourAggregate {
  origin: string;
  hour: Date;
  attempts: number;
  succeeded: number;
  latency: number[];
}

/** Aggregates of attempts fired in [from, to), per origin and hour (index-only range read). */
export function aggregateSql(schema: string): string {
  return `SELECT ${originSql('url')} AS origin, date_trunc('hour', fired_at) AS hour,
      ${BUCKET_SQL} AS bucket, count(*)::int AS n, count(*) FILTER (WHERE status = 'success')::int AS ok
    FROM ${schema}.webhook_activity
    WHERE fired_at >= $1 AND fired_at < $2 AND status <> 'pending'
    GROUP BY 1, 2, 3`;
}

async function aggregate(
  pool: Pool,
  schema: string,
  from: Date,
  to: Date,
): Promise<HourAggregate[]> {
  const { rows } = await pool.query(aggregateSql(schema), [from, to]);
  const by = new Map<string, HourAggregate>();
  for (const r of rows) {
    const key = `${r.origin}\u0000${(r.hour as Date).getTime()}`;
    let a = by.get(key);
    if (!a) {
      a = {
        origin: r.origin,
        hour: r.hour,
        attempts: 0,
        succeeded: 0,
        latency: new Array(BUCKETS).fill(0),
      };
      by.set(key, a);
    }
    a.attempts += r.n;
    a.succeeded += r.ok;
    // Attempts without a response (timeouts, connection errors) have no latency bucket.
    if (r.bucket !== null) a.latency[r.bucket] += r.n;
  }
  return [...by.values()];
}

/** The value a percentile falls on in a histogram (the bucket's geometric middle), or null. */
export function histogramPercentile(latency: number[], p: number): number | null {
  const total = latency.reduce((s, n) => s + n, 0);
  if (total === 0) return null;
  const rank = Math.ceil(p * total);
  let seen = 0;
  for (let b = 0; b < latency.length; b++) {
    seen += latency[b]!;
    if (seen >= rank) return Math.round(BUCKET_RATIO ** (b + 0.5));
  }
  return null;
}

/** All origins' figures over some hours, and each origin's sums (Trends). */
export interface RollupTotals {
  /** One per hour with attempts, origin '': attempts, successes, merged latency histogram. */
  hours: HourAggregate[];
  origins: Array<{ origin: string; attempts: number; succeeded: number }>;
}

/** The sum of aggregates (origins or hours): counts added, histograms merged. */
export function sumAggregates(list: HourAggregate[], hour = new Date(0)): HourAggregate {
  const out: HourAggregate = {
    origin: '',
    hour,
    attempts: 0,
    succeeded: 0,
    latency: new Array<number>(BUCKETS).fill(0),
  };
  for (const a of list) {
    out.attempts += a.attempts;
    out.succeeded += a.succeeded;
    a.latency.forEach((n, i) => (out.latency[i] = out.latency[i]! + n));
  }
  return out;
}

export class HourlyRollup {
  private running: Promise<void> | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly schema: string,
  ) {}

  /**
   * Rolls up the finished hours of the last week not rolled up yet (one at a time per
   * process): the day for Destinations, the week for Trends.
   */
  async catchUp(now = Date.now()): Promise<void> {
    this.running ??= this.roll(now).finally(() => (this.running = null));
    return this.running;
  }

  private async roll(now: number): Promise<void> {
    const first = Math.floor((now - ROLLUP_HOURS * HOUR) / HOUR) * HOUR;
    const lastDone = Math.floor((now - SETTLE_MS) / HOUR) * HOUR; // exclusive
    const { rows } = await this.pool.query(
      `SELECT hour FROM ${this.schema}.console_hourly WHERE origin = '' AND hour >= $1`,
      [new Date(first)],
    );
    const done = new Set(rows.map((r) => (r.hour as Date).getTime()));
    for (let h = first; h < lastDone; h += HOUR) {
      if (done.has(h)) continue;
      const aggs = await aggregate(this.pool, this.schema, new Date(h), new Date(h + HOUR));
      const all = sumAggregates(aggs);
      await this.pool.query(
        `INSERT INTO ${this.schema}.console_hourly (hour, origin, attempts, succeeded, latency)
         SELECT $1::timestamptz, o, a, s, ARRAY(SELECT jsonb_array_elements_text(l::jsonb)::int)
           FROM unnest($2::text[], $3::int[], $4::int[], $5::text[]) AS v(o, a, s, l)
         UNION ALL SELECT $1::timestamptz, '', $6, $7, $8::int[]
         ON CONFLICT DO NOTHING`,
        [
          new Date(h),
          aggs.map((a) => a.origin),
          aggs.map((a) => a.attempts),
          aggs.map((a) => a.succeeded),
          aggs.map((a) => JSON.stringify(a.latency)),
          all.attempts,
          all.succeeded,
          all.latency,
        ],
      );
    }
    await this.pool.query(`DELETE FROM ${this.schema}.console_hourly WHERE hour < $1`, [
      new Date(first - HOUR),
    ]);
  }

  /**
   * Trends over the last `n` hours (at most a week) without reading every origin's hours:
   * each hour's all-origins row (origin '', kept since migration 077), the origins' sums
   * added up by PostgreSQL, and the live aggregate of the time after the last rolled-up hour.
   */
  async totals(n: number, now = Date.now()): Promise<RollupTotals> {
    await this.catchUp(now);
    const since = new Date(now - Math.min(n, ROLLUP_HOURS) * HOUR);
    const [hours, origins, live] = await Promise.all([
      this.pool.query(
        `SELECT hour, attempts, succeeded, latency FROM ${this.schema}.console_hourly
          WHERE hour >= date_trunc('hour', $1::timestamptz) AND origin = '' AND attempts > 0`,
        [since],
      ),
      this.pool.query(
        `SELECT origin, sum(attempts)::int AS attempts, sum(succeeded)::int AS succeeded
           FROM ${this.schema}.console_hourly
          WHERE hour >= date_trunc('hour', $1::timestamptz) AND origin <> '' GROUP BY origin`,
        [since],
      ),
      aggregate(this.pool, this.schema, new Date(this.doneUntil(now)), new Date(now + 60_000)),
    ]);
    const byHour = new Map<number, HourAggregate>();
    for (const r of hours.rows) {
      byHour.set((r.hour as Date).getTime(), { ...r, origin: '' });
    }
    const byOrigin = new Map<string, { origin: string; attempts: number; succeeded: number }>();
    for (const r of origins.rows) byOrigin.set(r.origin, r);
    for (const a of live) {
      const t = a.hour.getTime();
      byHour.set(t, sumAggregates([a, ...(byHour.has(t) ? [byHour.get(t)!] : [])], a.hour));
      const o = byOrigin.get(a.origin) ?? { origin: a.origin, attempts: 0, succeeded: 0 };
      byOrigin.set(a.origin, {
        ...o,
        attempts: o.attempts + a.attempts,
        succeeded: o.succeeded + a.succeeded,
      });
    }
    return { hours: [...byHour.values()], origins: [...byOrigin.values()] };
  }

  /** The end (exclusive) of the hours stored: 5 minutes after an hour ends. */
  private doneUntil(now: number): number {
    return Math.floor((now - SETTLE_MS) / HOUR) * HOUR;
  }

  /**
   * Every origin's hours over the last day: rolled-up hours plus the live aggregate of the
   * time after the last rolled-up one.
   */
  async day(now = Date.now()): Promise<HourAggregate[]> {
    return this.hours(24, now);
  }

  /** As `day`, over the last `n` hours (at most a week). */
  async hours(n: number, now = Date.now()): Promise<HourAggregate[]> {
    await this.catchUp(now);
    const since = new Date(now - Math.min(n, ROLLUP_HOURS) * HOUR);
    const { rows } = await this.pool.query(
      `SELECT hour, origin, attempts, succeeded, latency FROM ${this.schema}.console_hourly
        WHERE hour >= date_trunc('hour', $1::timestamptz) AND origin <> ''`,
      [since],
    );
    const stored: HourAggregate[] = rows.map((r) => ({
      origin: r.origin,
      hour: r.hour,
      attempts: r.attempts,
      succeeded: r.succeeded,
      latency: r.latency,
    }));
    const doneUntil = Math.floor((now - SETTLE_MS) / HOUR) * HOUR;
    const live = await aggregate(
      this.pool,
      this.schema,
      new Date(doneUntil),
      new Date(now + 60_000),
    );
    return [...stored, ...live];
  }
}
