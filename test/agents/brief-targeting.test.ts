/**
 * Hard targeting inferred from a brief (published 3.2 get_products
 * `targeting_resolution.brief_targeting`): the narrow patterns read, the ambiguous and
 * malformed ones that yield no inference (never an error), product eligibility, and the
 * answer served as 3.2 against the one pinned to 3.1.
 */
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import {
  honorsBriefTargeting,
  inferBriefTargeting,
} from '../../agents/sales/catalog/brief-targeting.js';
import type { ProductRow } from '../../agents/sales/catalog/product-row.js';
import { CONFIGURED_VALIDITY_MS } from '../../agents/sales/catalog/configured.js';
import { buyer, harness, START } from './support/core.js';

const age = (min: number, max: number) => ({ age: { min, max, include_unknown: false } });

t.test('explicit hard statements are read', async (t) => {
  t.same(
    inferBriefTargeting(
      'Premium outdoor video. Hard requirements: deliver only in the US and only to people ages 18 through 44.',
    ),
    { geo_countries: ['US'], demographics: age(18, 44) },
  );
  t.same(inferBriefTargeting('Run only in Canada, the United Kingdom or Mexico'), {
    geo_countries: ['CA', 'GB', 'MX'],
  });
  t.same(inferBriefTargeting('Only in the United States of America.'), { geo_countries: ['US'] });
  t.same(inferBriefTargeting('Audio that must reach ages 25-34'), { demographics: age(25, 34) });
  t.same(inferBriefTargeting('Strictly 18–24 year olds, please'), { demographics: age(18, 24) });
  t.same(inferBriefTargeting('Only in the US. Also only in the US at night.'), {
    geo_countries: ['US'],
  });
});

t.test('vague, ambiguous and malformed briefs infer nothing', async (t) => {
  for (const brief of [
    undefined,
    '',
    'Premium outdoor video in the US for ages 18 through 44', // no hard statement
    'Ideally ages 18-44. Only in spirit.', // the age is not in the hard sentence
    'Not only in the US but worldwide',
    'Only in Narnia',
    'only in America', // not mapped: a continent or a country
    'Only to ages 44 through 18', // min over max
    'Only to ages 18 through 999', // out of range
    'Only ages 18-24 and only ages 35-44', // two intervals
    'Only in the US. Only in Canada.', // contradictory
    'x'.repeat(10000),
  ]) {
    t.equal(inferBriefTargeting(brief), null, String(brief).slice(0, 60));
  }
  t.same(inferBriefTargeting('Only in the US; ideally ages 18-44'), { geo_countries: ['US'] });
});

t.test('a product honors the targeting it can deliver exactly', async (t) => {
  const product = (extra: Partial<ProductRow>): ProductRow =>
    ({ targeting: {}, fixture: undefined, ...extra }) as ProductRow;
  const us = { geo_countries: ['US'] };
  const ages = { demographics: age(18, 44) };
  t.ok(honorsBriefTargeting(product({}), us, ['US', 'CA']), 'the seller countries');
  t.notOk(honorsBriefTargeting(product({}), { geo_countries: ['GB'] }, ['US', 'CA']));
  t.notOk(honorsBriefTargeting(product({ targeting: { geo_countries: ['CA'] } }), us, ['US']));
  t.notOk(honorsBriefTargeting(product({}), ages, ['US']), 'no age support');
  const intervals = (...spans: Array<[number, number]>) =>
    product({
      fixture: {
        demographic_targeting: {
          age: { intervals: spans.map(([min, max]) => ({ age: { min, max } })) },
        },
      },
    });
  t.ok(honorsBriefTargeting(intervals([25, 34], [18, 24], [35, 44]), ages, ['US']), 'tiled');
  t.notOk(honorsBriefTargeting(intervals([18, 24], [35, 44]), ages, ['US']), 'a gap');
  t.notOk(honorsBriefTargeting(intervals([18, 24], [25, 49]), ages, ['US']), 'an overrun');
  const open = product({ fixture: { overlay_support: { demographics: { age: true } } } });
  t.ok(honorsBriefTargeting(open, ages, ['US']), 'open age support');
});

t.test('get_products served as 3.2 confirms and binds; a 3.1 pin does neither', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  type Wire = {
    product_id: string;
    is_custom?: boolean;
    expires_at?: string;
    targeting?: { geo_countries?: string[] };
  };
  const products = (r: Record<string, unknown>) => r.products as Wire[];
  const ids = (r: Record<string, unknown>) => products(r).map((p) => p.product_id);
  const all = await h.ok('sales', 'get_products', { buying_mode: 'brief', brief: 'video' }, c);
  t.notOk('targeting_resolution' in all, 'nothing inferred, nothing confirmed');
  t.notOk(
    products(all).some((p) => p.expires_at),
    'catalog products do not expire',
  );
  const usOnly = products(all)
    .filter((p) => !p.targeting?.geo_countries?.includes('CA'))
    .map((p) => p.product_id);
  t.ok(usOnly.length > 0, 'the catalog has US-only products');

  const brief = { buying_mode: 'brief', brief: 'Video, only in Canada' };
  const ca = await h.ok('sales', 'get_products', brief, c);
  t.same(ca.targeting_resolution, { brief_targeting: { geo_countries: ['CA'] } });
  t.ok(ids(ca).length > 0, 'Canadian products remain');
  const bases = ids(ca).map((id) => id.replace(/\.cfg\.[0-9a-f]{12}$/, ''));
  t.notOk(
    bases.some((id) => usOnly.includes(id)),
    'products that cannot deliver in Canada are omitted',
  );
  const offer = products(ca)[0]!;
  t.match(offer, {
    is_custom: true,
    expires_at: new Date(START + CONFIGURED_VALIDITY_MS).toISOString(),
    targeting: { geo_countries: ['CA'] },
  });
  t.not(offer.product_id, bases[0], 'a configured product has its own id');
  t.same(ids(await h.ok('sales', 'get_products', brief, c)), ids(ca), 'the same brief renews');
  t.notOk(
    ids(await h.ok('sales', 'get_products', {}, c)).includes(offer.product_id),
    'ordinary listings never show a configured product',
  );

  const pinned = await h.ok('sales', 'get_products', { ...brief, svc_version: '3.1' }, c);
  t.notOk('targeting_resolution' in pinned, '3.1 has no targeting_resolution');
  t.ok(
    ids(pinned).some((id) => usOnly.includes(id)),
    'a 3.1 answer is not narrowed either',
  );
  t.notOk(
    products(pinned).some((p) => p.expires_at),
    'nor configured',
  );
  const anonymous = await h.ok('sales', 'get_products', brief);
  t.notOk(
    products(anonymous).some((p) => p.is_custom),
    'without credentials: narrowed, not configured',
  );
  const aged = await h.ok(
    'sales',
    'get_products',
    { buying_mode: 'brief', brief: 'Video only for ages 18-44' },
    c,
  );
  t.same(aged.products, [], 'no catalog product targets age');
  t.same(aged.targeting_resolution, { brief_targeting: { demographics: age(18, 44) } });

  // Buying the offer accepts its targeting; past expires_at it is PRODUCT_EXPIRED.
  const option = (offer as unknown as { pricing_options: Array<{ pricing_option_id: string }> })
    .pricing_options[0]!.pricing_option_id;
  const buy = (ref: string) => ({
    buyer_ref: ref,
    brand_manifest: { url: 'https://acme.example' },
    packages: [
      {
        buyer_ref: 'p1',
        product_id: offer.product_id,
        pricing_option_id: option,
        budget: 50000,
        bid_price: 30,
      },
    ],
    start_time: { type: 'asap' },
    end_time: new Date(START + 7 * 86400_000).toISOString(),
  });
  await h.ok('sales', 'create_media_buy', buy('configured-1'), c);
  h.clock.advance(CONFIGURED_VALIDITY_MS);
  const expired = await h.err('sales', 'create_media_buy', buy('configured-2'), c);
  t.equal(expired.code, 'PRODUCT_EXPIRED');
  t.equal(expired.status, 410);
  t.equal(expired.field, 'packages[0].product_id');
});

t.test(
  'targeting_aware_discovery.yaml:309 and its 3.1 downshift, on the seeded fixture',
  async (t) => {
    // The runner (6.11.0) pins adcp_major_version 3 alone (served as 3.0); the step's
    // expectations are asserted here with the storyboard's fixture and request, pinned 3.2.
    const h = await harness(t, {
      profile: brandProfile('adcp'),
      settings: { testController: true },
    });
    const c = buyer(h);
    const account = {
      brand: { domain: 'acmeoutdoor.example' },
      operator: 'pinnacle-agency.example',
      sandbox: true,
    };
    const interval = (min: number, max: number) => ({
      interval_id: `age_${min}_${max}`,
      age: { min, max, include_unknown: false },
    });
    const seed = (product_id: string, channel: string, extra: Record<string, unknown> = {}) =>
      h.ok(
        'sales',
        'comply_test_controller',
        {
          scenario: 'seed_product',
          account,
          params: {
            product_id,
            fixture: {
              delivery_type: 'non_guaranteed',
              channels: [channel],
              format_ids: [{ id: 'video_30s' }],
              pricing_options: [
                {
                  pricing_option_id: `${product_id}_cpm`,
                  pricing_model: 'cpm',
                  currency: 'USD',
                  floor_price: 12,
                },
              ],
              ...extra,
            },
          },
        },
        c,
      );
    await seed('targeting_aware_video_catalog', 'olv', {
      demographic_targeting: {
        age: {
          execution_modes: ['enumerated_intervals'],
          unknown_handling: 'always_excluded',
          intervals: [interval(18, 24), interval(25, 34), interval(35, 44)],
        },
      },
    });
    await seed('targeting_aware_fixed_placement', 'ctv');
    const request = {
      buying_mode: 'brief',
      brief:
        'Premium outdoor video. Hard requirements: deliver only in the US and only to people ages 18 through 44.',
      account,
      filters: { channels: ['olv'], pricing_currencies: ['USD'] },
      adcp_major_version: 3,
      adcp_version: '3.2',
    };
    const got = await h.ok('sales', 'get_products', request, c);
    t.same(got.targeting_resolution, {
      brief_targeting: { geo_countries: ['US'], demographics: age(18, 44) },
    });
    const first = (got.products as Array<Record<string, unknown>>)[0]!;
    t.match(first, { is_custom: true, product_id: /^targeting_aware_video_catalog\.cfg\./ });
    t.ok(typeof first.expires_at === 'string', 'time-bound');
    t.ok(first.demographic_targeting, 'a 3.2 product member, served as 3.2');
    const downshift = await h.ok('sales', 'get_products', { ...request, adcp_version: '3.1' }, c);
    t.notOk('targeting_resolution' in downshift);
    for (const p of downshift.products as Array<Record<string, unknown>>) {
      t.notOk('demographic_targeting' in p || 'expires_at' in p, `${String(p.product_id)}: 3.1`);
    }
  },
);
