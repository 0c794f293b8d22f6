/**
 * The media-buy scenarios of the sales agent's test controller: seed_media_buy and
 * simulate_delivery (sandbox callers only, checked by the controller before these run).
 */
import type { DeliveryFinality, DeliveryMeasurement } from '../sales/media-buys/records.js';
import type { TaskContext } from '../runtime/types.js';
import type { ControllerRequest } from './request.js';
import { refuse, str } from './replies.js';

/**
 * Published media-buy statuses a seeded buy may take -> ours (pending = not started yet). A
 * buy seeded active or paused is live: it never reads as pending_* (media-buy-records.ts).
 */
const SEED_BUY_STATUS: Record<string, string> = {
  pending_creatives: 'pending',
  pending_start: 'pending',
  active: 'active',
  paused: 'paused',
  completed: 'completed',
  canceled: 'canceled',
};

const ID = /^[A-Za-z0-9_.:-]{1,255}$/;

/** A seeded buy's package, as its fixture gives it (ids, budget, the buyer's context). */
interface SeedPackage {
  package_id: string;
  product_id: string | null;
  pricing_option_id: string | null;
  budget: number;
  buyer_ref: string | null;
  context: Record<string, unknown> | null;
  creative_ids: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** One `fixture.packages[i]`, or the refusal's detail. */
function seedPackage(raw: unknown, i: number): SeedPackage | string {
  const at = `params.fixture.packages[${i}]`;
  if (!isObject(raw)) return `${at} must be an object`;
  const id = (k: string): string | null | undefined =>
    raw[k] === undefined
      ? null
      : typeof raw[k] === 'string' && ID.test(raw[k])
        ? raw[k]
        : undefined;
  const [packageId, productId, optionId] = [
    id('package_id'),
    id('product_id'),
    id('pricing_option_id'),
  ];
  if (!packageId) return `${at}.package_id (letters, digits, _ . : -) is required`;
  if (productId === undefined || optionId === undefined) {
    return `${at}.product_id and .pricing_option_id must be ids (letters, digits, _ . : -)`;
  }
  const budget = raw.budget ?? 0;
  if (typeof budget !== 'number' || !Number.isFinite(budget) || budget < 0) {
    return `${at}.budget must be a number >= 0`;
  }
  if (raw.context !== undefined && !isObject(raw.context)) return `${at}.context must be an object`;
  const buyerRef = raw.buyer_ref ?? null;
  if (buyerRef !== null && (typeof buyerRef !== 'string' || buyerRef.length > 255)) {
    return `${at}.buyer_ref must be a string (at most 255 characters)`;
  }
  // Published assignments are {creative_id}; the storyboards' fixtures also list bare ids.
  const assignments = raw.creative_assignments ?? [];
  const creativeIds = Array.isArray(assignments)
    ? assignments.map((a: unknown) => (isObject(a) ? a.creative_id : a))
    : null;
  if (
    !creativeIds ||
    creativeIds.length > 100 ||
    !creativeIds.every((c) => typeof c === 'string' && c !== '' && c.length <= 255)
  ) {
    return `${at}.creative_assignments must list creative ids (at most 100)`;
  }
  return {
    package_id: packageId,
    product_id: productId,
    pricing_option_id: optionId,
    budget,
    buyer_ref: buyerRef,
    context: (raw.context as Record<string, unknown> | undefined) ?? null,
    creative_ids: creativeIds as string[],
  };
}

/** `fixture.packages` (absent: none), or the refusal's detail. */
function seedPackages(raw: unknown): SeedPackage[] | string {
  if (raw === undefined) return [];
  if (!Array.isArray(raw) || raw.length > 50) {
    return 'params.fixture.packages must be an array (at most 50)';
  }
  const out: SeedPackage[] = [];
  for (const [i, r] of raw.entries()) {
    const pkg = seedPackage(r, i);
    if (typeof pkg === 'string') return pkg;
    if (out.some((o) => o.package_id === pkg.package_id)) {
      return `params.fixture.packages[${i}].package_id repeats another package's`;
    }
    out.push(pkg);
  }
  return out;
}

/**
 * The seeded buy's packages, replacing any it had: the pricing model and rate are those of
 * the named pricing option when the caller's product has one (else CPM at 0), and only
 * creatives the caller has are assigned. False when a package id is another buy's.
 */
async function storeSeedPackages(
  ctx: TaskContext,
  mediaBuyId: string,
  packages: SeedPackage[],
): Promise<boolean> {
  const s = ctx.schema;
  const { rows: taken } = await ctx.db.query(
    `SELECT 1 FROM ${s}.packages WHERE package_id = ANY($1) AND media_buy_id <> $2`,
    [packages.map((p) => p.package_id), mediaBuyId],
  );
  if (taken.length > 0) return false;
  await ctx.db.query(`DELETE FROM ${s}.packages WHERE media_buy_id = $1`, [mediaBuyId]);
  for (const [position, p] of packages.entries()) {
    const { rows } = await ctx.db.query<{
      option: { pricing_model?: string; fixed_price?: number; floor_price?: number } | null;
    }>(
      `SELECT (SELECT o FROM jsonb_array_elements(pricing_options) o
                WHERE o->>'pricing_option_id' = $2 LIMIT 1) AS option
         FROM ${s}.products WHERE product_id = $1`,
      [p.product_id, p.pricing_option_id],
    );
    const option = rows[0]?.option ?? null;
    await ctx.db.query(
      `INSERT INTO ${s}.packages (package_id, media_buy_id, buyer_ref, product_id, pricing_option_id,
         pricing_model, rate, budget, position, context)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        p.package_id,
        mediaBuyId,
        p.buyer_ref,
        p.product_id,
        p.pricing_option_id,
        option?.pricing_model ?? 'cpm',
        option?.fixed_price ?? option?.floor_price ?? 0,
        p.budget,
        position,
        p.context,
      ],
    );
    await ctx.db.query(
      `INSERT INTO ${s}.creative_assignments (principal_id, creative_id, package_id)
       SELECT principal_id, creative_id, $3 FROM ${s}.creatives
        WHERE principal_id = $1 AND creative_id = ANY($2)`,
      [ctx.principal!.principal_id, p.creative_ids, p.package_id],
    );
  }
  return true;
}

/**
 * A media buy of the caller's as the fixture describes it (status, currency, flight, its
 * packages): enough for get_media_buys, delivery and the lifecycle tasks to find it. Its
 * delivery is only what simulate_delivery books (the simulator never accrues it). Upsert
 * for the caller's own id; an id another principal holds is refused.
 */
export async function seedMediaBuy(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const mediaBuyId = str(p.media_buy_id);
  const fixture = (p.fixture ?? {}) as Record<string, unknown>;
  if (!mediaBuyId || !/^[A-Za-z0-9_.-]{1,255}$/.test(mediaBuyId)) {
    return refuse('INVALID_PARAMS', 'params.media_buy_id (letters, digits, _ . -) is required');
  }
  if (typeof fixture !== 'object' || fixture === null || Array.isArray(fixture)) {
    return refuse('INVALID_PARAMS', 'params.fixture must be an object');
  }
  const wire = fixture.status ?? 'active';
  const status = typeof wire === 'string' ? SEED_BUY_STATUS[wire] : undefined;
  if (!status) {
    return refuse(
      'INVALID_PARAMS',
      `params.fixture.status must be one of ${Object.keys(SEED_BUY_STATUS).join(', ')}`,
    );
  }
  const packages = seedPackages(fixture.packages);
  if (typeof packages === 'string') return refuse('INVALID_PARAMS', packages);
  if (fixture.context !== undefined && !isObject(fixture.context)) {
    return refuse('INVALID_PARAMS', 'params.fixture.context must be an object');
  }
  const currency = fixture.currency ?? 'USD';
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) {
    return refuse('INVALID_PARAMS', 'params.fixture.currency must be an ISO 4217 code (USD)');
  }
  const day = 86_400_000;
  const start =
    fixture.start_time === undefined
      ? new Date(ctx.clock.nowMs() - day)
      : new Date(String(fixture.start_time));
  const end =
    fixture.end_time === undefined
      ? new Date(ctx.clock.nowMs() + 30 * day)
      : new Date(String(fixture.end_time));
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime()) || end <= start) {
    return refuse(
      'INVALID_PARAMS',
      'params.fixture start_time/end_time must be ISO date-times, end after start',
    );
  }
  await ctx.db.query('SAVEPOINT seed_media_buy');
  // accrued_until = end: the simulator adds nothing to a fixture's delivery.
  const { rowCount } = await ctx.db.query(
    `INSERT INTO ${ctx.schema}.media_buys (media_buy_id, principal_id, status, brand_manifest,
       start_time, start_at, end_at, currency, approved_at, went_live, context, accrued_until)
     VALUES ($1, $2, $3, '{}', $4, $5, $6, $7, now(), $3 IN ('active', 'paused'), $8, $6)
     ON CONFLICT (media_buy_id) DO UPDATE SET status = EXCLUDED.status,
       went_live = ${ctx.schema}.media_buys.went_live OR EXCLUDED.went_live,
       start_time = EXCLUDED.start_time, start_at = EXCLUDED.start_at, end_at = EXCLUDED.end_at,
       currency = EXCLUDED.currency, context = EXCLUDED.context,
       accrued_until = EXCLUDED.accrued_until, updated_at = now()
     WHERE ${ctx.schema}.media_buys.principal_id = EXCLUDED.principal_id`,
    [
      mediaBuyId,
      ctx.principal!.principal_id,
      status,
      JSON.stringify(start.toISOString()),
      start,
      end,
      currency,
      fixture.context ?? null,
    ],
  );
  if (!rowCount) return refuse('FORBIDDEN', `media buy ${mediaBuyId} belongs to another buyer`);
  // No packages in the fixture: the buy keeps those it has.
  if (fixture.packages !== undefined && !(await storeSeedPackages(ctx, mediaBuyId, packages))) {
    await ctx.db.query('ROLLBACK TO SAVEPOINT seed_media_buy');
    return refuse('FORBIDDEN', 'a package id of the fixture belongs to another media buy');
  }
  return { success: true, message: `media buy ${mediaBuyId} seeded (${String(wire)})` };
}

/** The last hour a delivery report already covers (the agents' clock), not before the flight. */
function reportedHour(ctx: TaskContext, startAt: Date): Date {
  const hour = 3_600_000;
  const last = Math.floor(ctx.clock.nowMs() / hour) * hour - hour;
  return new Date(Math.max(last, Math.floor(startAt.getTime() / hour) * hour));
}

const count = (v: unknown): number | null =>
  v === undefined ? 0 : Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : null;

/**
 * The finality simulate_delivery may state (3.1 billing finality): `is_final` (boolean),
 * `finalized_at` (an ISO 8601 time, only with is_final true, and required then) and
 * `measurement_window` (a window id). Null when none is given; a string when a
 * member is malformed (the refusal's detail).
 */
export function finalityParams(p: Record<string, unknown>): DeliveryFinality | null | string {
  const { is_final: isFinal, finalized_at: at, measurement_window: window } = p;
  if (isFinal === undefined && at === undefined && window === undefined) return null;
  if (typeof isFinal !== 'boolean') return 'params.is_final must be a boolean';
  // A window id (reporting-capabilities.json measurement_windows: 'c7', 'post_givt'...).
  if (
    window !== undefined &&
    (typeof window !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(window))
  ) {
    return 'params.measurement_window must be a window id (1-64 letters, digits, _ . -)';
  }
  if (!isFinal && at !== undefined) return 'params.finalized_at is only for final delivery';
  if (isFinal && (typeof at !== 'string' || Number.isNaN(Date.parse(at)) || !/^\d{4}-/.test(at))) {
    return 'params.finalized_at must be an ISO 8601 date-time when params.is_final is true';
  }
  return {
    is_final: isFinal,
    ...(isFinal ? { finalized_at: new Date(at as string).toISOString() } : {}),
    ...(typeof window === 'string' ? { measurement_window: window } : {}),
  };
}

const VIEWABILITY_STANDARDS = ['mrc', 'groupm'];
const DOMAIN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;
const METRIC_ID = /^[a-z][a-z0-9_]{0,63}$/;
/** A BrandRef of a measurement vendor: an object with a lowercase domain. */
const isVendor = (v: unknown): boolean =>
  isObject(v) && typeof v.domain === 'string' && DOMAIN.test(v.domain);
const amount = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** `params.viewability` (delivery-metrics.json `viewability`), or the refusal's detail. */
function viewabilityParam(v: unknown): Record<string, unknown> | string {
  const bad =
    'params.viewability must be {measurable_impressions, viewable_impressions (numbers >= 0, ' +
    'viewable <= measurable), viewable_rate (0-1), viewed_seconds (>= 0), standard (mrc, groupm)}';
  if (!isObject(v)) return bad;
  const { measurable_impressions: measurable, viewable_impressions: viewable } = v;
  const { viewable_rate: rate, viewed_seconds: seconds, standard } = v;
  if (!amount(measurable) || !amount(viewable) || (viewable as number) > (measurable as number)) {
    return bad;
  }
  if (rate !== undefined && !(amount(rate) && (rate as number) <= 1)) return bad;
  if (seconds !== undefined && !amount(seconds)) return bad;
  if (standard !== undefined && !VIEWABILITY_STANDARDS.includes(standard as string)) return bad;
  if (v.vendor !== undefined && !isVendor(v.vendor)) {
    return 'params.viewability.vendor must be {domain: a lowercase domain}';
  }
  return {
    ...(v.vendor !== undefined
      ? { vendor: { domain: (v.vendor as { domain: string }).domain } }
      : {}),
    measurable_impressions: measurable,
    viewable_impressions: viewable,
    // The rate's denominator is measurable impressions (delivery-metrics.json).
    viewable_rate:
      rate ?? ((measurable as number) > 0 ? (viewable as number) / (measurable as number) : 0),
    ...(seconds !== undefined ? { viewed_seconds: seconds } : {}),
    ...(standard !== undefined ? { standard } : {}),
  };
}

/** One `params.vendor_metric_values[i]` (core/vendor-metric-value.json), or the refusal's detail. */
function vendorMetricValue(v: unknown, i: number): Record<string, unknown> | string {
  const at = `params.vendor_metric_values[${i}]`;
  if (!isObject(v)) return `${at} must be an object`;
  if (!isVendor(v.vendor)) {
    return `${at}.vendor must be {domain: a lowercase domain}`;
  }
  if (typeof v.metric_id !== 'string' || !METRIC_ID.test(v.metric_id)) {
    return `${at}.metric_id must be a vendor metric id (lowercase, digits, _; at most 64)`;
  }
  if (typeof v.value !== 'number' || !Number.isFinite(v.value))
    return `${at}.value must be a number`;
  if (v.unit !== undefined && (typeof v.unit !== 'string' || v.unit === '' || v.unit.length > 32)) {
    return `${at}.unit must be a string (1-32 characters)`;
  }
  if (v.measurable_impressions !== undefined && !amount(v.measurable_impressions)) {
    return `${at}.measurable_impressions must be a number >= 0`;
  }
  return {
    vendor: { domain: (v.vendor as { domain: string }).domain },
    metric_id: v.metric_id,
    value: v.value,
    ...(v.unit !== undefined ? { unit: v.unit } : {}),
    ...(v.measurable_impressions !== undefined
      ? { measurable_impressions: v.measurable_impressions }
      : {}),
  };
}

/**
 * The measurement simulate_delivery may state beside the counts: `viewability` and
 * `vendor_metric_values` (at most 20), as a measurement vendor reports them for the
 * package delivery is booked to. Null when neither is given; a string when malformed.
 */
const OUTCOMES = ['conversions', 'conversion_value', 'commissionable_value'] as const;

export function measurementParams(
  p: Record<string, unknown>,
): Omit<DeliveryMeasurement, 'package_id'> | null | string {
  const named = OUTCOMES.filter((k) => p[k] !== undefined);
  if (p.viewability === undefined && p.vendor_metric_values === undefined && named.length === 0) {
    return null;
  }
  const out: Omit<DeliveryMeasurement, 'package_id'> = {};
  // Attributed outcomes (delivery-metrics.json), as of this report: conversions a count,
  // the values amounts in the buy's currency.
  for (const k of named) {
    const v = p[k];
    if (k === 'conversions' ? count(v) === null : !amount(v)) {
      return `params.${k} must be ${k === 'conversions' ? 'an integer' : 'a number'} >= 0`;
    }
    out.outcomes = { ...out.outcomes, [k]: v as number };
  }
  if (p.viewability !== undefined) {
    const v = viewabilityParam(p.viewability);
    if (typeof v === 'string') return v;
    out.viewability = v;
  }
  if (p.vendor_metric_values !== undefined) {
    const raw = p.vendor_metric_values;
    if (!Array.isArray(raw) || raw.length === 0 || raw.length > 20) {
      return 'params.vendor_metric_values must be an array of 1-20 vendor metric values';
    }
    const values: Array<Record<string, unknown>> = [];
    for (const [i, r] of raw.entries()) {
      const v = vendorMetricValue(r, i);
      if (typeof v === 'string') return v;
      values.push(v);
    }
    out.vendor_metric_values = values;
  }
  return out;
}

/** `params.delivery_date` (YYYY-MM-DD): the day's first hour; undefined when not given. */
function deliveryDay(v: unknown): Date | undefined | string {
  if (v === undefined) return undefined;
  const day =
    typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) ? new Date(`${v}T00:00:00Z`) : null;
  if (!day || Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== v) {
    return 'params.delivery_date must be a date (YYYY-MM-DD)';
  }
  return day;
}

/**
 * Delivery the caller's buy reports on top of what the simulator accrues: impressions,
 * clicks and reported spend, booked to its first package in the last hour reports cover
 * (or the first hour of `delivery_date`), and, when given, the finality of what the buy
 * reports (finalityParams) and its measurement (measurementParams).
 */
export async function simulateDelivery(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const mediaBuyId = String(p.media_buy_id).slice(0, 255);
  const impressions = count(p.impressions);
  const clicks = count(p.clicks);
  if (impressions === null || clicks === null) {
    return refuse('INVALID_PARAMS', 'params.impressions and params.clicks must be integers >= 0');
  }
  const finality = finalityParams(p);
  if (typeof finality === 'string') return refuse('INVALID_PARAMS', finality);
  const measurement = measurementParams(p);
  if (typeof measurement === 'string') return refuse('INVALID_PARAMS', measurement);
  const day = deliveryDay(p.delivery_date);
  if (typeof day === 'string') return refuse('INVALID_PARAMS', day);
  const spend = (p.reported_spend ?? { amount: 0 }) as { amount?: unknown; currency?: unknown };
  if (
    typeof spend !== 'object' ||
    spend === null ||
    typeof spend.amount !== 'number' ||
    !Number.isFinite(spend.amount) ||
    spend.amount < 0 ||
    (spend.currency !== undefined && typeof spend.currency !== 'string')
  ) {
    return refuse(
      'INVALID_PARAMS',
      'params.reported_spend must be {amount: number >= 0, currency: ISO 4217 code}',
    );
  }
  const { rows } = await ctx.db.query<{
    currency: string;
    start_at: Date;
    package_id: string | null;
  }>(
    `SELECT b.currency, b.start_at, (SELECT package_id FROM ${ctx.schema}.packages k
        WHERE k.media_buy_id = b.media_buy_id ORDER BY package_id LIMIT 1) AS package_id
       FROM ${ctx.schema}.media_buys b WHERE b.media_buy_id = $1 AND b.principal_id = $2`,
    [mediaBuyId, ctx.principal!.principal_id],
  );
  const buy = rows[0];
  if (!buy) return refuse('NOT_FOUND', `no media buy ${mediaBuyId}`, null);
  if (spend.currency !== undefined && spend.currency !== buy.currency) {
    return refuse('INVALID_PARAMS', `params.reported_spend.currency must be ${buy.currency}`);
  }
  if (!buy.package_id) {
    return refuse('INVALID_PARAMS', `media buy ${mediaBuyId} has no package to deliver`);
  }
  await ctx.db.query(
    `INSERT INTO ${ctx.schema}.delivery (package_id, media_buy_id, hour, impressions, clicks, spend)
     VALUES ($1, $2, $6, $3, $4, $5)
     ON CONFLICT (package_id, hour) DO UPDATE SET
       impressions = ${ctx.schema}.delivery.impressions + EXCLUDED.impressions,
       clicks = ${ctx.schema}.delivery.clicks + EXCLUDED.clicks,
       spend = ${ctx.schema}.delivery.spend + EXCLUDED.spend`,
    [
      buy.package_id,
      mediaBuyId,
      impressions,
      clicks,
      spend.amount,
      day ?? reportedHour(ctx, buy.start_at),
    ],
  );
  if (measurement) {
    await ctx.db.query(
      `UPDATE ${ctx.schema}.media_buys SET delivery_measurement = $2 WHERE media_buy_id = $1`,
      [mediaBuyId, { package_id: buy.package_id, ...measurement }],
    );
  }
  if (finality) {
    await ctx.db.query(
      `UPDATE ${ctx.schema}.media_buys SET delivery_finality = $2 WHERE media_buy_id = $1`,
      [mediaBuyId, finality],
    );
  }
  const { rows: sum } = await ctx.db.query<{ i: number; c: number; s: number }>(
    `SELECT coalesce(sum(impressions), 0) AS i, coalesce(sum(clicks), 0) AS c,
       coalesce(sum(spend), 0) AS s FROM ${ctx.schema}.delivery WHERE media_buy_id = $1`,
    [mediaBuyId],
  );
  const money = (amount: number) => ({
    amount: Math.round(amount * 100) / 100,
    currency: buy.currency,
  });
  return {
    success: true,
    simulated: { impressions, clicks, reported_spend: money(spend.amount) },
    cumulative: {
      impressions: Math.round(Number(sum[0]!.i)),
      clicks: Math.round(Number(sum[0]!.c)),
      reported_spend: money(Number(sum[0]!.s)),
    },
    message: `delivery booked to package ${buy.package_id}`,
  };
}
