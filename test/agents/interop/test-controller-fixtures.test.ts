/**
 * comply_test_controller fixtures the 3.1.19 / 3.2.0-beta.5 storyboards seed and read back
 * (issue #20): a seeded buy's packages as the fixture gives them (a legacy package without
 * product or pricing option, with the buyer's context), delivery booked on a given day,
 * and the measurement simulate_delivery states (viewability, vendor_metric_values) on the
 * delivery report. Every malformed form is refused INVALID_PARAMS with nothing stored.
 */
import t from 'tap';
import { brandProfile } from '../../../shared/brand.js';
import { buyer, harness as coreHarness } from '../support/core.js';

const adcp = brandProfile('adcp');
const sandbox = { brand: { domain: 'acme.example' }, operator: 'acme.example', sandbox: true };

async function setUp(t: Parameters<typeof coreHarness>[0]) {
  const h = await coreHarness(t, { profile: adcp, settings: { testController: true } });
  const c = buyer(h);
  const control = (scenario: string, params: Record<string, unknown>) =>
    h.ok('sales', 'comply_test_controller', { scenario, account: sandbox, params }, c);
  return { h, c, control };
}

t.test('seed_media_buy keeps the fixture packages, legacy ones included', async (t) => {
  const { h, c, control } = await setUp(t);
  // package_correlation_legacy_fallback.yaml's fixture: no product_id, a package context.
  t.match(
    await control('seed_media_buy', {
      media_buy_id: 'legacy_buy',
      fixture: {
        status: 'active',
        currency: 'USD',
        context: { correlation_id: 'legacy-buy' },
        packages: [
          { package_id: 'pkg_legacy', budget: 5000, context: { buyer_ref: 'line-001' } },
          { package_id: 'pkg_second', product_id: 'prod_x', pricing_option_id: 'po_x' },
        ],
      },
    }),
    { success: true },
  );
  const got = await h.ok('sales', 'get_media_buys', { media_buy_ids: ['legacy_buy'] }, c);
  const buy = (got.media_buys as Array<Record<string, unknown>>)[0]!;
  t.same(buy.context, { correlation_id: 'legacy-buy' }, 'the buy context');
  const [legacy, second] = buy.packages as Array<Record<string, unknown>>;
  t.match(legacy, { package_id: 'pkg_legacy', budget: 5000, context: { buyer_ref: 'line-001' } });
  t.notOk('product_id' in legacy! || 'pricing_option_id' in legacy!, 'the legacy shape');
  t.match(second, { package_id: 'pkg_second', product_id: 'prod_x', pricing_option_id: 'po_x' });
  t.equal(buy.total_budget, 5000);

  // A re-seed replaces the packages; a fixture without packages keeps them.
  await control('seed_media_buy', {
    media_buy_id: 'legacy_buy',
    fixture: { packages: [{ package_id: 'pkg_only', budget: 10 }] },
  });
  await control('seed_media_buy', { media_buy_id: 'legacy_buy', fixture: { status: 'paused' } });
  const again = await h.ok('sales', 'get_media_buys', { media_buy_ids: ['legacy_buy'] }, c);
  t.same(
    (
      (again.media_buys as Array<{ packages: Array<{ package_id: string }> }>)[0]!.packages ?? []
    ).map((p) => p.package_id),
    ['pkg_only'],
  );

  // A package id another buy holds is refused, and the buy is left as it was.
  await control('seed_media_buy', { media_buy_id: 'other_buy' });
  t.match(
    await control('seed_media_buy', {
      media_buy_id: 'other_buy',
      fixture: { status: 'paused', packages: [{ package_id: 'pkg_only' }] },
    }),
    { success: false, error: 'FORBIDDEN' },
  );
  const { rows } = await h.pool.query<{ status: string }>(
    `SELECT status FROM ${h.schema}.media_buys WHERE media_buy_id = 'other_buy'`,
  );
  t.equal(rows[0]!.status, 'active', 'nothing of the refused seed stored');

  for (const [name, packages] of [
    ['not an array', { package_id: 'p' }],
    ['an entry not an object', ['p']],
    ['no package id', [{ budget: 1 }]],
    ['package id with a space', [{ package_id: 'a b' }]],
    ['product id not a string', [{ package_id: 'p', product_id: 7 }]],
    ['negative budget', [{ package_id: 'p', budget: -1 }]],
    ['budget not a number', [{ package_id: 'p', budget: '10' }]],
    ['context not an object', [{ package_id: 'p', context: 'x' }]],
    ['buyer_ref not a string', [{ package_id: 'p', buyer_ref: 1 }]],
    ['assignments not a list', [{ package_id: 'p', creative_assignments: 'c' }]],
    ['assignment not an id', [{ package_id: 'p', creative_assignments: [{ creative_id: 1 }] }]],
    ['repeated package id', [{ package_id: 'p' }, { package_id: 'p' }]],
    ['too many', Array.from({ length: 51 }, (_, i) => ({ package_id: `p${i}` }))],
  ] as const) {
    t.match(
      await control('seed_media_buy', { media_buy_id: 'refused_buy', fixture: { packages } }),
      { success: false, error: 'INVALID_PARAMS' },
      name,
    );
  }
  t.match(
    await control('seed_media_buy', { media_buy_id: 'refused_buy', fixture: { context: [] } }),
    { success: false, error: 'INVALID_PARAMS' },
    'buy context not an object',
  );
  const stored = await h.pool.query(
    `SELECT 1 FROM ${h.schema}.media_buys WHERE media_buy_id = 'refused_buy'`,
  );
  t.equal(stored.rowCount, 0, 'nothing stored by a refused seed');
});

t.test('simulate_delivery on a day, with viewability and vendor metrics', async (t) => {
  const { h, c, control } = await setUp(t);
  await control('seed_media_buy', {
    media_buy_id: 'm_buy',
    fixture: {
      start_time: '2099-01-01T00:00:00Z',
      end_time: '2099-12-31T00:00:00Z',
      packages: [{ package_id: 'm_pkg', budget: 1000 }],
    },
  });
  const report = async (extra: Record<string, unknown> = {}) => {
    const r = await h.ok(
      'sales',
      'get_media_buy_delivery',
      { media_buy_ids: ['m_buy'], ...extra },
      c,
    );
    return (r.media_buy_deliveries as Array<Record<string, unknown>>)[0]!;
  };
  const before = await report();
  t.notOk('viewability' in (before.totals as object), 'nothing stated: no viewability');

  const viewability = {
    measurable_impressions: 74000,
    viewable_impressions: 59200,
    viewable_rate: 0.8,
    viewed_seconds: 4.3,
    standard: 'mrc',
  };
  const vendorMetric = {
    vendor: { domain: 'attentionvendor.example' },
    metric_id: 'attention_units',
    value: 4.2,
    unit: 'score',
    measurable_impressions: 72000,
  };
  const good = { media_buy_id: 'm_buy', impressions: 80000 };
  for (const [name, params] of [
    ['viewability not an object', { viewability: 0.8 }],
    ['viewable above measurable', { viewability: { ...viewability, viewable_impressions: 80000 } }],
    ['rate above 1', { viewability: { ...viewability, viewable_rate: 1.2 } }],
    ['negative seconds', { viewability: { ...viewability, viewed_seconds: -1 } }],
    ['unknown standard', { viewability: { ...viewability, standard: 'iab' } }],
    ['vendor without a domain', { viewability: { ...viewability, vendor: { name: 'x' } } }],
    ['no measurable impressions', { viewability: { viewable_impressions: 1 } }],
    ['vendor metrics not an array', { vendor_metric_values: vendorMetric }],
    ['no vendor metrics', { vendor_metric_values: [] }],
    ['metric without vendor', { vendor_metric_values: [{ ...vendorMetric, vendor: undefined }] }],
    ['metric id upper case', { vendor_metric_values: [{ ...vendorMetric, metric_id: 'Attn' }] }],
    ['value not a number', { vendor_metric_values: [{ ...vendorMetric, value: '4.2' }] }],
    ['empty unit', { vendor_metric_values: [{ ...vendorMetric, unit: '' }] }],
    [
      'negative coverage',
      { vendor_metric_values: [{ ...vendorMetric, measurable_impressions: -1 }] },
    ],
    ['delivery date not a date', { delivery_date: '2099-02-30' }],
    ['delivery date a time', { delivery_date: '2099-02-01T00:00:00Z' }],
  ] as const) {
    t.match(
      await control('simulate_delivery', { ...good, ...params }),
      { success: false, error: 'INVALID_PARAMS' },
      name,
    );
  }
  const refused = await report();
  t.same(refused.totals, before.totals, 'refused calls booked nothing');
  t.notOk('viewability' in (refused.totals as object), 'and stated nothing');

  t.match(
    await control('simulate_delivery', {
      ...good,
      delivery_date: '2099-04-15',
      viewability,
      vendor_metric_values: [vendorMetric],
    }),
    { success: true },
  );
  const row = await report();
  t.same((row.totals as Record<string, unknown>).viewability, viewability, 'on the totals');
  const pkg = (row.by_package as Array<Record<string, unknown>>)[0]!;
  t.same(pkg.viewability, viewability, 'on the package measured');
  t.same(pkg.vendor_metric_values, [vendorMetric]);

  // Booked on 2099-04-15: a half-open range of that day holds it, the next day nothing.
  const day = await report({ start_date: '2099-04-15', end_date: '2099-04-16' });
  t.match(day.totals, { impressions: 80000 });
  const next = await report({ start_date: '2099-04-16', end_date: '2099-04-17' });
  t.match(next.totals, { impressions: 0 });
});

t.test('creative library: seeded manifests, filtered by asset type', async (t) => {
  const h = await coreHarness(t, { profile: adcp, settings: { testController: true } });
  const c = buyer(h, 'creative');
  const seed = (creative_id: string, fixture: unknown) =>
    h.ok(
      'creative',
      'comply_test_controller',
      { scenario: 'seed_creative', account: sandbox, params: { creative_id, fixture } },
      c,
    );
  // asset_type_filtering.yaml's fixtures (3.2.0-beta.5), abridged.
  const theirs = { agent_url: 'https://creative.example.com', id: 'existing_post' };
  const canonicalRef = {
    scope: 'publisher',
    publisher_domain: 'community.example',
    format_option_id: 'existing_published_post',
  };
  const fixtures: Record<string, unknown> = {
    asset_filter_published_mixed: {
      format_id: theirs,
      manifest: {
        format_id: theirs,
        assets: {
          published_post: { asset_type: 'published_post', post_url: 'https://c.example/p/1' },
          landing_page_url: { asset_type: 'url', url: 'https://acme.example/p' },
        },
      },
    },
    asset_filter_published_canonical: {
      format_kind: 'video_hosted',
      format_option_ref: canonicalRef,
      manifest: {
        format_kind: 'video_hosted',
        format_option_ref: canonicalRef,
        assets: {
          published_post: {
            asset_type: 'published_post',
            platform: 'community',
            platform_post_id: 'p-2',
          },
        },
      },
    },
    asset_filter_image: {
      format_id: theirs,
      manifest: {
        assets: {
          image: { asset_type: 'image', url: 'https://cdn.example/i.png', width: 300, height: 250 },
        },
      },
    },
    asset_filter_zip_bundle: {
      format_id: { agent_url: 'https://creative.example.com', id: 'html5_bundle' },
      manifest: {
        assets: {
          bundle: {
            asset_type: 'zip',
            url: 'https://cdn.example/b.zip',
            mime_type: 'application/zip',
          },
        },
      },
    },
    asset_filter_nested_card_image: {
      format_kind: 'image_carousel',
      manifest: {
        format_kind: 'image_carousel',
        assets: {
          cards: [
            {
              asset_type: 'card',
              media: { asset_type: 'image', url: 'https://cdn.example/c.png' },
            },
          ],
        },
      },
    },
  };
  for (const [id, fixture] of Object.entries(fixtures)) {
    t.match(await seed(id, { name: id, status: 'approved', ...(fixture as object) }), {
      success: true,
    });
  }
  const list = async (filters: Record<string, unknown>) => {
    const r = await h.ok(
      'creative',
      'list_creatives',
      { filters: { creative_ids: Object.keys(fixtures), ...filters } },
      c,
    );
    return r as unknown as {
      creatives: Array<Record<string, unknown>>;
      query_summary: { total_matching: number; returned: number };
    };
  };
  const ids = (r: Awaited<ReturnType<typeof list>>) => r.creatives.map((x) => x.creative_id);

  // published_post_or_audio: OR within the field, mixed assets match, canonical identity kept.
  const posts = await list({ asset_types: ['published_post', 'audio'] });
  t.same(posts.query_summary, { total_matching: 2, returned: 2 });
  t.same(ids(posts), ['asset_filter_published_mixed', 'asset_filter_published_canonical']);
  const [mixed, canonical] = posts.creatives;
  t.same(mixed!.format_id, theirs, 'a foreign format id as seeded');
  t.match(mixed!.assets, { landing_page_url: { asset_type: 'url' } }, 'the companion url kept');
  t.match(canonical, {
    format_kind: 'video_hosted',
    format_option_ref: { format_option_id: 'existing_published_post' },
    assets: { published_post: { asset_type: 'published_post' } },
  });
  t.notOk('format_id' in canonical!, 'no fabricated format_id');
  // published_post_and_format: AND across fields (the foreign format id matches as given).
  const both = await list({ asset_types: ['published_post'], format_ids: [theirs] });
  t.same(ids(both), ['asset_filter_published_mixed']);
  // zip_bundle, no_audio_assets; a nested image in cards[] never matches.
  const zip = await list({ asset_types: ['zip'] });
  t.same(ids(zip), ['asset_filter_zip_bundle']);
  t.match(zip.creatives[0]!.assets, { bundle: { asset_type: 'zip' } });
  t.same((await list({ asset_types: ['audio'] })).query_summary, {
    total_matching: 0,
    returned: 0,
  });
  t.same(ids(await list({ asset_types: ['image'] })), ['asset_filter_image']);

  for (const [name, asset_types] of [
    ['empty', []],
    ['not a list', 'image'],
    ['unknown type', ['hologram']],
  ] as const) {
    const e = await h.err('creative', 'list_creatives', { filters: { asset_types } }, c);
    t.match(e, { code: 'VALIDATION_ERROR' }, `asset_types ${name}`);
  }
  for (const [name, fixture] of [
    ['format_kind not a kind', { format_kind: 'Video Hosted' }],
    ['format_option_ref not an object', { format_kind: 'image', format_option_ref: 'x' }],
    ['format_id not an object', { format_id: 'display_300x250' }],
    ['format_id agent_url not a string', { format_id: { agent_url: 1, id: 'x' } }],
    ['manifest not an object', { manifest: [] }],
    ['assets not an object', { manifest: { assets: 'x' } }],
  ] as const) {
    t.match(
      await seed('refused_creative', fixture),
      { success: false, error: 'INVALID_PARAMS' },
      name,
    );
  }
  const stored = await h.pool.query(
    `SELECT 1 FROM ${h.schema}.creative_library WHERE creative_id = 'refused_creative'`,
  );
  t.equal(stored.rowCount, 0, 'nothing stored by a refused seed');
});

t.test('canonical creatives seeded at either agent page and read back canonical', async (t) => {
  const h = await coreHarness(t, { profile: adcp, settings: { testController: true } });
  // pagination-integrity.yaml / read-tool-idempotency.yaml (3.2.0-beta.5): three
  // format_kind image fixtures, paged two at a time; a read with 3.1 envelope fields.
  for (const agent of ['sales', 'creative'] as const) {
    const c = buyer(h, agent);
    const ids = [1, 2, 3].map((i) => `pagination_integrity_creative_${i}`);
    for (const creative_id of ids) {
      t.match(
        await h.ok(
          agent,
          'comply_test_controller',
          {
            scenario: 'seed_creative',
            account: sandbox,
            params: { creative_id, fixture: { status: 'approved', format_kind: 'image' } },
          },
          c,
        ),
        { success: true },
      );
    }
    const first = await h.ok(
      agent,
      'list_creatives',
      { filters: { creative_ids: ids }, pagination: { max_results: 2 } },
      c,
    );
    const page = first.creatives as Array<Record<string, unknown>>;
    t.equal(page.length, 2, `${agent}: two of three`);
    t.match(first.pagination, { has_more: true, cursor: String });
    t.match(page[0], { format_kind: 'image' }, `${agent}: canonical identity`);
    t.notOk('format_id' in page[0]!, `${agent}: no fabricated format_id`);
    const rest = await h.ok(
      agent,
      'list_creatives',
      {
        filters: { creative_ids: ids },
        pagination: { max_results: 2, cursor: (first.pagination as { cursor: string }).cursor },
      },
      c,
    );
    t.same(
      (rest.creatives as Array<{ creative_id: string }>).map((x) => x.creative_id),
      [ids[2]],
    );
    const context = { correlation_id: 'read_tool_idempotency--list_creatives_with_key' };
    const withKey = await h.ok(
      agent,
      'list_creatives',
      {
        idempotency_key: '0b1f5c3e-2f4a-4c1e-9a77-0c5d2f8e9a10',
        include_snapshot: false,
        pagination: { max_results: 10 },
        context,
        ext: { adcp: { storyboard: 'read_tool_idempotency', probe: 'list_creatives' } },
      },
      c,
    );
    t.ok(Array.isArray(withKey.creatives), `${agent}: creatives with an idempotency_key`);
    t.same(withKey.context, context);
  }
});
