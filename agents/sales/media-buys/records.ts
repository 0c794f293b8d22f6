/**
 * Media buy and package rows, and their wire shapes. Internal statuses are ours (`pending`
 * awaiting seller approval, `reporting_delayed`); the wire says the published
 * `media-buy-status` of each (`wireBuyStatus`).
 */
import { randomUUID } from 'node:crypto';
import type { PoolClient } from '../../../shared/infra/pg.js';
import { taskError } from '../../runtime/errors.js';
import { publishedPricingModel } from '../catalog/pricing.js';

export const BUY_STATUSES = [
  'pending',
  'active',
  'paused',
  'reporting_delayed',
  'completed',
  'canceled',
  'rejected',
] as const;
export type BuyStatus = (typeof BUY_STATUSES)[number];
export const TERMINAL_BUY = new Set<string>(['completed', 'canceled', 'rejected']);

/** A buy's reported delivery: provisional in a measurement window, or final since a time. */
export interface DeliveryFinality {
  is_final: boolean;
  finalized_at?: string;
  measurement_window?: string;
}

/**
 * Measurement a buy's delivery reports beside its counts (delivery-metrics.json): the
 * `viewability` block and `vendor_metric_values`, both of the package they were measured on.
 */
export interface DeliveryMeasurement {
  package_id: string;
  viewability?: Record<string, unknown>;
  vendor_metric_values?: Array<Record<string, unknown>>;
  /** Attributed outcomes as last stated (commissionable_value: a revenue share's basis). */
  outcomes?: { conversions?: number; conversion_value?: number; commissionable_value?: number };
}

export interface BuyRow {
  media_buy_id: string;
  principal_id: string;
  buyer_ref: string | null;
  status: BuyStatus;
  brand_manifest: Record<string, unknown>;
  start_time: Record<string, unknown>;
  start_at: Date;
  end_at: Date;
  currency: string;
  push_notification_config: Record<string, unknown> | null;
  reporting_webhook: Record<string, unknown> | null;
  context: Record<string, unknown> | null;
  task_id: string | null;
  accrued_until: Date | null;
  approved_at: Date | null;
  reporting_expected_at: Date | null;
  /** Bumped by every change of the buy (the published optimistic-concurrency revision). */
  revision: number;
  /** Created with `paused: true`: approval makes it paused rather than active. */
  held: boolean;
  /** Has been active or paused on the wire: never pending_creatives/pending_start again. */
  went_live: boolean;
  /** What the seller last said of its reported delivery's finality (null: nothing yet). */
  delivery_finality: DeliveryFinality | null;
  /** The measurement last stated of its delivery (null: none). */
  delivery_measurement: DeliveryMeasurement | null;
  created_at: Date;
  updated_at: Date;
}

export interface PackageRow {
  package_id: string;
  media_buy_id: string;
  buyer_ref: string | null;
  /** Null only on a seeded legacy package (the test controller's fixtures). */
  product_id: string | null;
  pricing_option_id: string | null;
  pricing_model: string;
  rate: number;
  budget: number;
  bid_price: number | null;
  targeting_overlay: Record<string, unknown> | null;
  paused: boolean;
  position: number;
  /** The buyer's accepted measurement_terms, if it proposed any. */
  measurement_terms: Record<string, unknown> | null;
  /** The buyer's context of a seeded package (fixtures), echoed on reads. */
  context: Record<string, unknown> | null;
  /** The product's enumerated age intervals (3.2 demographic_targeting), if it has any. */
  age_intervals?: unknown;
  /** The product's `allowed_actions` (a seeded product's), if it declares any. */
  allowed_actions?: unknown;
}

export function newMediaBuyId(): string {
  return `mb_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
}

export function newPackageId(): string {
  return `pkg_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
}

/** The buy if it is the principal's; MEDIA_BUY_NOT_FOUND otherwise. */
export async function loadBuy(
  db: Pick<PoolClient, 'query'>,
  schema: string,
  mediaBuyId: string,
  principalId: string | null,
  options: { forUpdate?: boolean; field?: string } = {},
): Promise<BuyRow> {
  const { rows } = await db.query<BuyRow>(
    `SELECT * FROM ${schema}.media_buys WHERE media_buy_id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [mediaBuyId],
  );
  const buy = rows[0];
  if (!buy || (principalId !== null && buy.principal_id !== principalId)) {
    throw taskError('MEDIA_BUY_NOT_FOUND', `no media buy ${String(mediaBuyId).slice(0, 80)}`, {
      field: options.field ?? 'media_buy_id',
    });
  }
  return buy;
}

/**
 * Locks a buy for a change that may end its create task. The task row is locked first,
 * the order the executor uses (task, then buy), so the two never deadlock.
 */
export async function lockBuyAndTask(
  db: Pick<PoolClient, 'query'>,
  schema: string,
  mediaBuyId: string,
  principalId: string | null,
): Promise<BuyRow> {
  const { rows } = await db.query<{ task_id: string | null }>(
    `SELECT task_id FROM ${schema}.media_buys WHERE media_buy_id = $1`,
    [mediaBuyId],
  );
  const taskId = rows[0]?.task_id;
  if (taskId)
    await db.query(`SELECT 1 FROM ${schema}.tasks WHERE task_id = $1 FOR UPDATE`, [taskId]);
  return loadBuy(db, schema, mediaBuyId, principalId, { forUpdate: true });
}

export async function loadPackages(
  db: Pick<PoolClient, 'query'>,
  schema: string,
  mediaBuyIds: string[],
): Promise<PackageRow[]> {
  const { rows } = await db.query<PackageRow>(
    // The product's age intervals and allowed actions ride along (one join, not a query per
    // package): packageView and available_actions read them.
    `SELECT pk.package_id, pk.media_buy_id, pk.buyer_ref, pk.product_id, pk.pricing_option_id,
            pk.pricing_model, pk.rate::float8 AS rate, pk.budget::float8 AS budget,
            pk.bid_price::float8 AS bid_price, pk.targeting_overlay, pk.paused, pk.position,
            pk.measurement_terms, pk.context,
            pr.fixture->'demographic_targeting'->'age'->'intervals' AS age_intervals,
            pr.fixture->'allowed_actions' AS allowed_actions
       FROM ${schema}.packages pk LEFT JOIN ${schema}.products pr ON pr.product_id = pk.product_id
      WHERE pk.media_buy_id = ANY($1) ORDER BY pk.media_buy_id, pk.position`,
    [mediaBuyIds],
  );
  return rows;
}

export async function assignmentsOf(
  db: Pick<PoolClient, 'query'>,
  schema: string,
  packageIds: string[],
): Promise<Map<string, string[]>> {
  const { rows } = await db.query<{ package_id: string; creative_id: string }>(
    `SELECT package_id, creative_id FROM ${schema}.creative_assignments
      WHERE package_id = ANY($1) ORDER BY creative_id`,
    [packageIds],
  );
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.package_id, [...(out.get(r.package_id) ?? []), r.creative_id]);
  return out;
}

/**
 * The published status of a buy (the lifecycle graph of `media-buy-status.json`). A buy
 * that is not live yet (awaiting seller approval, or approved and never yet active or
 * paused on the wire) is `pending_creatives` until creatives are assigned, then
 * `pending_start` until its flight starts; an approved one with creatives is `active`
 * from the flight start on. A reporting delay is ours: the buy is still `active`.
 */
export function wireBuyStatus(
  buy: Pick<BuyRow, 'status' | 'start_at' | 'went_live'>,
  hasCreatives: boolean,
  now: Date,
): string {
  const live = buy.status === 'active' || buy.status === 'reporting_delayed';
  if (buy.status === 'pending' || (live && !buy.went_live)) {
    if (!hasCreatives) return 'pending_creatives';
    if (buy.status === 'pending' || now.getTime() < buy.start_at.getTime()) return 'pending_start';
  }
  return live ? 'active' : buy.status;
}

export function packageView(p: PackageRow, creativeIds: string[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {
    package_id: p.package_id,
    ...(p.product_id !== null ? { product_id: p.product_id } : {}),
    ...(p.pricing_option_id !== null ? { pricing_option_id: p.pricing_option_id } : {}),
    pricing_model: publishedPricingModel(p.pricing_model),
    budget: round2(p.budget),
    paused: p.paused,
    creative_assignments: creativeIds.map((creative_id) => ({ creative_id })),
    creative_ids: creativeIds,
  };
  if (p.buyer_ref !== null) out.buyer_ref = p.buyer_ref;
  if (p.bid_price !== null) out.bid_price = p.bid_price;
  if (p.targeting_overlay) out.targeting_overlay = p.targeting_overlay;
  const resolution = demographicResolution(p);
  if (resolution) out.targeting_resolution = resolution;
  if (p.measurement_terms) out.measurement_terms = p.measurement_terms;
  if (p.context) out.context = p.context;
  return out;
}

/**
 * 3.2 package `targeting_resolution.demographics` (core/demographic-targeting-resolution.json),
 * "whenever demographic targeting was requested or applied": a stored age predicate is
 * booked only exactly (create / update refuse the rest), so requested and applied are the
 * same set; executed by the product's intervals that tile it, or as continuous bounds.
 */
function demographicResolution(p: PackageRow): Record<string, unknown> | null {
  const demographics = p.targeting_overlay?.demographics as
    { age?: { min?: number; max?: number; include_unknown?: boolean } } | undefined;
  const age = demographics?.age;
  if (!age || typeof age !== 'object') return null;
  const lo = age.min ?? 0;
  const hi = age.max ?? Infinity;
  const ids = (Array.isArray(p.age_intervals) ? p.age_intervals : [])
    .filter((i: { age?: { min?: number; max?: number } }) => {
      const a = i?.age;
      return typeof a?.min === 'number' && typeof a.max === 'number' && a.min >= lo && a.max <= hi;
    })
    .map((i: { interval_id?: unknown }) => i.interval_id)
    .filter((id): id is string => typeof id === 'string');
  return {
    demographics: {
      requested: demographics,
      applied: { age: { ...age, include_unknown: age.include_unknown ?? false } },
      equivalent: true,
      execution:
        ids.length > 0
          ? { type: 'enumerated_intervals', interval_ids: ids }
          : { type: 'continuous_bounds' },
    },
  };
}

/** A stored channel config without its write-only secret. */
export function withoutCredentials(
  config: Record<string, unknown> | null,
): Record<string, unknown> | null {
  if (!config) return null;
  const copy = { ...config };
  if (copy.authentication && typeof copy.authentication === 'object') {
    const auth = { ...(copy.authentication as Record<string, unknown>) };
    delete auth.credentials;
    copy.authentication = auth;
  }
  return copy;
}

export function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
