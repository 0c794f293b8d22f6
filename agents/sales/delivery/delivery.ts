/**
 * Delivery reads: get_media_buy_delivery (totals, by package, time series at a daily or
 * declared windowed granularity), provide_performance_feedback, and the sender's
 * DeliveryDataSource over the same numbers (reporting webhooks).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Pool, PoolClient } from '../../../shared/infra/pg.js';
import type { AgentClock } from '../../runtime/clock.js';
import { taskError } from '../../runtime/errors.js';
import type { TaskRegistry } from '../../runtime/registry.js';
import type { AgentNotifications, TaskContext } from '../../runtime/types.js';
import { DateSchema, RequiredIdempotencyKeySchema } from '../../runtime/validation.js';
import { accrueBuy } from './simulator.js';
import {
  loadBuy,
  loadPackages,
  round2,
  type BuyRow,
  type PackageRow,
} from '../media-buys/records.js';
import { isContingent, publishedPricingModel } from '../catalog/pricing.js';

const GRANULARITIES = ['hourly', 'daily', 'weekly', 'monthly'] as const;

const GetDeliverySchema = z.looseObject({
  media_buy_id: z.string().min(1).max(255).optional(),
  media_buy_ids: z.array(z.string().min(1).max(255)).min(1).max(100).optional(),
  granularity: z.enum(GRANULARITIES).optional(),
  time_granularity: z.string().min(1).max(32).optional(),
  date_range: z
    .looseObject({ start: DateSchema, end: DateSchema })
    .refine((r) => r.start <= r.end, { message: 'start must not be after end' })
    .optional(),
  /** Published: the report's date range (either end may be left open). */
  start_date: DateSchema.optional(),
  end_date: DateSchema.optional(),
  include_window_breakdown: z.boolean().optional(),
});

/**
 * Whether the answer's release reads `end_date` as exclusive: 3.2 made the published range
 * half-open (start inclusive, end exclusive, end after start); 3.0 and 3.1 read both ends
 * as inclusive days. The release is the buyer's pin, else this seller's own.
 */
function halfOpenRange(ctx: TaskContext): boolean {
  const release = ctx.request.release ?? ctx.settings.protocolVersion;
  return Number(release.split('.')[1]) >= 2;
}

/**
 * The requested range as UTC instants [from, to): the published `start_date`/`end_date`
 * (halfOpenRange decides what end_date means) or the spec's inclusive `date_range`. Null
 * when none is given.
 */
function requestedRange(
  params: z.output<typeof GetDeliverySchema>,
  now: Date,
  halfOpen: boolean,
): { from?: Date; to?: Date } | null {
  const day = (d: string) => new Date(`${d}T00:00:00Z`);
  const nextDay = (d: string) => new Date(day(d).getTime() + 86400_000);
  if (params.start_date === undefined && params.end_date === undefined) {
    const r = params.date_range;
    return r ? { from: day(r.start), to: nextDay(r.end) } : null;
  }
  const { start_date: start, end_date: end } = params;
  if (halfOpen) {
    if (start !== undefined && end !== undefined && end <= start) {
      throw taskError(
        'VALIDATION_ERROR',
        'start_date must be before end_date (the range is half-open: end_date is excluded)',
        { field: 'start_date' },
      );
    }
  } else if (start !== undefined && (end ?? now.toISOString().slice(0, 10)) < start) {
    throw taskError('VALIDATION_ERROR', 'end_date must not be before start_date', {
      field: end !== undefined ? 'end_date' : 'start_date',
    });
  }
  return {
    ...(start !== undefined ? { from: day(start) } : {}),
    ...(end !== undefined ? { to: halfOpen ? day(end) : nextDay(end) } : {}),
  };
}

interface Sums {
  impressions: number;
  clicks: number;
  spend: number;
}

function metrics(s: Sums): Record<string, number> {
  const impressions = Math.floor(s.impressions);
  const clicks = Math.floor(s.clicks);
  return {
    impressions,
    spend: round2(s.spend),
    clicks,
    ctr: impressions > 0 ? Math.round((clicks / impressions) * 1e6) / 1e6 : 0,
  };
}

async function sums(
  db: Pick<PoolClient, 'query'>,
  schema: string,
  mediaBuyIds: string[],
  from: Date,
  to: Date,
): Promise<Array<Sums & { package_id: string; media_buy_id: string }>> {
  const { rows } = await db.query(
    `SELECT package_id, media_buy_id, sum(impressions) AS impressions, sum(clicks) AS clicks, sum(spend) AS spend
       FROM ${schema}.delivery WHERE media_buy_id = ANY($1) AND hour >= $2 AND hour < $3
      GROUP BY package_id, media_buy_id`,
    [mediaBuyIds, from, to],
  );
  return rows;
}

async function series(
  db: Pick<PoolClient, 'query'>,
  schema: string,
  mediaBuyId: string,
  unit: 'hour' | 'day' | 'week' | 'month',
  from: Date,
  to: Date,
) {
  const { rows } = await db.query<Sums & { bucket: Date }>(
    `SELECT date_trunc($4, hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS bucket,
            sum(impressions) AS impressions, sum(clicks) AS clicks, sum(spend) AS spend
       FROM ${schema}.delivery WHERE media_buy_id = $1 AND hour >= $2 AND hour < $3
      GROUP BY 1 ORDER BY 1`,
    [mediaBuyId, from, to, unit],
  );
  const step = (d: Date): Date => {
    const n = new Date(d);
    if (unit === 'hour') n.setUTCHours(n.getUTCHours() + 1);
    else if (unit === 'day') n.setUTCDate(n.getUTCDate() + 1);
    else if (unit === 'week') n.setUTCDate(n.getUTCDate() + 7);
    else n.setUTCMonth(n.getUTCMonth() + 1);
    return n;
  };
  return rows.map((r) => ({
    period_start: r.bucket.toISOString(),
    period_end: new Date(step(r.bucket).getTime() - 1000).toISOString(),
    ...metrics(r),
  }));
}

function deliveryStatus(status: string): string {
  return status === 'pending' ? 'pending_start' : status;
}

const UNIT = { hourly: 'hour', daily: 'day', weekly: 'week', monthly: 'month' } as const;

type DeliveryParams = z.output<typeof GetDeliverySchema>;
type TimeUnit = (typeof UNIT)[keyof typeof UNIT];
type SumRow = Sums & { package_id: string; media_buy_id: string };

/**
 * Stage 1: a windowed `time_granularity` must be one this seller declares, and so must
 * `hourly` when asked as the plain `granularity` (UNSUPPORTED_GRANULARITY).
 */
function checkGranularity(params: DeliveryParams, windowed: readonly string[]): void {
  if (params.time_granularity !== undefined && !windowed.includes(params.time_granularity)) {
    throw taskError(
      'UNSUPPORTED_GRANULARITY',
      `time_granularity ${params.time_granularity.slice(0, 32)} is not declared; declared: ${windowed.join(', ') || 'none'}`,
      { field: 'time_granularity' },
    );
  }
  if (params.granularity === 'hourly' && !windowed.includes('hourly')) {
    throw taskError(
      'UNSUPPORTED_GRANULARITY',
      'hourly breakdowns need a declared windowed granularity',
      {
        field: 'granularity',
      },
    );
  }
}

/**
 * Stage 2: the buys asked for, locked, in request order (each unknown id fails on its own
 * field), or the principal's first 100 buys when none is named.
 */
async function requestedBuys(params: DeliveryParams, ctx: TaskContext): Promise<BuyRow[]> {
  const principalId = ctx.principal!.principal_id;
  const ids = params.media_buy_ids ?? (params.media_buy_id ? [params.media_buy_id] : null);
  if (!ids) {
    const { rows } = await ctx.db.query<BuyRow>(
      `SELECT * FROM ${ctx.schema}.media_buys WHERE principal_id = $1 ORDER BY created_at LIMIT 100 FOR UPDATE`,
      [principalId],
    );
    return rows;
  }
  const buys: BuyRow[] = [];
  for (const [i, id] of ids.entries()) {
    buys.push(
      await loadBuy(ctx.db, ctx.schema, id, principalId, {
        forUpdate: true,
        field: params.media_buy_ids ? `media_buy_ids[${i}]` : 'media_buy_id',
      }),
    );
  }
  return buys;
}

/** The report's period [from, to) and whether its release reads the end as exclusive. */
interface ReportWindow {
  from: Date;
  to: Date;
  halfOpen: boolean;
}

/**
 * Stage 3: the requested range, or by default from the earliest buy's start (or now) to
 * just after now.
 */
function reportWindow(
  params: DeliveryParams,
  ctx: TaskContext,
  now: Date,
  buys: BuyRow[],
): ReportWindow {
  const halfOpen = halfOpenRange(ctx);
  const range = requestedRange(params, now, halfOpen);
  const from =
    range?.from ?? new Date(Math.min(...buys.map((b) => b.start_at.getTime()), now.getTime()));
  const to = range?.to ?? new Date(Math.max(now.getTime(), from.getTime()) + 1);
  return { from, to, halfOpen };
}

/** The time series' bucket: a declared windowed granularity, else the plain one, else none. */
function timeUnit(params: DeliveryParams): TimeUnit | null {
  return params.time_granularity
    ? (UNIT[params.time_granularity as keyof typeof UNIT] ?? 'hour')
    : params.granularity
      ? UNIT[params.granularity]
      : null;
}

/**
 * Stage 4 (per buy): its delivery row without the time series, and its unrounded sums
 * for the aggregated totals.
 */
function buyDelivery(
  b: BuyRow,
  packages: PackageRow[],
  rows: SumRow[],
  status: string | undefined,
  pinned32: boolean,
): { delivery: Record<string, unknown>; sums: Sums } {
  // A revenue-share package (3.2) has no pricing model another release can name, and
  // by_package requires one: below a 3.2 pin the row lists it not (its spend stays in totals).
  const byPackage = packages
    .filter((p) => p.media_buy_id === b.media_buy_id && (pinned32 || !isContingent(p)))
    .map((p: PackageRow) => {
      const r = rows.find((x) => x.package_id === p.package_id) ?? {
        impressions: 0,
        clicks: 0,
        spend: 0,
      };
      return {
        package_id: p.package_id,
        ...(p.buyer_ref !== null ? { buyer_ref: p.buyer_ref } : {}),
        ...pricingMembers(p),
        currency: b.currency,
        ...metrics(r),
        ...measurementMembers(b, p.package_id, pinned32),
        ...finalityMembers(b, true),
      };
    });
  const t = rows
    .filter((r) => r.media_buy_id === b.media_buy_id)
    .reduce(
      (a, r) => ({
        impressions: a.impressions + r.impressions,
        clicks: a.clicks + r.clicks,
        spend: a.spend + r.spend,
      }),
      {
        impressions: 0,
        clicks: 0,
        spend: 0,
      },
    );
  const delivery: Record<string, unknown> = {
    media_buy_id: b.media_buy_id,
    ...(b.buyer_ref !== null ? { buyer_ref: b.buyer_ref } : {}),
    // The delivery enum keeps `reporting_delayed`; a buy awaiting approval is pending_start.
    status: deliveryStatus(status ?? b.status),
    totals: { ...metrics(t), ...measurementMembers(b, null, pinned32) },
    by_package: byPackage,
    ...finalityMembers(b, false),
  };
  return { delivery, sums: t };
}

/**
 * Stage 5: the answer: the period, the aggregated totals and the per-buy rows; a single
 * buy's numbers also at the top level (the spec's older single-buy form).
 */
function deliveryBody(
  params: DeliveryParams,
  window: ReportWindow,
  total: Sums,
  buyCount: number,
  deliveries: Array<Record<string, unknown>>,
): Record<string, unknown> {
  const { from, to, halfOpen } = window;
  const body: Record<string, unknown> = {
    reporting_period: {
      start: from.toISOString(),
      // 3.2: the exclusive end itself; before, the period's last second.
      end: new Date(halfOpen ? to.getTime() : to.getTime() - 1000).toISOString(),
    },
    currency: 'USD',
    aggregated_totals: { ...metrics(total), media_buy_count: buyCount },
    media_buy_deliveries: deliveries,
  };
  if (deliveries.length === 1) {
    const only = deliveries[0]!;
    body.delivery = only.totals;
    body.by_package = only.by_package;
    if (only.timeseries) body.timeseries = only.timeseries;
  }
  if (params.time_granularity) body.time_granularity = params.time_granularity;
  return body;
}

/** get_media_buy_delivery as its stages, the buys accrued up to now before reading. */
async function getDelivery(params: DeliveryParams, ctx: TaskContext) {
  const s = ctx.schema;
  checkGranularity(params, ctx.settings.windowedPullGranularities);
  const now = ctx.clock.now();
  const buys = await requestedBuys(params, ctx);
  // Bring the simulation up to now so the numbers are current.
  for (const b of buys) await accrueBuy(ctx.db, s, b, now, ctx.notifications);
  const window = reportWindow(params, ctx, now, buys);
  const { from, to } = window;
  const buyIds = buys.map((b) => b.media_buy_id);
  const packages = await loadPackages(ctx.db, s, buyIds);
  const rows = await sums(ctx.db, s, buyIds, from, to);
  const { rows: statuses } = await ctx.db.query<{ media_buy_id: string; status: string }>(
    `SELECT media_buy_id, status FROM ${s}.media_buys WHERE media_buy_id = ANY($1)`,
    [buyIds],
  );
  const statusOf = new Map(statuses.map((r) => [r.media_buy_id, r.status]));
  const unit = timeUnit(params);
  // 3.2-only members (revenue share) go only to a request pinned to 3.2 (catalog.ts).
  const pinned32 = ctx.request.release === '3.2';
  const deliveries: Array<Record<string, unknown>> = [];
  const total: Sums = { impressions: 0, clicks: 0, spend: 0 };
  for (const b of buys) {
    const status = statusOf.get(b.media_buy_id);
    const { delivery: d, sums: t } = buyDelivery(b, packages, rows, status, pinned32);
    total.impressions += t.impressions;
    total.clicks += t.clicks;
    total.spend += t.spend;
    if (unit) d.timeseries = await series(ctx.db, s, b.media_buy_id, unit, from, to);
    deliveries.push(d);
  }
  return deliveryBody(params, window, total, buys.length, deliveries);
}

/**
 * A package's pricing on its row: the published model and the rate it pays (CPM, the flat
 * fee; a revenue share's commission proportion, unrounded).
 */
function pricingMembers(p: PackageRow): Record<string, unknown> {
  if (isContingent(p)) return { pricing_model: p.pricing_model, rate: p.rate };
  return { pricing_model: publishedPricingModel(p.pricing_model), rate: round2(p.rate) };
}

/**
 * The measurement stated of a buy's delivery (delivery-metrics.json): on its totals the
 * viewability block (`pkg` null), on the package it was measured on the viewability block
 * and the vendor_metric_values; on both the attributed outcomes (conversions,
 * conversion_value, and 3.2's commissionable_value only to a 3.2 pin). Nothing when none
 * was stated.
 */
function measurementMembers(b: BuyRow, pkg: string | null, pinned32: boolean) {
  const m = b.delivery_measurement;
  if (!m || (pkg !== null && pkg !== m.package_id)) return {};
  const { commissionable_value: commissionable, ...outcomes } = m.outcomes ?? {};
  return {
    ...(m.viewability ? { viewability: m.viewability } : {}),
    ...(pkg !== null && m.vendor_metric_values
      ? { vendor_metric_values: m.vendor_metric_values }
      : {}),
    ...outcomes,
    ...(commissionable !== undefined && pinned32 ? { commissionable_value: commissionable } : {}),
  };
}

/**
 * A row's finality members (3.1 billing finality), once the seller has said anything of
 * them: `is_final`, `finalized_at` only when final, and on packages the measurement window
 * the numbers come from. Nothing before: the members are optional, and silence is not
 * "provisional".
 */
function finalityMembers(b: BuyRow, pkg: boolean): Record<string, unknown> {
  const f = b.delivery_finality;
  if (!f) return {};
  return {
    is_final: f.is_final,
    ...(f.is_final && f.finalized_at ? { finalized_at: f.finalized_at } : {}),
    ...(pkg && f.measurement_window ? { measurement_window: f.measurement_window } : {}),
  };
}

const FeedbackSchema = z.looseObject({
  media_buy_id: z.string().min(1).max(255),
  measurement_period: z
    .looseObject({ start: z.string().min(1), end: z.string().min(1) })
    .optional(),
  performance_index: z.number().min(0).max(100),
  package_id: z.string().min(1).optional(),
  creative_id: z.string().min(1).optional(),
  metric_type: z.string().min(1).max(64).optional(),
  feedback_source: z.string().min(1).max(64).optional(),
  // The spec shows no request of this task ("not shown"): only the published form exists.
  idempotency_key: RequiredIdempotencyKeySchema,
  context: z.unknown().optional(),
});

export function registerDeliveryTasks(registry: TaskRegistry): void {
  registry.add({
    name: 'get_media_buy_delivery',
    description: 'Delivery numbers (impressions, spend, clicks) per buy and package.',
    agent: 'sales',
    schema: GetDeliverySchema,
    auth: { tier: 'authenticated', permission: { resource: 'reports', permission: 'read' } },
    expectedDuration: '60s',
    mode: 'sync',
    mutating: false,
    errorShape: 'single',
    handle: async (params, ctx) => ({ status: 'completed', body: await getDelivery(params, ctx) }),
  });
  registry.add({
    name: 'provide_performance_feedback',
    description: 'Send performance signals for optimization.',
    agent: 'sales',
    schema: FeedbackSchema,
    auth: { tier: 'authenticated', permission: { resource: 'media_buys', permission: 'write' } },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: true,
    errorShape: 'single',
    handle: async (params, ctx) => {
      const buy = await loadBuy(
        ctx.db,
        ctx.schema,
        params.media_buy_id,
        ctx.principal!.principal_id,
      );
      if (params.package_id) {
        const pkgs = await loadPackages(ctx.db, ctx.schema, [buy.media_buy_id]);
        if (!pkgs.some((p) => p.package_id === params.package_id)) {
          throw taskError('PACKAGE_NOT_FOUND', 'no such package in this media buy', {
            field: 'package_id',
          });
        }
      }
      const feedbackId = `fb_${randomUUID()}`;
      const { idempotency_key: _key, context: _context, ...stored } = params;
      await ctx.db.query(
        `INSERT INTO ${ctx.schema}.performance_feedback (feedback_id, media_buy_id, principal_id, body)
         VALUES ($1, $2, $3, $4)`,
        [feedbackId, buy.media_buy_id, buy.principal_id, stored],
      );
      return { status: 'completed', body: { success: true, feedback_id: feedbackId } };
    },
  });
}

/**
 * The sender's `DeliveryDataSource` (sender/channels/types.ts): numbers of one UTC period
 * (`end` is the period's last second), accrued up to the period end first.
 */
export class SimulatedDeliverySource {
  constructor(
    private readonly deps: {
      pool: Pool;
      schema: string;
      clock: AgentClock;
      notifications: AgentNotifications;
    },
  ) {}

  async getDelivery(mediaBuyId: string, period: { start: string; end: string }) {
    const { pool, schema, clock, notifications } = this.deps;
    const from = new Date(period.start);
    const to = new Date(new Date(period.end).getTime() + 1000);
    const db = await pool.connect();
    try {
      await db.query('BEGIN');
      const buy = await loadBuy(db, schema, mediaBuyId, null, { forUpdate: true });
      const until = new Date(Math.min(clock.nowMs(), to.getTime()));
      await accrueBuy(db, schema, buy, until, notifications);
      if (buy.status === 'reporting_delayed') {
        await db.query('COMMIT');
        return {
          late: true as const,
          currency: buy.currency,
          ...(buy.reporting_expected_at
            ? { expectedAvailability: buy.reporting_expected_at.toISOString() }
            : {}),
        };
      }
      const packages = await loadPackages(db, schema, [mediaBuyId]);
      const rows = await sums(db, schema, [mediaBuyId], from, to);
      const { rows: st } = await db.query<{ status: string }>(
        `SELECT status FROM ${schema}.media_buys WHERE media_buy_id = $1`,
        [mediaBuyId],
      );
      await db.query('COMMIT');
      const byPackage = packages.map((p) => {
        const r = rows.find((x) => x.package_id === p.package_id) ?? {
          impressions: 0,
          clicks: 0,
          spend: 0,
        };
        const m = metrics(r);
        return {
          package_id: p.package_id,
          spend: m.spend!,
          impressions: m.impressions!,
          clicks: m.clicks!,
        };
      });
      const totals = byPackage.reduce(
        (a, p) => ({
          spend: round2(a.spend + p.spend),
          impressions: a.impressions + p.impressions,
          clicks: a.clicks + p.clicks,
        }),
        { spend: 0, impressions: 0, clicks: 0 },
      );
      // A revenue share (3.2 only) is not named in a report every release must accept.
      const models = [
        ...new Set(
          packages
            .filter((p) => !isContingent(p))
            .map((p) => publishedPricingModel(p.pricing_model)),
        ),
      ];
      return {
        totals,
        by_package: byPackage,
        status: deliveryStatus(st[0]?.status ?? buy.status),
        currency: buy.currency,
        ...(models.length === 1 && !packages.some(isContingent)
          ? { pricing_model: models[0]! }
          : {}),
      };
    } catch (err) {
      await db.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      db.release();
    }
  }
}
