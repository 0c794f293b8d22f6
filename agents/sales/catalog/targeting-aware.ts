/**
 * Targeting-aware discovery (published 3.2 get_products, media-buy/get-products-request.json
 * `targeting_overlay`, `required_overlay_support`; get-products-response.json
 * `targeting_resolution`): which products a request served as 3.2 leaves, and the
 * request-specific offers they become.
 *
 * - Hard targeting read from the brief binds and is confirmed once (brief-targeting.ts).
 * - `required_overlay_support` keeps the products whose declared `overlay_support` covers it
 *   (overlay.ts): a filter on later selectable capability, never a breakout per value.
 * - A `targeting_overlay` keeps the products that deliver it exactly (accepted exactly, it
 *   is not echoed: no product `targeting_resolution`) or with sparse modifications
 *   (modified-offer.ts), which only a configured product can carry.
 * - With credentials, each remaining product bound by brief or overlay becomes a configured
 *   product (configured.ts): is_custom, expires_at, a forecast for that targeting.
 *
 * A 3.0 / 3.1 answer has none of this: those releases define neither member.
 */
import type { TaskContext } from '../../runtime/types.js';
import {
  honorsBriefTargeting,
  inferBriefTargeting,
  type BriefTargeting,
} from './brief-targeting.js';
import { configureProducts } from './configured.js';
import { resolveOverlay, type OverlayResolution } from './modified-offer.js';
import { meetsRequiredSupport, readDiscoveryTargeting } from './overlay.js';
import type { ProductRow } from './product-row.js';

export interface TargetedDiscovery {
  products: ProductRow[];
  /** The brief's hard targeting, confirmed as `targeting_resolution.brief_targeting`. */
  brief: BriefTargeting | null;
}

/** The products a 3.2-served request leaves, configured when bound and the caller may buy. */
export async function targetedProducts(
  params: Record<string, unknown>,
  ctx: TaskContext,
  products: ProductRow[],
  opts: { full: boolean; countries: string[] },
): Promise<TargetedDiscovery> {
  const { overlay, required } = readDiscoveryTargeting(params);
  const brief = inferBriefTargeting(params.brief as string | undefined);
  let eligible = products;
  if (brief) eligible = eligible.filter((p) => honorsBriefTargeting(p, brief, opts.countries));
  if (required) eligible = eligible.filter((p) => meetsRequiredSupport(p, required));
  const configures = (brief !== null || overlay !== null) && opts.full && !!ctx.principal;
  const resolved = new Map<ProductRow, OverlayResolution>();
  if (overlay) {
    eligible = eligible.filter((p) => {
      const r = resolveOverlay(p, overlay, opts.countries);
      // A modified offer exists only as a configured product (its own id and terms).
      if (!r || (r.modifications.length > 0 && !configures)) return false;
      resolved.set(p, r);
      return true;
    });
  }
  // Bound to this request's targeting: the caller's own expiring offers.
  if (configures) eligible = await configureAll(ctx, eligible, brief, overlay, resolved);
  return { products: eligible, brief };
}

/**
 * Exact products configured together (one statement); each modified one on its own, bound
 * to its effective overlay and carrying its modifications. Ranking order kept.
 */
async function configureAll(
  ctx: TaskContext,
  products: ProductRow[],
  brief: BriefTargeting | null,
  overlay: Record<string, unknown> | null,
  resolved: Map<ProductRow, OverlayResolution>,
): Promise<ProductRow[]> {
  const modified = products.filter((p) => (resolved.get(p)?.modifications.length ?? 0) > 0);
  const exact = products.filter((p) => !modified.includes(p));
  const made = new Map<ProductRow, ProductRow>();
  const exactRows = await configureProducts(ctx, exact, { brief, overlay });
  exact.forEach((p, i) => made.set(p, exactRows[i]!));
  for (const p of modified) {
    const r = resolved.get(p)!;
    const [row] = await configureProducts(ctx, [p], {
      brief,
      overlay: r.overlay,
      modifications: r.modifications,
    });
    made.set(p, row!);
  }
  return products.map((p) => made.get(p)!);
}
