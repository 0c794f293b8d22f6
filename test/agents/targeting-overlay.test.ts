/**
 * Structured targeting-aware discovery (published 3.2 get_products `targeting_overlay` and
 * `required_overlay_support`): capability containment and exact delivery on product rows,
 * the forecast of a configured product, and targeting_aware_discovery.yaml's discovery
 * steps (3.2.0-beta.5 :179, :215, :365, :491) with the storyboard's own fixture and requests,
 * pinned 3.2 (the 6.11.0 runner pins 3.0, storyboards-current-known.ts), every malformed
 * member refused, a 3.1 pin served without any of it.
 */
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import {
  honorsOverlay,
  meetsRequiredSupport,
  readDiscoveryTargeting,
} from '../../agents/sales/catalog/overlay.js';
import { spendForecast } from '../../agents/sales/catalog/forecast.js';
import { CONFIGURED_VALIDITY_MS } from '../../agents/sales/catalog/configured.js';
import type { ProductRow } from '../../agents/sales/catalog/product-row.js';
import { TaskError } from '../../shared/errors/task-errors.js';
import { buyer, harness, START } from './support/core.js';
import {
  EXACT_OVERLAY,
  EXACT_REQUIRED,
  FIXED_PLACEMENT,
  OVERLAY_SUPPORT,
  VIDEO_CATALOG,
  seeder,
} from './support/targeting-fixture.js';

const row = (extra: Partial<ProductRow>): ProductRow =>
  ({
    product_id: 'p',
    targeting: {},
    pricing_options: [],
    ctr: 0,
    fixture: undefined,
    ...extra,
  }) as ProductRow;

t.test('required_overlay_support is capability containment', async (t) => {
  const seeded = row({ fixture: { overlay_support: OVERLAY_SUPPORT } });
  t.ok(meetsRequiredSupport(seeded, EXACT_REQUIRED), 'the storyboard requirement (:399)');
  t.notOk(meetsRequiredSupport(seeded, { geo_proximity: { travel_time: true } }), ':508');
  t.notOk(meetsRequiredSupport(row({}), { geo_countries: true }), 'the catalog declares none');
  t.notOk(
    meetsRequiredSupport(seeded, { browser: { families: ['edge'] } }),
    'a family outside the support',
  );
  t.notOk(meetsRequiredSupport(seeded, { daypart_targets: true }), 'an undeclared dimension');
  t.ok(
    meetsRequiredSupport(row({ fixture: { overlay_support: { browser: true } } }), {
      browser: { families: ['edge'] },
    }),
    'unrestricted support meets every structured requirement',
  );
  const regions = (support: unknown) =>
    meetsRequiredSupport(row({ fixture: { overlay_support: { geo_regions: support } } }), {
      geo_regions: { countries: { FR: { values: ['FR-44'] } } },
    });
  t.ok(regions({ countries: { FR: { values: ['FR-44', 'FR-49'] } } }), 'a region subset');
  t.ok(regions({ countries: { FR: { all_values: true } } }), 'all_values');
  t.notOk(regions({ countries: { FR: { values: ['FR-49'] } } }), 'another region');
  t.notOk(regions({ countries: { DE: { all_values: true } } }), 'another country');
});

t.test('an exact overlay is delivered inherently or under declared support', async (t) => {
  const seeded = row({
    fixture: {
      overlay_support: OVERLAY_SUPPORT,
      placements: VIDEO_CATALOG.placements,
      demographic_targeting: VIDEO_CATALOG.demographic_targeting,
    },
  });
  t.ok(honorsOverlay(seeded, EXACT_OVERLAY, ['US', 'CA']), 'the storyboard overlay');
  t.notOk(honorsOverlay(seeded, { geo_countries: ['GB'] }, ['US', 'CA']), 'outside its reach');
  t.notOk(
    honorsOverlay(seeded, { browser: ['chrome', 'edge'] }, ['US']),
    'a family it cannot select',
  );
  t.notOk(
    honorsOverlay(seeded, { geo_countries_exclude: ['CA', 'MX'] }, ['US']),
    'over max_values_per_package',
  );
  const proximity = (entry: Record<string, unknown>) =>
    honorsOverlay(seeded, { geo_proximity: [{ lat: 40.7, lng: -74, ...entry }] }, ['US']);
  t.ok(proximity({ radius: { value: 5, unit: 'km' } }), 'radius support');
  t.notOk(proximity({ travel_time: { value: 10, unit: 'min' }, transport_mode: 'driving' }));
  const select = (p: ProductRow, ...ids: string[]) =>
    honorsOverlay(
      p,
      {
        placement_selection: {
          mode: 'selected',
          placement_refs: ids.map((placement_id) => ({
            publisher_domain: 'pinnacle-media.example',
            placement_id,
          })),
        },
      },
      ['US'],
    );
  t.ok(select(seeded, 'short_video'), 'a targetable placement');
  t.notOk(select(seeded, 'stories'), 'a placement the product does not have');
  const fixed = row({ fixture: { placements: FIXED_PLACEMENT.placements } });
  t.ok(select(fixed, 'short_video', 'feed'), 'the complete included set, in any order');
  t.notOk(select(fixed, 'feed'), 'part of a fixed set (:528)');
  t.notOk(select(row({}), 'feed'), 'no placements');
  t.ok(
    honorsOverlay(row({}), { placement_selection: { mode: 'default' } }, ['US']),
    'the default set',
  );
  t.ok(honorsOverlay(row({}), { geo_countries: ['CA'] }, ['US', 'CA']), 'catalog reach');
  t.notOk(honorsOverlay(row({}), { device_platform: ['ios'] }, ['US']), 'undeclared support');
  t.ok(
    honorsOverlay(seeded, { demographics: { age: { min: 25, max: 44 } } }, ['US']),
    'an age range its intervals tile',
  );
  t.notOk(
    honorsOverlay(seeded, { demographics: { age: { min: 21, max: 35 } } }, ['US']),
    'one they do not (:897, a modified offer)',
  );
});

t.test('malformed structured members are VALIDATION_ERROR naming the field', async (t) => {
  t.same(readDiscoveryTargeting({}), { overlay: null, required: null });
  t.same(readDiscoveryTargeting({ targeting_overlay: {} }), { overlay: null, required: null });
  for (const [params, field] of [
    [{ targeting_overlay: 'US' }, 'targeting_overlay'],
    [{ targeting_overlay: { geo_countries: 'US' } }, 'targeting_overlay.geo_countries'],
    [{ targeting_overlay: { geo_countries: ['usa'] } }, 'targeting_overlay.geo_countries[0]'],
    [{ targeting_overlay: { browser: ['netscape'] } }, 'targeting_overlay.browser[0]'],
    [
      {
        targeting_overlay: {
          placement_selection: {
            mode: 'selected',
            placement_refs: [
              { publisher_domain: 'a.example', placement_id: 'feed' },
              { publisher_domain: 'a.example', placement_id: 'feed' },
            ],
          },
        },
      },
      'targeting_overlay.placement_selection',
    ],
    [{ required_overlay_support: { geo_countries: false } }, 'required_overlay_support'],
    [
      { required_overlay_support: { browser: { families: [] } } },
      'required_overlay_support.browser',
    ],
    [
      { required_overlay_support: { geo_countries: { max_values_per_package: 1 } } },
      'required_overlay_support.geo_countries',
    ],
  ] as const) {
    let err: unknown;
    try {
      readDiscoveryTargeting(params as Record<string, unknown>);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof TaskError, JSON.stringify(params).slice(0, 80));
    const e = err as TaskError;
    t.equal(e.code, 'VALIDATION_ERROR');
    t.ok(e.field?.startsWith(field), `${e.field} names ${field}`);
  }
});

t.test('the forecast of a configured product is its spend curve', async (t) => {
  const now = new Date(START);
  const until = new Date(START + CONFIGURED_VALIDITY_MS);
  const option = (o: Record<string, unknown>) =>
    ({ pricing_option_id: 'o', pricing_model: 'cpm', currency: 'USD', ...o }) as never;
  const fixed = spendForecast(row({ pricing_options: [option({ fixed_price: 10 })] }), now, until)!;
  t.match(fixed, {
    method: 'estimate',
    forecast_range_unit: 'spend',
    currency: 'USD',
    generated_at: now.toISOString(),
    valid_until: until.toISOString(),
  });
  t.same(
    (fixed.points as Array<{ budget: number }>).map((p) => p.budget),
    [1000, 5000, 25000],
  );
  t.same((fixed.points as Array<{ metrics: unknown }>)[1]!.metrics, {
    spend: { mid: 5000 },
    impressions: { low: 500000, mid: 500000, high: 500000 },
  });
  const auction = spendForecast(
    row({ ctr: 0.01, pricing_options: [option({ floor_price: 10, min_spend_per_package: 2000 })] }),
    now,
    until,
  )!;
  const points = auction.points as Array<{ budget: number; metrics: Record<string, never> }>;
  t.same(
    points.map((p) => p.budget),
    [2000, 5000, 25000],
    'the minimum spend raises the first level',
  );
  t.same(points[0]!.metrics.impressions, { low: 133333, mid: 160000, high: 200000 });
  t.same(points[0]!.metrics.clicks, { low: 1333, mid: 1600, high: 2000 });
  t.equal(spendForecast(row({}), now, until), null, 'unpriced: none');
});

t.test('targeting_aware_discovery.yaml discovery steps, pinned 3.2', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp'), settings: { testController: true } });
  const c = buyer(h);
  const account = {
    brand: { domain: 'acmeoutdoor.example' },
    operator: 'pinnacle-agency.example',
    sandbox: true,
  };
  const seed = seeder(h, c);
  await seed('targeting_aware_video_catalog', VIDEO_CATALOG);
  await seed('targeting_aware_fixed_placement', FIXED_PLACEMENT);
  const pin = { adcp_major_version: 3, adcp_version: '3.2' };
  type Wire = Record<string, unknown> & { product_id: string };
  const productsOf = (r: Record<string, unknown>) => r.products as Wire[];

  // :365 get_exact_targeted_product.
  const exact = {
    buying_mode: 'brief',
    brief: 'Premium video for outdoor enthusiasts',
    account,
    filters: { channels: ['olv'], pricing_currencies: ['USD'] },
    targeting_overlay: EXACT_OVERLAY,
    required_overlay_support: EXACT_REQUIRED,
    context: { correlation_id: 'targeting_aware_discovery--exact' },
    ...pin,
  };
  const got = await h.ok('sales', 'get_products', exact, c);
  t.equal(got.adcp_version, '3.2');
  t.notOk('targeting_resolution' in got, 'nothing read from the brief');
  t.equal(productsOf(got).length, 1, 'one configured product (:419)');
  const first = productsOf(got)[0]!;
  t.match(first.product_id, /^targeting_aware_video_catalog\.cfg\.[0-9a-f]{12}$/);
  t.notOk('targeting_resolution' in first, 'exact acceptance has no echo (:436)');
  t.equal(first.is_custom, true);
  t.equal(first.expires_at, new Date(START + CONFIGURED_VALIDITY_MS).toISOString());
  t.match(first.forecast, {
    method: 'estimate',
    currency: 'USD',
    valid_until: first.expires_at,
    points: [{ budget: 1000, metrics: { impressions: { high: 83333 } } }],
  });
  t.same(first.overlay_support, OVERLAY_SUPPORT, ':449-489, limits disclosed');
  t.match(first, { targeting: { geo_countries: ['US'] } }, 'the offer delivers in the US only');
  t.same(
    productsOf(await h.ok('sales', 'get_products', exact, c)).map((p) => p.product_id),
    [first.product_id],
    'the same request renews the same offer',
  );

  // The offer is buyable until it lapses.
  const option = (first.pricing_options as Array<{ pricing_option_id: string }>)[0]!;
  const buy = (key: string) => ({
    brand: { domain: 'acmeoutdoor.example' },
    account,
    idempotency_key: key,
    start_time: 'asap',
    end_time: new Date(START + 30 * 86400_000).toISOString(),
    packages: [
      {
        product_id: first.product_id,
        pricing_option_id: option.pricing_option_id,
        bid_price: 14,
        budget: 5000,
      },
    ],
    ...pin,
  });
  // :1056 create_feed_package: the buyer does not repeat the targeting; the package books it.
  const bought = await h.ok('sales', 'create_media_buy', buy('overlay-buy-0001'), c);
  t.ok(bought.media_buy_id);
  const booked = (bought.packages as Array<{ targeting_overlay?: unknown }>)[0]!;
  t.same(booked.targeting_overlay, EXACT_OVERLAY, 'the bound targeting is booked (:1091-1132)');
  const restated = buy('overlay-buy-0002');
  const own = await h.ok(
    'sales',
    'create_media_buy',
    {
      ...restated,
      packages: [{ ...restated.packages[0]!, targeting_overlay: { geo_countries: ['US'] } }],
    },
    c,
  );
  t.same(
    (own.packages as Array<{ targeting_overlay?: unknown }>)[0]!.targeting_overlay,
    { geo_countries: ['US'] },
    "a package's own overlay stands",
  );
  const plain = await h.ok(
    'sales',
    'create_media_buy',
    {
      ...buy('overlay-buy-0003'),
      packages: [
        {
          product_id: 'targeting_aware_video_catalog',
          pricing_option_id: 'targeting_aware_video_catalog_cpm',
          budget: 5000,
        },
      ],
    },
    c,
  );
  t.notOk(
    'targeting_overlay' in (plain.packages as Array<Record<string, unknown>>)[0]!,
    'the catalog product books nothing of its own',
  );

  // :491 get_unsupported_future_targeting.
  const unsupported = await h.ok(
    'sales',
    'get_products',
    {
      buying_mode: 'brief',
      brief: 'Premium video for outdoor enthusiasts',
      account,
      filters: { channels: ['olv'] },
      required_overlay_support: { geo_proximity: { travel_time: true } },
      ...pin,
    },
    c,
  );
  t.same(unsupported.products, [], 'missing support excludes every product (:521)');

  // :179 accept_equivalent_legacy_and_overlay_targeting, :215 the conflicting one.
  const legacy = {
    buying_mode: 'brief',
    brief: 'Premium outdoor video',
    account,
    filters: { channels: ['olv'], countries: ['US'] },
    targeting_overlay: { geo_countries: ['US'] },
    ...pin,
  };
  const equivalent = productsOf(await h.ok('sales', 'get_products', legacy, c));
  t.ok(equivalent.length > 0, 'still buyable (:208)');
  for (const p of equivalent) {
    t.notOk('targeting_resolution' in p, `${p.product_id}: no manufactured modification`);
    t.match(p, { is_custom: true, expires_at: String, forecast: { points: Array } });
  }
  const conflicting = await h.err(
    'sales',
    'get_products',
    { ...legacy, filters: { channels: ['olv'], countries: ['CA'] } },
    c,
  );
  t.equal(conflicting.code, 'INVALID_REQUEST');

  // Malformed members over the wire: VALIDATION_ERROR with the field, nothing configured.
  const malformed = await h.err(
    'sales',
    'get_products',
    { ...exact, targeting_overlay: { ...EXACT_OVERLAY, browser: ['netscape'] } },
    c,
  );
  t.equal(malformed.code, 'VALIDATION_ERROR');
  t.equal(malformed.field, 'targeting_overlay.browser[0]');

  // A 3.1 buyer: neither member exists there, so the answer is the ordinary catalog.
  const v31 = await h.ok('sales', 'get_products', { ...exact, adcp_version: '3.1' }, c);
  t.equal(v31.adcp_version, '3.1');
  t.ok(productsOf(v31).length > 1, 'not narrowed');
  for (const p of productsOf(v31)) {
    t.notOk('overlay_support' in p || 'expires_at' in p || 'forecast' in p, `${p.product_id}: 3.1`);
  }
});
