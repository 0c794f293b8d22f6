/**
 * The canonical creative formats (3.1+, the 3.2 default), asserted here from the
 * storyboard documents because the registry's @adcp/sdk 6.11.0 client cannot send them
 * (its 3.0 request schema requires `format_id`; storyboards-current-known.ts lists those
 * steps): a `format_kind` creative synced, assigned to a package and previewed
 * (media-buy creative_reception.yaml:89-220, creative index.yaml preview_display:293),
 * `creative.supported_formats` and build_creative by `target_capability_id`
 * (creative canonical_supported_formats.yaml:46-200), products projected onto the
 * canonicals (`format_options`), and the malformed forms refused naming the field.
 */
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { START, buyer, harness } from './support/core.js';

const end = new Date(START + 48 * 3600_000).toISOString();
const ACCOUNT = { brand: { domain: 'acmeoutdoor.example' }, operator: 'pinnacle-agency.example' };
const key = () => `canon-${Math.random().toString(36).slice(2, 14)}`;

const nativeCreative = {
  creative_id: 'acme_native_001',
  name: 'Acme native',
  format_kind: 'native_in_feed',
  assets: {
    title: { asset_type: 'text', content: 'Trail Pro 3000' },
    advertiser_name: { asset_type: 'text', content: 'Acme Outdoor' },
    landing_page_url: { asset_type: 'url', url: 'https://acmeoutdoor.example/trail' },
    main_image: { asset_type: 'image', url: 'https://cdn.example/t.jpg', width: 1200, height: 627 },
  },
};

t.test('sales: a format_kind creative synced, assigned, listed', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp'), settings: { approval: 'never' } });
  const c = buyer(h);
  const products = (
    await h.ok('sales', 'get_products', { buying_mode: 'brief', brief: 'display' }, c)
  ).products as Array<Record<string, unknown>>;
  for (const p of products) {
    const options = p.format_options as Array<Record<string, unknown>>;
    t.ok(options.length > 0, `${String(p.product_id)}: format_options`);
    t.same(
      options.map((o) => (o.v1_format_ref as Array<{ id: string }>)[0]!.id),
      (p.format_ids as Array<{ id: string }>).map((f) => f.id),
      'each projected format links its legacy id',
    );
  }
  const display = products.find((p) => p.product_id === 'display_run_of_network')!;
  t.match(display.format_options, [{ format_kind: 'image', params: { slots: Array } }]);

  const created = await h.ok(
    'sales',
    'create_media_buy',
    {
      idempotency_key: key(),
      brand: { domain: 'acmeoutdoor.example' },
      account: ACCOUNT,
      packages: [
        {
          product_id: 'display_run_of_network',
          pricing_option_id: 'ron_display_auction',
          budget: 1000,
          bid_price: 4,
        },
      ],
      start_time: 'asap',
      end_time: end,
    },
    c,
  );
  const packageId = (created.packages as Array<{ package_id: string }>)[0]!.package_id;
  const synced = await h.ok(
    'sales',
    'sync_creatives',
    {
      idempotency_key: key(),
      account: ACCOUNT,
      creatives: [nativeCreative],
      assignments: [{ creative_id: nativeCreative.creative_id, package_id: packageId }],
    },
    c,
  );
  t.match(synced.creatives, [{ creative_id: 'acme_native_001', action: 'created' }]);
  const listed = await h.ok(
    'sales',
    'list_creatives',
    { filters: { creative_ids: ['acme_native_001'] } },
    c,
  );
  const got = (listed.creatives as Array<Record<string, unknown>>)[0]!;
  t.equal(got.format_kind, 'native_in_feed', 'listed by its canonical kind');
  t.notOk('format_id' in got, 'no legacy format id invented');
  t.same(got.assigned_package_ids, [packageId], 'assigned to the package');

  // The same creative again: unchanged; malformed forms fail per creative or per request.
  const again = await h.ok(
    'sales',
    'sync_creatives',
    { idempotency_key: key(), account: ACCOUNT, creatives: [nativeCreative] },
    c,
  );
  t.match(again.creatives, [{ action: 'unchanged' }]);
  const bad = await h.ok(
    'sales',
    'sync_creatives',
    {
      idempotency_key: key(),
      account: ACCOUNT,
      creatives: [
        { ...nativeCreative, creative_id: 'k1', format_kind: 'hologram' },
        { ...nativeCreative, creative_id: 'k2', assets: { title: nativeCreative.assets.title } },
        { ...nativeCreative, creative_id: 'k3', format_kind: 'custom' },
      ],
    },
    c,
  );
  t.match(bad.creatives, [
    {
      action: 'failed',
      errors: [{ code: 'FORMAT_NOT_SUPPORTED', field: 'creatives[0].format_kind' }],
    },
    {
      action: 'failed',
      errors: [{ code: 'VALIDATION_ERROR', field: 'creatives[1].assets.advertiser_name' }],
    },
    { action: 'failed', errors: [{ code: 'FORMAT_NOT_SUPPORTED' }] },
  ]);
  for (const [why, creative] of [
    [
      'both',
      {
        ...nativeCreative,
        format_id: { agent_url: 'http://127.0.0.1:3002', id: 'display_300x250' },
      },
    ],
    ['neither', { ...nativeCreative, format_kind: undefined }],
  ] as const) {
    const e = await h.err(
      'sales',
      'sync_creatives',
      { idempotency_key: key(), account: ACCOUNT, creatives: [creative] },
      c,
    );
    t.equal(e.code, 'VALIDATION_ERROR', `format_id and format_kind: ${why}`);
    t.equal(e.field, 'creatives[0].format_id');
  }
});

t.test('creative: supported_formats, build by capability, canonical preview', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp') });
  const c = buyer(h, 'creative');
  const caps = await h.ok('creative', 'get_adcp_capabilities', {}, c);
  const creative = caps.creative as Record<string, unknown>;
  const formats = creative.supported_formats as Array<Record<string, unknown>>;
  t.match(formats[0], {
    capability_id: String,
    operations: ['build'],
    format: { format_kind: 'image', params: { slots: [{ asset_group_id: 'image_main' }] } },
  });
  t.equal(new Set(formats.map((f) => f.capability_id)).size, formats.length, 'unique ids');
  t.equal(creative.bills_through_adcp, false);
  t.equal(creative.supports_evaluator, false);
  t.same((caps.account as Record<string, unknown>).supported_billing, ['operator']);
  // evaluator_auth.yaml get_capabilities (3.1.19/3.2.0-beta.5 :78): asked for creative and
  // governance, the document is schema-valid (the response hook), echoes context, says no
  // evaluator and names a build capability; no governance block (not a governance agent),
  // so the storyboard's governance.creative_features capture has nothing to read (known list).
  const asked = await h.ok(
    'creative',
    'get_adcp_capabilities',
    {
      protocols: ['creative', 'governance'],
      context: { correlation_id: 'creative_evaluator_auth--get_capabilities' },
    },
    c,
  );
  t.same(asked.context, { correlation_id: 'creative_evaluator_auth--get_capabilities' });
  t.match(asked.creative, {
    supports_evaluator: false,
    supported_formats: [{ capability_id: String }],
  });
  t.notOk('governance' in asked, 'no governance block');
  t.notOk('localization' in (asked.creative as object), 'no localization claimed');

  const built = await h.ok(
    'creative',
    'build_creative',
    {
      idempotency_key: key(),
      message: 'Summer trail sale',
      target_capability_id: formats[0]!.capability_id,
      brand: { domain: 'acmeoutdoor.example' },
    },
    c,
  );
  const manifest = built.creative_manifest as Record<string, unknown>;
  t.equal(manifest.format_kind, 'image');
  t.notOk('format_id' in manifest, 'the canonical path invents no legacy id');
  t.match(manifest.assets, {
    image_main: { asset_type: 'image' },
    landing_page_url: { asset_type: 'url' },
  });

  const unknown = await h.err(
    'creative',
    'build_creative',
    { idempotency_key: key(), message: 'x', target_capability_id: 'unknown_takeover_generation' },
    c,
  );
  t.match(unknown, { code: 'FORMAT_NOT_SUPPORTED', field: 'target_capability_id' });
  const two = await h.err(
    'creative',
    'build_creative',
    {
      idempotency_key: key(),
      message: 'x',
      target_capability_id: formats[0]!.capability_id,
      target_format_id: { agent_url: 'http://127.0.0.1:3002', id: 'display_300x250' },
    },
    c,
  );
  t.equal(two.code, 'VALIDATION_ERROR', 'one build target only');

  const preview = await h.ok(
    'creative',
    'preview_creative',
    {
      request_type: 'single',
      creative_manifest: {
        format_kind: 'image',
        assets: {
          image: { asset_type: 'image', url: 'https://cdn.example/b.jpg', width: 300, height: 250 },
          click_url: { asset_type: 'url', url: 'https://acmeoutdoor.example/' },
        },
      },
    },
    c,
  );
  const p = (preview.previews as Array<Record<string, unknown>>)[0]!;
  t.equal(p.format_kind, 'image');
  t.match(p.renders, [{ preview_url: String, dimensions: { width: 300, height: 250 } }]);
  const badKind = await h.err(
    'creative',
    'preview_creative',
    { request_type: 'single', creative_manifest: { format_kind: 'hologram', assets: {} } },
    c,
  );
  t.match(badKind, { code: 'FORMAT_NOT_SUPPORTED', field: 'creative_manifest.format_kind' });
});
