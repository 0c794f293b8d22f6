/**
 * The media-buy scenarios of the sales agent's test controller: seed_media_buy and
 * simulate_delivery (sandbox callers only, checked by the controller before these run).
 */
import type { DeliveryFinality } from '../sales/media-buys/records.js';
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

/**
 * A media buy of the caller's without packages, as the fixture describes it (status,
 * currency, flight): enough for get_media_buys and the lifecycle tasks to find it. Upsert
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
  const { rowCount } = await ctx.db.query(
    `INSERT INTO ${ctx.schema}.media_buys (media_buy_id, principal_id, status, brand_manifest,
       start_time, start_at, end_at, currency, approved_at, went_live)
     VALUES ($1, $2, $3, '{}', $4, $5, $6, $7, now(), $3 IN ('active', 'paused'))
     ON CONFLICT (media_buy_id) DO UPDATE SET status = EXCLUDED.status,
       went_live = ${ctx.schema}.media_buys.went_live OR EXCLUDED.went_live,
       start_time = EXCLUDED.start_time, start_at = EXCLUDED.start_at, end_at = EXCLUDED.end_at,
       currency = EXCLUDED.currency, updated_at = now()
     WHERE ${ctx.schema}.media_buys.principal_id = EXCLUDED.principal_id`,
    [
      mediaBuyId,
      ctx.principal!.principal_id,
      status,
      JSON.stringify(start.toISOString()),
      start,
      end,
      currency,
    ],
  );
  if (!rowCount) return refuse('FORBIDDEN', `media buy ${mediaBuyId} belongs to another buyer`);
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

/**
 * Delivery the caller's buy reports on top of what the simulator accrues: impressions,
 * clicks and reported spend, booked to its first package in the last hour reports cover,
 * and, when given, the finality of what the buy reports (finalityParams).
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
      reportedHour(ctx, buy.start_at),
    ],
  );
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
