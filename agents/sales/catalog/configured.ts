/**
 * Configured products (published 3.2 targeting-aware discovery, core/product.json
 * `is_custom`, `expires_at`, `forecast`): the request-specific offer a catalog product
 * becomes when a brief's hard targeting (brief-targeting.ts) or an exact structured
 * `targeting_overlay` (overlay.ts) binds it, with a forecast for that targeting valid as
 * long as the offer (forecast.ts). Stored as a product of the
 * caller's only (`custom_principal`), marked `configured_from`, so create_media_buy buys it
 * like any product until `expires_at` and answers PRODUCT_EXPIRED after; ordinary listings
 * never show it. Its id is derived from the caller, the catalog product and the targeting,
 * so the same request re-issued renews the same offer instead of piling up copies.
 */
import { createHash } from 'node:crypto';
import type { TaskContext } from '../../runtime/types.js';
import type { BriefTargeting } from './brief-targeting.js';
import { spendForecast } from './forecast.js';
import type { ProductRow } from './product-row.js';

/** What binds an offer: the brief's hard targeting, the exact structured overlay, or both. */
export interface Binding {
  brief: BriefTargeting | null;
  overlay: Record<string, unknown> | null;
  /** How `overlay` differs from the request's (modified-offer.ts); answered on the product. */
  modifications?: Record<string, unknown>[];
}

/** How long a configured offer holds: its terms are this request's, not the catalog's. */
export const CONFIGURED_VALIDITY_MS = 60 * 60_000;
/** How long an expired offer is kept to answer PRODUCT_EXPIRED (then PRODUCT_NOT_FOUND). */
const TOMBSTONE_MS = 24 * 3_600_000;

function configuredId(principal: string, base: string, b: Binding): string {
  const h = createHash('sha256')
    .update(JSON.stringify([principal, base, b.brief, b.overlay]))
    .digest('hex');
  return `${base}.cfg.${h.slice(0, 12)}`;
}

/** The caller's configured copies of `products` bound to `b`, stored, in the same order. */
export async function configureProducts(
  ctx: TaskContext,
  products: ProductRow[],
  b: Binding,
): Promise<ProductRow[]> {
  const principal = ctx.principal!.principal_id;
  const now = ctx.clock.nowMs();
  const expires = new Date(now + CONFIGURED_VALIDITY_MS);
  // The offer delivers only where the request said; the catalog product's reach is wider.
  const geo = (b.overlay?.geo_countries as string[] | undefined) ?? b.brief?.geo_countries;
  // What a package of the offer books: the brief's hard targeting (already in
  // core/targeting.json form), the exact overlay over it.
  const bound = { ...b.brief, ...b.overlay };
  const rows = products.map((p) => ({
    ...p,
    product_id: configuredId(principal, p.product_id, b),
    is_standard: false,
    custom_principal: principal,
    configured_from: p.product_id,
    expires_at: expires,
    targeting: geo ? { ...p.targeting, geo_countries: geo } : p.targeting,
    fixture: {
      ...p.fixture,
      ...forecastOf(p, new Date(now), expires),
      ...(b.modifications?.length
        ? { targeting_resolution: { modifications: b.modifications } }
        : {}),
    },
    bound_targeting: bound,
  }));
  if (rows.length === 0) return rows;
  await ctx.db.query(
    `WITH gone AS (DELETE FROM ${ctx.schema}.products
        WHERE custom_principal = $1 AND configured_from IS NOT NULL AND expires_at < $3)
     INSERT INTO ${ctx.schema}.products (product_id, name, description, channel, delivery_type,
       is_standard, custom_principal, format_ids, pricing_options, targeting, keywords,
       expected_delay_minutes, reporting_frequencies, ctr, sort_order, fixture,
       configured_from, expires_at, bound_targeting)
     SELECT r.product_id, r.name, r.description, r.channel, r.delivery_type, false, $1,
       r.format_ids, r.pricing_options, r.targeting, r.keywords, r.expected_delay_minutes,
       r.reporting_frequencies, r.ctr, r.sort_order, COALESCE(r.fixture, '{}'), r.configured_from, $2,
       r.bound_targeting
       FROM jsonb_to_recordset($4::jsonb) AS r(product_id text, name text, description text,
         channel text, delivery_type text, format_ids jsonb, pricing_options jsonb,
         targeting jsonb, keywords text[], expected_delay_minutes integer,
         reporting_frequencies text[], ctr numeric, sort_order integer, fixture jsonb,
         configured_from text, bound_targeting jsonb)
     ON CONFLICT (product_id) DO UPDATE SET expires_at = EXCLUDED.expires_at,
       pricing_options = EXCLUDED.pricing_options, fixture = EXCLUDED.fixture,
       bound_targeting = EXCLUDED.bound_targeting`,
    [principal, expires, new Date(now - TOMBSTONE_MS), JSON.stringify(rows)],
  );
  return rows;
}

/** The offer's forecast member (answered with the product, as a fixture member is). */
function forecastOf(p: ProductRow, now: Date, expires: Date): { forecast?: unknown } {
  const forecast = spendForecast(p, now, expires);
  return forecast ? { forecast } : {};
}
