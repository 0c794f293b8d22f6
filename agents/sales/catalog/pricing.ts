/**
 * Pricing options, one internal model in the published form (core/pricing-option.json):
 * `pricing_model` from the published enum, `fixed_price` for a fixed price, `floor_price`
 * (and no `fixed_price`) for an auction. The spec's older form (`cpm-auction`, `flat-fee`,
 * `price`, `floor`, `min_spend`) is read as the same thing, so rows or requests written
 * before keep working.
 */
export interface PricingOption {
  pricing_option_id: string;
  pricing_model: string;
  currency: string;
  fixed_price?: number;
  floor_price?: number;
  min_spend_per_package?: number;
}

const LEGACY_MODELS: Record<string, string> = { 'cpm-auction': 'cpm', 'flat-fee': 'flat_rate' };

/** The published name of a pricing model (`cpm-auction` -> `cpm`, `flat-fee` -> `flat_rate`). */
export function publishedPricingModel(model: string): string {
  return LEGACY_MODELS[model] ?? model;
}

export function isFlatRate(model: string): boolean {
  return publishedPricingModel(model) === 'flat_rate';
}

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** A stored option in either form as the internal (published) one. */
export function normalizePricingOption(raw: Record<string, unknown>): PricingOption {
  const out: PricingOption = {
    pricing_option_id: String(raw.pricing_option_id),
    pricing_model: publishedPricingModel(String(raw.pricing_model)),
    currency: String(raw.currency ?? 'USD'),
  };
  const auction = raw.pricing_model === 'cpm-auction';
  const fixed = num(raw.fixed_price) ?? (auction ? undefined : num(raw.price));
  const floor = num(raw.floor_price) ?? num(raw.floor);
  const min = num(raw.min_spend_per_package) ?? num(raw.min_spend);
  if (fixed !== undefined) out.fixed_price = fixed;
  if (floor !== undefined) out.floor_price = floor;
  if (min !== undefined) out.min_spend_per_package = min;
  return out;
}

/** An auction option: no fixed price, the buyer bids (at least the floor). */
export function isAuction(o: PricingOption): boolean {
  return o.fixed_price === undefined;
}

/** The smallest package budget the option takes: the fee of a flat rate, else min spend. */
export function minimumBudget(o: PricingOption): number {
  return isFlatRate(o.pricing_model) ? (o.fixed_price ?? 0) : (o.min_spend_per_package ?? 0);
}

/** The rate a package pays: the fixed price, or a second-price-like clearing of the bid. */
export function clearingRate(o: PricingOption, bid: number | undefined): number {
  if (!isAuction(o)) return o.fixed_price ?? 0;
  const floor = o.floor_price ?? 0;
  return floor + 0.7 * ((bid ?? floor) - floor);
}
