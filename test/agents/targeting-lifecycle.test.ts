/**
 * targeting_aware_discovery.yaml (3.2.0-beta.5) from discovery to readback: the fixed
 * placement set (:564-:788), the expired configured product (:846), the modified-age /
 * remove-Safari offer and its purchase (:883, :945), and the purchased inventory targeting
 * through create, update and get_media_buys (:1001-:1537), with the storyboard's fixture
 * and requests pinned 3.2 (the 6.11.0 runner pins 3.0: storyboards-current-known.ts).
 * Every refusal is followed by a readback that shows it changed nothing.
 */
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { resolveOverlay } from '../../agents/sales/catalog/modified-offer.js';
import { checkPackageOverlay } from '../../agents/sales/catalog/package-overlay.js';
import type { ProductRow } from '../../agents/sales/catalog/product-row.js';
import { TaskError } from '../../shared/errors/task-errors.js';
import { buyer, harness, START } from './support/core.js';
import {
  ACCOUNT,
  EXACT_OVERLAY,
  EXACT_REQUIRED,
  FIXED_PLACEMENT,
  PIN,
  VIDEO_CATALOG,
  seeder,
} from './support/targeting-fixture.js';

type Obj = Record<string, unknown>;
const END = '2099-09-30T23:59:59Z';
const pref = (placement_id: string, publisher_domain = 'pinnacle-media.example') => ({
  publisher_domain,
  placement_id,
});
const selected = (...refs: Obj[]) => ({ mode: 'selected', placement_refs: refs });
const LISTS = {
  property_list: EXACT_OVERLAY.property_list,
  collection_list: EXACT_OVERLAY.collection_list,
};
const idsOf = (refs: unknown) =>
  ((refs ?? []) as Array<{ placement_id: string }>).map((r) => r.placement_id).sort();

const row = (fixture?: Obj): ProductRow =>
  ({
    product_id: 'p',
    targeting: {},
    pricing_options: [],
    ctr: 0,
    fixture,
  }) as unknown as ProductRow;
const video = row(VIDEO_CATALOG);

t.test('a package overlay applies exactly or is refused, naming the field', async (t) => {
  const refusal = (p: ProductRow, overlay: Obj) => {
    try {
      checkPackageOverlay(p, overlay, 'packages[0].targeting_overlay');
    } catch (e) {
      if (e instanceof TaskError) return { code: e.code, field: e.field };
      throw e;
    }
    return null;
  };
  t.equal(refusal(video, EXACT_OVERLAY), null, 'the exact step overlay');
  t.equal(
    refusal(row(), { browser: ['netscape-ish'], geo_countries: ['US', 'CA', 'MX'] }),
    null,
    'a catalog product declares nothing and stores what it is given, as before',
  );
  const at = (f: string) => `packages[0].targeting_overlay.${f}`;
  for (const [overlay, code, field] of [
    [{ browser: ['edge'] }, 'UNSUPPORTED_FEATURE', at('browser')],
    [{ geo_countries: ['US', 'CA'] }, 'UNSUPPORTED_FEATURE', at('geo_countries')],
    [{ daypart_targets: [] }, 'UNSUPPORTED_FEATURE', at('daypart_targets')],
    [
      { demographics: { age: { min: 21, max: 35, include_unknown: false } } },
      'UNSUPPORTED_FEATURE',
      at('demographics'),
    ],
    [
      { placement_selection: selected(pref('stories')) },
      'INVALID_REQUEST',
      at('placement_selection.placement_refs[0]'),
    ],
    [
      { placement_selection: selected(pref('feed'), pref('short_video'), pref('feed')) },
      'INVALID_REQUEST',
      at('placement_selection.placement_refs[2]'),
    ],
    [
      {
        device_platform: ['android', 'ios'],
        device_platform_exclude: ['ios'],
        browser: ['safari'],
      },
      'UNSUPPORTED_FEATURE',
      at('browser'),
    ],
  ] as const) {
    t.same(refusal(video, overlay), { code, field }, JSON.stringify(overlay));
  }
  t.equal(
    refusal(video, { device_platform: ['ios'], browser: ['safari', 'chrome'] }),
    null,
    'Safari on iOS',
  );
  t.equal(
    refusal(video, {
      device_platform: ['android'],
      browser: ['chrome', 'safari'],
      browser_exclude: ['safari'],
    }),
    null,
    'an excluded Safari asks nothing of the platforms',
  );
  const fixed = row(FIXED_PLACEMENT);
  t.equal(
    refusal(fixed, { placement_selection: selected(pref('short_video'), pref('feed')) }),
    null,
  );
  t.same(refusal(fixed, { placement_selection: selected(pref('feed')) }), {
    code: 'UNSUPPORTED_FEATURE',
    field: at('placement_selection'),
  });
  t.equal(refusal(fixed, { placement_selection: { mode: 'default' } }), null, 'the default set');
});

t.test('a modified offer only narrows, and only age and unavailable browsers', async (t) => {
  const exact = resolveOverlay(video, EXACT_OVERLAY, ['US']);
  t.same(exact, { overlay: EXACT_OVERLAY, modifications: [] }, 'exact: nothing to disclose');
  t.equal(
    resolveOverlay(video, { browser: ['safari'] }, ['US']),
    null,
    'removing every family is no offer',
  );
  t.equal(
    resolveOverlay(video, { demographics: { age: { min: 50, max: 60, include_unknown: false } } }, [
      'US',
    ]),
    null,
    'no interval inside the range',
  );
  t.equal(
    resolveOverlay(row(), { demographics: { age: { min: 21, max: 35, include_unknown: false } } }, [
      'US',
    ]),
    null,
    'a product without intervals',
  );
  const wide = resolveOverlay(
    video,
    { demographics: { age: { min: 18, max: 40, include_unknown: false } }, geo_countries: ['US'] },
    ['US'],
  );
  t.same(wide?.overlay, {
    demographics: { age: { min: 18, max: 34, include_unknown: false } },
    geo_countries: ['US'],
  });
  t.equal(wide?.modifications.length, 1, 'the country stands unmodified');
  t.equal(
    resolveOverlay(video, { browser: ['chrome', 'safari'], geo_countries: ['GB'] }, ['US']),
    null,
    'anything else inexact leaves the product out',
  );
});

t.test('targeting_aware_discovery.yaml lifecycle steps, pinned 3.2', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp'), settings: { testController: true } });
  const c = buyer(h);
  const seed = seeder(h, c);
  await seed('targeting_aware_video_catalog', VIDEO_CATALOG, 'targeting_aware_video_cpm');
  await seed('targeting_aware_fixed_placement', FIXED_PLACEMENT, 'targeting_aware_fixed_cpm');
  await seed(
    'targeting_aware_expired_configured',
    {
      is_custom: true,
      expires_at: '2020-01-01T00:00:00Z',
      delivery_type: 'non_guaranteed',
      channels: ['olv'],
      format_ids: [{ id: 'video_30s' }],
      placements: [{ kind: 'publisher_ref', ...pref('feed'), mode: 'targetable' }],
    },
    'targeting_aware_expired_cpm',
  );
  // A tombstone's expires_at must be a date-time.
  const bad = await h.call(
    'sales',
    'comply_test_controller',
    {
      scenario: 'seed_product',
      account: ACCOUNT,
      params: { product_id: 'tad_bad', fixture: { is_custom: true, expires_at: 'yesterday' } },
    },
    c,
  );
  t.match(bad, { success: false, error: 'INVALID_PARAMS' }, 'a malformed expires_at');
  const products = async (params: Obj) =>
    (await h.ok('sales', 'get_products', { account: ACCOUNT, ...params, ...PIN }, c))
      .products as Obj[];
  const create = (key: string, pkg: Obj) =>
    h.call(
      'sales',
      'create_media_buy',
      {
        brand: { domain: 'acmeoutdoor.example' },
        account: ACCOUNT,
        idempotency_key: key,
        start_time: 'asap',
        end_time: END,
        packages: [{ bid_price: 14, budget: 5000, ...pkg }],
        ...PIN,
      },
      c,
    );
  const update = (key: string, media_buy_id: unknown, pkg: Obj) =>
    h.call(
      'sales',
      'update_media_buy',
      { account: ACCOUNT, media_buy_id, idempotency_key: key, packages: [pkg], ...PIN },
      c,
    );
  const readPackage = async (media_buy_id: unknown) => {
    const r = await h.ok(
      'sales',
      'get_media_buys',
      { account: ACCOUNT, media_buy_ids: [media_buy_id], ...PIN },
      c,
    );
    const buy = (r.media_buys as Obj[])[0]!;
    t.equal(buy.media_buy_id, media_buy_id, 'readback is grounded to the buy');
    return (buy.packages as Obj[])[0]!;
  };
  const refused = (r: unknown, code: string, field?: string, what = '') => {
    t.match(r, { code }, `${what}: ${code}`);
    if (field !== undefined) t.equal((r as { field?: string }).field, field, `${what}: field`);
  };

  // :564 discover_fixed_placement_set: the complete included set matches inherently.
  const fixedFound = await products({
    buying_mode: 'wholesale',
    filters: { channels: ['ctv'] },
    targeting_overlay: { placement_selection: selected(pref('feed'), pref('short_video')) },
  });
  t.equal(fixedFound.length, 1);
  const fixed = fixedFound[0]!;
  t.match(fixed.product_id, /^targeting_aware_fixed_placement/);
  t.notOk((fixed.overlay_support as Obj | undefined)?.placement_selection, ':606');
  const fixedOption = (fixed.pricing_options as Obj[])[0]!.pricing_option_id;

  // :611 create_fixed_placement_set.
  const fixedBuy = (await create('tad-fixed-create-0001', {
    product_id: fixed.product_id,
    pricing_option_id: fixedOption,
    targeting_overlay: { placement_selection: selected(pref('feed'), pref('short_video')) },
  })) as Obj;
  t.notOk(fixedBuy instanceof Error, 'create_fixed_placement_set');
  const fixedPkg = (fixedBuy.packages as Obj[])[0]!;
  const fixedRefs = (p: Obj) =>
    idsOf(((p.targeting_overlay as Obj).placement_selection as Obj).placement_refs);
  t.same(fixedRefs(fixedPkg), ['feed', 'short_video'], ':640-661 the complete set, no more');

  // :669 reject_partial_fixed_placement_create.
  refused(
    await create('tad-fixed-partial-create-0001', {
      product_id: fixed.product_id,
      pricing_option_id: fixedOption,
      targeting_overlay: { placement_selection: selected(pref('feed')) },
    }),
    'UNSUPPORTED_FEATURE',
    undefined,
    ':669',
  );
  // :709 reject_partial_fixed_placement_update, :743 the readback.
  refused(
    await update('tad-fixed-partial-update-0001', fixedBuy.media_buy_id, {
      package_id: fixedPkg.package_id,
      targeting_overlay: { placement_selection: selected(pref('feed')) },
    }),
    'UNSUPPORTED_FEATURE',
    undefined,
    ':709',
  );
  const fixedRead = await readPackage(fixedBuy.media_buy_id);
  t.equal(fixedRead.package_id, fixedPkg.package_id);
  t.same(fixedRefs(fixedRead), ['feed', 'short_video'], ':743 unchanged');
  // :788 update_fixed_placement_set: the same set restated.
  const restated = (await update('tad-fixed-update-0001', fixedBuy.media_buy_id, {
    package_id: fixedPkg.package_id,
    targeting_overlay: { placement_selection: selected(pref('short_video'), pref('feed')) },
  })) as Obj;
  const affected = (restated.affected_packages as Obj[] | undefined)?.[0];
  t.match(affected, {
    package_id: fixedPkg.package_id,
    targeting_overlay: { placement_selection: { mode: 'selected' } },
  });
  t.same(affected && fixedRefs(affected), ['feed', 'short_video'], ':813-840');

  // :846 create_expired_configured_product.
  refused(
    await create('tad-expired-0001', {
      product_id: 'targeting_aware_expired_configured',
      pricing_option_id: 'targeting_aware_expired_cpm',
    }),
    'PRODUCT_EXPIRED',
    undefined,
    ':846',
  );

  // :883 get_modified_age_product: 21-35 and Chrome or Safari become 25-34 and Chrome.
  const modified = (
    await products({
      buying_mode: 'brief',
      brief: 'Premium video for adults',
      targeting_overlay: {
        demographics: { age: { min: 21, max: 35, include_unknown: false } },
        browser: ['chrome', 'safari'],
      },
    })
  )[0]!;
  t.ok(modified, 'a configured offer');
  t.match(modified.product_id, /^targeting_aware_video_catalog\.cfg\./);
  const mods = (modified.targeting_resolution as { modifications?: Obj[] } | undefined)
    ?.modifications;
  t.match(mods?.[0], {
    operation: 'replace',
    path: '/demographics/age',
    applied: { min: 25, max: 34, include_unknown: false },
  });
  t.match(mods?.[1], { operation: 'remove_values', path: '/browser' });
  t.same((mods?.[1]?.values as string[] | undefined) ?? [], ['safari'], ':937');
  t.type(modified.expires_at, 'string', ':941');
  // :945 create_from_modified_product: buying it accepts the change.
  const modBuy = (await create('tad-modified-create-0001', {
    product_id: modified.product_id,
    pricing_option_id: (modified.pricing_options as Obj[])[0]!.pricing_option_id,
  })) as Obj;
  const modPkg = (modBuy.packages as Obj[] | undefined)?.[0];
  t.match(modPkg, {
    targeting_overlay: { demographics: { age: { min: 25, max: 34 } } },
    targeting_resolution: { demographics: { equivalent: true } },
  });
  t.same((modPkg?.targeting_overlay as Obj | undefined)?.browser, ['chrome'], ':985-991');

  // :365's exact offer, bought in :1001-:1537.
  const exact = (
    await products({
      buying_mode: 'brief',
      brief: 'Premium video for outdoor enthusiasts',
      filters: { channels: ['olv'], pricing_currencies: ['USD'] },
      targeting_overlay: EXACT_OVERLAY,
      required_overlay_support: EXACT_REQUIRED,
    })
  )[0]!;
  const exactPkg = {
    product_id: exact.product_id,
    pricing_option_id: (exact.pricing_options as Obj[])[0]!.pricing_option_id,
  };
  // :1001 reject_country_exclusion_cardinality_on_create.
  refused(
    await create('tad-country-exclusion-0001', {
      ...exactPkg,
      targeting_overlay: { ...EXACT_OVERLAY, geo_countries_exclude: ['CA', 'MX'] },
    }),
    'UNSUPPORTED_FEATURE',
    'packages[0].targeting_overlay.geo_countries_exclude',
    ':1001',
  );
  // :1056 create_feed_package (the booked targeting: targeting-overlay.test.ts).
  const buy = (await create('tad-placement-create-0001', exactPkg)) as Obj;
  t.match(buy.available_actions, [{ action: 'update_targeting', mode: 'self_serve' }], ':1131');
  const pkgId = (buy.packages as Obj[])[0]!.package_id;

  // :1140 update_to_short_video.
  const SHORT = {
    geo_countries: ['US'],
    device_platform_exclude: ['fire_os'],
    browser: ['chrome', 'firefox'],
    browser_exclude: ['unknown'],
    ...LISTS,
    placement_selection: selected(pref('short_video')),
  };
  const short = (await update('tad-placement-update-0001', buy.media_buy_id, {
    package_id: pkgId,
    targeting_overlay: SHORT,
  })) as Obj;
  t.same(
    (short.affected_packages as Obj[] | undefined)?.[0]?.targeting_overlay,
    SHORT,
    ':1177-1218 the complete post-update state',
  );

  // :1220 reject_country_cardinality_overflow, :1268 its readback.
  refused(
    await update('tad-country-cardinality-0001', buy.media_buy_id, {
      package_id: pkgId,
      targeting_overlay: { ...SHORT, geo_countries: ['US', 'CA'] },
    }),
    'UNSUPPORTED_FEATURE',
    'packages[0].targeting_overlay.geo_countries',
    ':1220',
  );
  const afterCountry = await readPackage(buy.media_buy_id);
  t.equal(afterCountry.package_id, pkgId);
  t.same((afterCountry.targeting_overlay as Obj).geo_countries, ['US'], ':1290-1298');

  // :1301 reject_incompatible_browser_platform: Safari runs on iOS and macOS only.
  refused(
    await update('tad-browser-platform-0001', buy.media_buy_id, {
      package_id: pkgId,
      targeting_overlay: { ...SHORT, device_platform: ['android'], browser: ['safari'] },
    }),
    'UNSUPPORTED_FEATURE',
    undefined,
    ':1301',
  );
  // :1346 reject_cross_publisher_placement.
  refused(
    await update('tad-cross-publisher-0001', buy.media_buy_id, {
      package_id: pkgId,
      targeting_overlay: {
        geo_countries: ['US'],
        placement_selection: selected(pref('feed', 'unrelated-publisher.example')),
      },
    }),
    'INVALID_REQUEST',
    'packages[0].targeting_overlay.placement_selection.placement_refs[0]',
    ':1346',
  );
  // :1384 reject_duplicate_placement (uniqueItems).
  refused(
    await update('tad-duplicate-placement-0001', buy.media_buy_id, {
      package_id: pkgId,
      targeting_overlay: {
        geo_countries: ['US'],
        placement_selection: selected(pref('feed'), pref('feed')),
      },
    }),
    'INVALID_REQUEST',
    undefined,
    ':1384',
  );

  // :1421 update_to_single_proximity.
  const NORTH = {
    lat: 40.7128,
    lng: -74.006,
    label: 'North venue',
    radius: { value: 5, unit: 'km' },
  };
  const proximity = (await update('tad-single-proximity-0001', buy.media_buy_id, {
    package_id: pkgId,
    targeting_overlay: { ...SHORT, geo_proximity: [NORTH] },
  })) as Obj;
  t.same(
    ((proximity.affected_packages as Obj[] | undefined)?.[0]?.targeting_overlay as Obj | undefined)
      ?.geo_proximity,
    [NORTH],
    ':1462-1478',
  );
  // :1480 reject_proximity_cardinality_overflow.
  refused(
    await update('tad-proximity-cardinality-0001', buy.media_buy_id, {
      package_id: pkgId,
      targeting_overlay: {
        ...SHORT,
        geo_proximity: [
          NORTH,
          { lat: 34.0522, lng: -118.2437, label: 'South venue', radius: { value: 5, unit: 'km' } },
        ],
      },
    }),
    'UNSUPPORTED_FEATURE',
    'packages[0].targeting_overlay.geo_proximity',
    ':1480',
  );

  // :1537 read_updated_placement: all five refusals left the state unchanged.
  const final = await readPackage(buy.media_buy_id);
  t.equal(final.package_id, pkgId);
  t.same(final.targeting_overlay, { ...SHORT, geo_proximity: [NORTH] }, ':1570-1618');
  t.ok(START);
});
