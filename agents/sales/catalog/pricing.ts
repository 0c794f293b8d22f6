/**
 * Pricing options, one internal model in the published form (core/pricing-option.json):
 * `pricing_model` from the published enum, `fixed_price` for a fixed price, `floor_price`
 * (and no `fixed_price`) for an auction, and 3.2's contingent `revenue_share` (a
 * `commission_rate` on settled commissionable value; pricing-options/revenue-share-option.json),
 * which has neither. The spec's older form (`cpm-auction`, `flat-fee`, `price`, `floor`,
 * `min_spend`) is read as the same thing, so rows or requests written before keep working.
 */
export interface PricingOption {
  pricing_option_id: string;
  pricing_model: string;
  currency: string;
  fixed_price?: number;
  floor_price?: number;
  min_spend_per_package?: number;
  /** revenue_share only: the decimal commission (0.04 is 4%), its event and basis. */
  commission_rate?: number;
  event_type?: string;
  custom_event_name?: string;
  event_source_id?: string;
  commission_basis_description?: string;
}

/** The published pricing structures (3.2 enums/pricing-structure.json). */
export const PRICING_STRUCTURES = ['fixed', 'auction', 'contingent'] as const;
export type PricingStructure = (typeof PRICING_STRUCTURES)[number];

/** Contingent pricing (3.2): paid from a measured outcome after delivery, never bid on. */
export function isContingent(o: Pick<PricingOption, 'pricing_model'>): boolean {
  return o.pricing_model === 'revenue_share';
}

/** How an option's payable price is set: a fixed price, a bid, or a measured outcome. */
export function pricingStructure(o: PricingOption): PricingStructure {
  if (isContingent(o)) return 'contingent';
  return o.fixed_price !== undefined ? 'fixed' : 'auction';
}

/**
 * Products with only their options of the given structures (`filters.pricing_structures`,
 * and `is_fixed_price` as fixed / auction), products left with none dropped: the published
 * filters return only matching pricing_options entries.
 */
export function withPricingStructures<T extends { pricing_options: PricingOption[] }>(
  products: T[],
  structures: readonly PricingStructure[],
): T[] {
  return products.flatMap((p) => {
    const options = p.pricing_options.filter((o) => structures.includes(pricingStructure(o)));
    return options.length > 0 ? [{ ...p, pricing_options: options }] : [];
  });
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
  if (out.pricing_model === 'revenue_share') {
    const rate = num(raw.commission_rate);
    if (rate !== undefined) out.commission_rate = rate;
    for (const k of REVENUE_SHARE_TEXT) {
      const v = raw[k];
      if (typeof v === 'string') out[k] = v;
    }
  }
  return out;
}

const REVENUE_SHARE_TEXT = [
  'event_type',
  'custom_event_name',
  'event_source_id',
  'commission_basis_description',
] as const;

/** The published event types (enums/event-type.json), which a revenue share is paid on. */
export const EVENT_TYPES: ReadonlySet<string> = new Set(
  (
    'page_view view_content select_content select_item search share add_to_cart ' +
    'remove_from_cart viewed_cart add_to_wishlist initiate_checkout add_payment_info purchase ' +
    'refund lead qualify_lead close_convert_lead disqualify_lead complete_registration ' +
    'subscribe follow content_view watch_milestone start_trial app_install app_launch contact ' +
    'schedule donate submit_application custom'
  ).split(' '),
);

/**
 * A revenue_share option as a seller states it (a seeded fixture), checked against the
 * published option: a commission_rate in (0, 1], a published event_type (custom with its
 * custom_event_name, which only custom takes), an event_source_id, an ISO 4217 currency,
 * a commission basis (1-1000 characters), and none of the fixed / auction price members.
 * The stored option, or the reason it is refused.
 */
export function revenueShareOption(
  optionId: string,
  raw: Record<string, unknown>,
): { option: PricingOption } | { error: string } {
  const rate = raw.commission_rate;
  if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0 || rate > 1) {
    return { error: `${optionId}: commission_rate must be a decimal proportion in (0, 1]` };
  }
  const priced = ['fixed_price', 'floor_price', 'price_guidance', 'max_bid'].find(
    (k) => raw[k] !== undefined,
  );
  if (priced) return { error: `${optionId}: revenue_share takes no ${priced}` };
  if (typeof raw.event_type !== 'string' || !EVENT_TYPES.has(raw.event_type)) {
    return { error: `${optionId}: event_type must be a published event type (e.g. purchase)` };
  }
  const custom = raw.custom_event_name;
  if ((raw.event_type === 'custom') !== (custom !== undefined)) {
    return {
      error: `${optionId}: custom_event_name goes with event_type custom, and only with it`,
    };
  }
  if (custom !== undefined && (typeof custom !== 'string' || custom.length === 0)) {
    return { error: `${optionId}: custom_event_name must be a non-empty string` };
  }
  const source = raw.event_source_id;
  if (typeof source !== 'string' || source.length === 0 || source.length > 255) {
    return { error: `${optionId}: event_source_id (1-255 characters) is required` };
  }
  if (typeof raw.currency !== 'string' || !/^[A-Z]{3}$/.test(raw.currency)) {
    return { error: `${optionId}: currency must be an ISO 4217 code` };
  }
  const basis = raw.commission_basis_description;
  if (typeof basis !== 'string' || basis.length === 0 || basis.length > 1000) {
    return { error: `${optionId}: commission_basis_description (1-1000 characters) is required` };
  }
  const option = normalizePricingOption({ ...raw, pricing_option_id: optionId });
  return { option };
}

/** An auction option: no fixed price, the buyer bids (at least the floor). */
export function isAuction(o: PricingOption): boolean {
  return pricingStructure(o) === 'auction';
}

/** The smallest package budget the option takes: the fee of a flat rate, else min spend. */
export function minimumBudget(o: PricingOption): number {
  return isFlatRate(o.pricing_model) ? (o.fixed_price ?? 0) : (o.min_spend_per_package ?? 0);
}

/**
 * The rate a package pays: the fixed price, a second-price-like clearing of the bid, or a
 * revenue share's commission rate (a proportion, not a currency amount).
 */
export function clearingRate(o: PricingOption, bid: number | undefined): number {
  if (isContingent(o)) return o.commission_rate ?? 0;
  if (!isAuction(o)) return o.fixed_price ?? 0;
  const floor = o.floor_price ?? 0;
  return floor + 0.7 * ((bid ?? floor) - floor);
}
