/**
 * A catalog product as the agents' `products` table holds it (agents/store/migrations.ts),
 * the row every part of the catalog reads: get_products, its proposals and their
 * refinement, and create_media_buy. On its own so that those modules need not import each
 * other for the type.
 */
import type { PricingOption } from './pricing.js';

export interface ProductRow {
  product_id: string;
  name: string;
  description: string;
  channel: string;
  delivery_type: string;
  is_standard: boolean;
  custom_principal: string | null;
  format_ids: string[];
  pricing_options: PricingOption[];
  targeting: Record<string, unknown>;
  keywords: string[];
  expected_delay_minutes: number;
  reporting_frequencies: string[];
  ctr: number;
  sort_order: number;
  /** A seeded product's fixture members answered as given (migration 009). */
  fixture?: Record<string, unknown>;
  /** A configured product's catalog product (migration 014); null for a catalog product. */
  configured_from?: string | null;
  /** When a configured (request-specific) product lapses; null when it does not. */
  expires_at?: Date | null;
  /** A configured product's targeting (core/targeting.json), booked by its packages. */
  bound_targeting?: Record<string, unknown> | null;
}
