/**
 * The delivery forecast of a configured product (published core/delivery-forecast.json,
 * the product's `forecast`; 3.2 targeting-aware discovery: "Forecast is present for the
 * effective targeting"): a spend curve from the product's first pricing option, valid as
 * long as the offer.
 *
 * An estimate, and said so (`method: estimate`): we hold no inventory model, so the curve is
 * what the price buys. A fixed price buys exactly budget / price; an auction clears at or
 * above its floor, so the floor bounds the high end and 1.25x / 1.5x the floor give the mid
 * and low ends. Impressions for impression-priced models (cpm, vcpm), clicks for cpc and
 * from the product's click-through rate; other models forecast spend only.
 */
import { minimumBudget, type PricingOption } from './pricing.js';
import type { ProductRow } from './product-row.js';

/** Spend levels of the curve (raised to the option's minimum spend, which drops lower ones). */
const BUDGETS = [1000, 5000, 25000];

const round = (n: number) => Math.round(n);

/** low / mid / high of `budget / unitPrice * scale` for this option's price structure. */
function range(budget: number, o: PricingOption, scale: number) {
  const fixed = o.fixed_price;
  if (fixed !== undefined && fixed > 0) {
    const v = round((budget / fixed) * scale);
    return { low: v, mid: v, high: v };
  }
  const floor = o.floor_price ?? 0;
  if (floor <= 0) return null;
  return {
    low: round((budget / (floor * 1.5)) * scale),
    mid: round((budget / (floor * 1.25)) * scale),
    high: round((budget / floor) * scale),
  };
}

function metricsAt(p: ProductRow, o: PricingOption, budget: number): Record<string, unknown> {
  const metrics: Record<string, unknown> = { spend: { mid: budget } };
  if (o.pricing_model === 'cpm' || o.pricing_model === 'vcpm') {
    const impressions = range(budget, o, 1000);
    if (impressions) {
      metrics.impressions = impressions;
      const ctr = Number(p.ctr);
      if (ctr > 0) {
        metrics.clicks = {
          low: round(impressions.low * ctr),
          mid: round(impressions.mid * ctr),
          high: round(impressions.high * ctr),
        };
      }
    }
  } else if (o.pricing_model === 'cpc') {
    const clicks = range(budget, o, 1);
    if (clicks) metrics.clicks = clicks;
  }
  return metrics;
}

/** The product's forecast, generated now and valid until the offer lapses; null unpriced. */
export function spendForecast(
  p: ProductRow,
  generatedAt: Date,
  validUntil: Date,
): Record<string, unknown> | null {
  const o = p.pricing_options[0];
  if (!o) return null;
  const min = minimumBudget(o);
  const budgets = [...new Set(BUDGETS.map((b) => Math.max(b, min)))];
  return {
    points: budgets.map((budget) => ({ budget, metrics: metricsAt(p, o, budget) })),
    forecast_range_unit: 'spend',
    method: 'estimate',
    currency: o.currency,
    generated_at: generatedAt.toISOString(),
    valid_until: validUntil.toISOString(),
  };
}
