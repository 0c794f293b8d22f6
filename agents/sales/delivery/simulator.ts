/**
 * The delivery simulator: active buys accrue impressions, clicks and spend per package on
 * the agents' (speedable) clock, evenly across the flight so the budget is spent by the
 * end time, into hourly buckets. Pure arithmetic, no randomness: the same clock gives the
 * same numbers. A buy whose end time has passed completes (final report via the sender).
 */
import { withTransaction, type Pool, type PoolClient } from '../../../shared/infra/pg.js';
import type { AgentClock } from '../../runtime/clock.js';
import type { AgentNotifications } from '../../runtime/types.js';
import { loadPackages, type BuyRow, type PackageRow } from '../media-buys/records.js';
import { isContingent, isFlatRate } from '../catalog/pricing.js';

const HOUR = 3600_000;
/** Flat-fee inventory is counted at this notional CPM. */
export const FLAT_FEE_NOTIONAL_CPM = 8;

export function impressionsFor(
  p: Pick<PackageRow, 'pricing_model' | 'rate'>,
  spend: number,
): number {
  const cpm = isFlatRate(p.pricing_model) ? FLAT_FEE_NOTIONAL_CPM : p.rate;
  return cpm > 0 ? (spend / cpm) * 1000 : 0;
}

/**
 * Accrues `buy` (locked by the caller, status active) up to `until`. Returns true when
 * the flight ended and the buy was completed.
 */
export async function accrueBuy(
  db: PoolClient,
  schema: string,
  buy: BuyRow,
  until: Date,
  notifications: AgentNotifications,
): Promise<boolean> {
  // Delivery goes on while reporting is delayed; only the reports wait.
  if (buy.status !== 'active' && buy.status !== 'reporting_delayed') return false;
  const start = buy.start_at.getTime();
  const end = buy.end_at.getTime();
  const from = Math.max(buy.accrued_until?.getTime() ?? start, start);
  const to = Math.min(until.getTime(), end);
  if (to > from) {
    const packages = await loadPackages(db, schema, [buy.media_buy_id]);
    const { rows: ctrRows } = await db.query<{ product_id: string; ctr: number }>(
      `SELECT product_id, ctr::float8 AS ctr FROM ${schema}.products WHERE product_id = ANY($1)`,
      [packages.map((p) => p.product_id)],
    );
    const ctr = new Map(ctrRows.map((r) => [r.product_id, r.ctr]));
    const flight = Math.max(end - start, 1);
    const pkgIds: string[] = [];
    const hours: Date[] = [];
    const imps: number[] = [];
    const clicks: number[] = [];
    const spends: number[] = [];
    for (const p of packages) {
      // A revenue share accrues nothing with time: its spend is the commission on the
      // settled value the seller reports (simulate_delivery), not a pace through the budget.
      if (p.paused || isContingent(p)) continue;
      const perMs = p.budget / flight;
      let t = from;
      while (t < to) {
        const hourStart = Math.floor(t / HOUR) * HOUR;
        const sliceEnd = Math.min(hourStart + HOUR, to);
        const spend = perMs * (sliceEnd - t);
        const i = impressionsFor(p, spend);
        pkgIds.push(p.package_id);
        hours.push(new Date(hourStart));
        imps.push(i);
        clicks.push(i * ((p.product_id !== null ? ctr.get(p.product_id) : 0) ?? 0));
        spends.push(spend);
        t = sliceEnd;
      }
    }
    if (pkgIds.length > 0) {
      await db.query(
        `INSERT INTO ${schema}.delivery (package_id, media_buy_id, hour, impressions, clicks, spend)
         SELECT u.package_id, $1, u.hour, u.imps, u.clicks, u.spend
           FROM unnest($2::text[], $3::timestamptz[], $4::float8[], $5::float8[], $6::float8[])
             AS u(package_id, hour, imps, clicks, spend)
         ON CONFLICT (package_id, hour) DO UPDATE SET
           impressions = ${schema}.delivery.impressions + EXCLUDED.impressions,
           clicks = ${schema}.delivery.clicks + EXCLUDED.clicks,
           spend = ${schema}.delivery.spend + EXCLUDED.spend`,
        [buy.media_buy_id, pkgIds, hours, imps, clicks, spends],
      );
    }
    await db.query(`UPDATE ${schema}.media_buys SET accrued_until = $2 WHERE media_buy_id = $1`, [
      buy.media_buy_id,
      new Date(to),
    ]);
  }
  if (until.getTime() >= end) {
    await db.query(
      `UPDATE ${schema}.media_buys SET status = 'completed', updated_at = now() WHERE media_buy_id = $1`,
      [buy.media_buy_id],
    );
    await notifications.mediaBuyTerminal({
      mediaBuyId: buy.media_buy_id,
      principalId: buy.principal_id,
      status: 'completed',
      client: db,
    });
    return true;
  }
  return false;
}

export class DeliverySimulator {
  private readonly pool: Pool;
  private readonly schema: string;
  private readonly clock: AgentClock;
  private readonly notifications: AgentNotifications;

  constructor(options: {
    pool: Pool;
    schema: string;
    clock: AgentClock;
    notifications: AgentNotifications;
  }) {
    this.pool = options.pool;
    this.schema = options.schema;
    this.clock = options.clock;
    this.notifications = options.notifications;
  }

  /** Accrues every active buy up to now (bounded per call); resolves to buys touched. */
  async tick(limit = 200): Promise<number> {
    const now = this.clock.now();
    const { rows } = await this.pool.query<{ media_buy_id: string }>(
      `SELECT media_buy_id FROM ${this.schema}.media_buys
        WHERE status IN ('active', 'reporting_delayed') AND (accrued_until IS NULL OR accrued_until < LEAST(end_at, $1))
        ORDER BY accrued_until NULLS FIRST LIMIT $2`,
      [now, limit],
    );
    for (const { media_buy_id } of rows) await this.accrue(media_buy_id, now);
    return rows.length;
  }

  /** Accrues one buy up to `until` in its own transaction. */
  async accrue(mediaBuyId: string, until: Date = this.clock.now()): Promise<void> {
    await withTransaction(this.pool, async (db) => {
      const { rows } = await db.query<BuyRow>(
        `SELECT * FROM ${this.schema}.media_buys WHERE media_buy_id = $1 FOR UPDATE SKIP LOCKED`,
        [mediaBuyId],
      );
      if (rows[0]) await accrueBuy(db, this.schema, rows[0], until, this.notifications);
    });
  }
}
