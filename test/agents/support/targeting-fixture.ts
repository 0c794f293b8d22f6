/**
 * targeting_aware_discovery.yaml's (3.2.0-beta.5) seeded fixture and the exact step's
 * overlay, shared by the discovery tests (targeting-overlay.test.ts) and the create /
 * update lifecycle tests (targeting-lifecycle.test.ts), with the seeding and the 3.2 pin.
 */
import type { Harness } from './core.js';

/** targeting_aware_discovery.yaml:71-128: the seeded catalog product's published members. */
export const OVERLAY_SUPPORT = {
  geo_countries: { max_values_per_package: 1 },
  geo_countries_exclude: { max_values_per_package: 1 },
  geo_proximity: { radius: true, max_values_per_package: 1 },
  geo_metros: { systems: ['nielsen_dma'] },
  placement_selection: { max_values_per_package: 2 },
  property_list: true,
  collection_list: true,
  device_platform: true,
  device_platform_exclude: true,
  browser: { families: ['chrome', 'safari', 'firefox', 'unknown'] },
  browser_exclude: { families: ['chrome', 'safari', 'firefox', 'unknown'] },
  keyword_targets: true,
  demographics: { age: true },
};
export const ref = (placement_id: string) => ({
  kind: 'publisher_ref',
  publisher_domain: 'pinnacle-media.example',
  placement_id,
});
const interval = (min: number, max: number) => ({
  interval_id: `age_${min}_${max}`,
  age: { min, max, include_unknown: false },
});
export const VIDEO_CATALOG = {
  delivery_type: 'non_guaranteed',
  channels: ['olv'],
  format_ids: [{ id: 'video_30s' }],
  placements: [
    { ...ref('feed'), mode: 'targetable' },
    { ...ref('short_video'), mode: 'targetable' },
  ],
  property_targeting_allowed: true,
  collection_targeting_allowed: true,
  allowed_actions: [{ action: 'update_targeting', modes: ['self_serve'] }],
  overlay_support: OVERLAY_SUPPORT,
  demographic_targeting: {
    age: {
      execution_modes: ['enumerated_intervals'],
      unknown_handling: 'always_excluded',
      intervals: [interval(18, 24), interval(25, 34), interval(35, 44)],
    },
  },
  // :124-128: Safari is targetable but has no inventory in the forecast window, and runs
  // only on iOS and macOS.
  browser_inventory: {
    forecastable_families: ['chrome', 'firefox', 'unknown'],
    unavailable_families: ['safari'],
    platform_compatibility: { safari: ['ios', 'macos'] },
  },
};
export const FIXED_PLACEMENT = {
  delivery_type: 'non_guaranteed',
  channels: ['ctv'],
  format_ids: [{ id: 'video_30s' }],
  placements: [
    { ...ref('feed'), mode: 'included' },
    { ...ref('short_video'), mode: 'included' },
  ],
  allowed_actions: [{ action: 'update_targeting', modes: ['self_serve'] }],
};

/** targeting_aware_discovery.yaml:383-415, the exact step's overlay and requirements. */
export const EXACT_OVERLAY = {
  geo_countries: ['US'],
  device_platform_exclude: ['fire_os'],
  browser: ['chrome', 'safari', 'unknown'],
  browser_exclude: ['safari'],
  property_list: {
    agent_url: 'https://governance.pinnacle-agency.example',
    list_id: 'acme_outdoor_allowlist_v1',
  },
  collection_list: {
    agent_url: 'https://governance.pinnacle-agency.example',
    list_id: 'acme_outdoor_collections_v1',
  },
  placement_selection: {
    mode: 'selected',
    placement_refs: [{ publisher_domain: 'pinnacle-media.example', placement_id: 'feed' }],
  },
};
export const EXACT_REQUIRED = {
  geo_countries: true,
  geo_countries_exclude: true,
  geo_proximity: { radius: true },
  geo_metros: { systems: ['nielsen_dma'] },
  placement_selection: true,
  property_list: true,
  collection_list: true,
  device_platform_exclude: true,
  browser: { families: ['chrome', 'firefox'] },
  browser_exclude: { families: ['unknown'] },
  keyword_targets: { supported_match_types: ['exact'] },
};

/** The storyboard's account (every step's `account`). */
export const ACCOUNT = {
  brand: { domain: 'acmeoutdoor.example' },
  operator: 'pinnacle-agency.example',
  sandbox: true,
};

/** Every request pinned to 3.2 (the 6.11.0 runner pins 3.0). */
export const PIN = { adcp_major_version: 3, adcp_version: '3.2' };

/** seed_product with the storyboard's fixture and its one CPM option (floor 12). */
export function seeder(h: Harness, creds: { apiKey?: string }) {
  return (product_id: string, fixture: Record<string, unknown>, optionId = `${product_id}_cpm`) =>
    h.ok(
      'sales',
      'comply_test_controller',
      {
        scenario: 'seed_product',
        account: ACCOUNT,
        params: {
          product_id,
          fixture: {
            ...fixture,
            pricing_options: [
              {
                pricing_option_id: optionId,
                pricing_model: 'cpm',
                currency: 'USD',
                floor_price: 12,
              },
            ],
          },
        },
      },
      creds,
    );
}
