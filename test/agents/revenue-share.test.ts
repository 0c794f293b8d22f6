/**
 * Revenue-share pricing (3.2 contingent pricing, pricing-options/revenue-share-option.json)
 * with the storyboard's own fixture and requests (compliance 3.2.0-beta.5
 * protocols/media-buy/scenarios/revenue_share_pricing.yaml), pinned to 3.2 as the storyboard
 * means (the 6.11.0 runner pins 3.0): seeded, discovered through `pricing_structures`,
 * bought without a bid, delivered with its commissionable value; hidden from and never
 * named to a request that may be read as 3.1.19 (no revenue_share in its union); every
 * malformed option, filter and outcome refused with nothing stored.
 */
import t, { type Test } from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { buyer, harness } from './support/core.js';

const account = {
  brand: { domain: 'acmeoutdoor.example' },
  operator: 'pinnacle-agency.example',
  sandbox: true,
};
const pin = { adcp_major_version: 3, adcp_version: '3.2' };

// revenue_share_pricing.yaml:49-78, as the runner's seeding sends it.
const PRODUCT = {
  name: 'Pinnacle content commerce',
  description: 'Performance placements priced on settled attributed purchase value.',
  delivery_type: 'guaranteed',
  channels: ['affiliate'],
  format_ids: [{ id: 'display_300x250' }],
  reporting_capabilities: {
    available_metrics: ['conversions', 'conversion_value', 'commissionable_value', 'spend'],
    measurement_windows: [
      {
        window_id: 'commission_locked_60d',
        description: 'Attributed purchases after the 60-day return and cancellation window',
        duration_days: 60,
        expected_availability_days: 67,
        is_guarantee_basis: true,
      },
    ],
  },
};
const OPTION = {
  pricing_model: 'revenue_share',
  event_type: 'purchase',
  event_source_id: 'affiliate_attribution',
  commission_rate: 0.04,
  currency: 'USD',
  commission_basis_description:
    'Net merchandise value after discounts, excluding tax and shipping; returns removed before commission lock.',
};

async function seeded(t: Test) {
  const h = await harness(t, { profile: brandProfile('adcp'), settings: { testController: true } });
  const c = buyer(h);
  const control = (scenario: string, params: Record<string, unknown>) =>
    h.ok('sales', 'comply_test_controller', { scenario, account, params }, c);
  t.match(
    await control('seed_product', { product_id: 'affiliate_content_commerce', fixture: PRODUCT }),
    { success: true },
  );
  t.match(
    await control('seed_pricing_option', {
      product_id: 'affiliate_content_commerce',
      pricing_option_id: 'affiliate_purchase_4pct',
      fixture: OPTION,
    }),
    { success: true },
  );
  return { h, c, control };
}

const discovery = {
  buying_mode: 'wholesale',
  account,
  filters: { pricing_structures: ['contingent'] },
  fields: ['product_id', 'name', 'channels', 'pricing_options', 'reporting_capabilities'],
};

const buy = (extra: Record<string, unknown> = {}) => ({
  account,
  brand: { domain: 'acmeoutdoor.example' },
  start_time: 'asap',
  end_time: '2099-08-31T23:59:59Z',
  idempotency_key: `rs-${Math.random().toString(36).slice(2)}-0000000000`,
  packages: [
    {
      product_id: 'affiliate_content_commerce',
      pricing_option_id: 'affiliate_purchase_4pct',
      budget: 10000,
      measurement_terms: {
        billing_measurement: {
          vendor: { domain: 'pinnacle-measurement.example' },
          measurement_window: 'commission_locked_60d',
          finalization_deadline_hours: 168,
        },
      },
      ...extra,
    },
  ],
});

type Wire = Array<{ product_id: string; channels: string[]; pricing_options: unknown[] }>;

t.test('revenue_share_pricing.yaml end to end, pinned to 3.2', async (t) => {
  const { h, c, control } = await seeded(t);
  // :84-134: the account and its attribution source.
  const synced = await h.ok(
    'sales',
    'sync_accounts',
    {
      accounts: [{ brand: account.brand, operator: account.operator, billing: 'operator' }],
      idempotency_key: 'rs-accounts-0000000000000000',
      ...pin,
    },
    c,
  );
  t.ok((synced.accounts as Array<{ account_id?: string }>)[0]!.account_id);
  const sources = await h.ok(
    'sales',
    'sync_event_sources',
    {
      account,
      event_sources: [
        {
          event_source_id: 'affiliate_attribution',
          name: 'Affiliate attribution',
          event_types: ['purchase'],
          allowed_domains: ['acmeoutdoor.example'],
        },
      ],
      idempotency_key: 'rs-sources-00000000000000000',
      ...pin,
    },
    c,
  );
  t.match(sources.event_sources, [{ event_source_id: 'affiliate_attribution', action: 'created' }]);
  // :139-182: the affiliate product and only its revenue_share option.
  const found = await h.ok('sales', 'get_products', { ...discovery, ...pin }, c);
  const products = found.products as Wire;
  t.same(
    products.map((p) => p.product_id),
    ['affiliate_content_commerce'],
    'contingent: only the seeded product',
  );
  t.same(products[0]!.channels, ['affiliate'], 'its published channel');
  t.same(products[0]!.pricing_options, [
    { pricing_option_id: 'affiliate_purchase_4pct', ...OPTION },
  ]);
  const fixed = await h.ok(
    'sales',
    'get_products',
    { ...discovery, filters: { pricing_structures: ['fixed', 'auction'] }, ...pin },
    c,
  );
  t.notOk(
    (fixed.products as Wire).some((p) => p.product_id === 'affiliate_content_commerce'),
    'fixed / auction: not the revenue-share product',
  );
  const legacy = await h.ok(
    'sales',
    'get_products',
    { ...discovery, filters: { is_fixed_price: false }, ...pin },
    c,
  );
  t.notOk(
    (legacy.products as Wire).some((p) => p.product_id === 'affiliate_content_commerce'),
    'is_fixed_price matches no contingent option',
  );

  // :187-228: bought without a bid; the budget caps the commission.
  const created = await h.ok('sales', 'create_media_buy', { ...buy(), ...pin }, c);
  const mediaBuyId = created.media_buy_id as string;
  t.ok(mediaBuyId, 'a media buy');
  const pkg = (created.packages as Array<Record<string, unknown>>)[0]!;
  t.notOk('bid_price' in pkg, 'no bid price');
  t.equal(pkg.pricing_model, 'revenue_share');

  // Time passes: a revenue share accrues nothing on its own.
  h.clock.advance(3 * 86400_000);
  // :233-300: the settled commission, final in its window.
  t.match(
    await control('simulate_delivery', {
      media_buy_id: mediaBuyId,
      conversions: 320,
      conversion_value: 125000,
      commissionable_value: 112500,
      reported_spend: { amount: 4500, currency: 'USD' },
      is_final: true,
      finalized_at: '2099-10-08T18:00:00Z',
      measurement_window: 'commission_locked_60d',
    }),
    { success: true },
  );
  const report = { account, media_buy_ids: [mediaBuyId] };
  const delivery = await h.ok('sales', 'get_media_buy_delivery', { ...report, ...pin }, c);
  const row = (delivery.media_buy_deliveries as Array<Record<string, unknown>>)[0]!;
  t.match(row.totals, { spend: 4500, commissionable_value: 112500 }, 'the totals too');
  t.match((row.by_package as unknown[])[0], {
    pricing_model: 'revenue_share',
    rate: 0.04,
    commissionable_value: 112500,
    conversions: 320,
    conversion_value: 125000,
    spend: 4500,
    is_final: true,
    measurement_window: 'commission_locked_60d',
  });

  // :302-342: the formula-checked usage, accepted once; the budget caps what follows.
  const usage = (extra: Record<string, unknown> = {}) => ({
    account,
    idempotency_key: `usage-${Math.random().toString(36).slice(2)}-0000000000`,
    reporting_period: { start: '2099-07-01T00:00:00Z', end: '2099-08-31T23:59:59Z' },
    usage: [
      {
        account,
        media_buy_id: mediaBuyId,
        pricing_option_id: 'affiliate_purchase_4pct',
        conversions: 320,
        conversion_value: 125000,
        commissionable_value: 112500,
        vendor_cost: 4500,
        currency: 'USD',
        final: true,
        finalized_at: '2099-10-08T18:00:00Z',
        measurement_window: 'commission_locked_60d',
        ...extra,
      },
    ],
  });
  t.same(await h.ok('sales', 'report_usage', { ...usage(), ...pin }, c), {
    status: 'completed',
    accepted: 1,
    adcp_version: '3.2',
  });
  const refused = async (extra: Record<string, unknown>, code: string, field: string) => {
    const r = await h.ok('sales', 'report_usage', usage(extra), c);
    t.equal(r.accepted, 0, `${field}: not accepted`);
    t.match(r.errors, [{ code, field: `usage[0].${field}` }], `${code} at ${field}`);
  };
  await refused({ vendor_cost: 4600 }, 'INVALID_USAGE_DATA', 'vendor_cost');
  await refused({ commissionable_value: undefined }, 'INVALID_USAGE_DATA', 'commissionable_value');
  await refused({ currency: 'EUR' }, 'INVALID_USAGE_DATA', 'currency');
  await refused({ pricing_option_id: 'other' }, 'INVALID_PRICING_OPTION', 'pricing_option_id');
  await refused({ media_buy_id: 'mb_nope' }, 'MEDIA_BUY_NOT_FOUND', 'media_buy_id');
  await refused(
    { account: { brand: { domain: 'else.example' }, operator: 'x.example' } },
    'ACCOUNT_NOT_FOUND',
    'account',
  );
  // 4,500 of the 10,000 budget is billed: 137,500 more at 4% (5,500) reaches it exactly,
  // anything beyond exceeds it.
  await refused(
    { commissionable_value: 137525, vendor_cost: 5501 },
    'BUDGET_EXCEEDED',
    'vendor_cost',
  );
  const full = await h.ok(
    'sales',
    'report_usage',
    usage({ commissionable_value: 137500, vendor_cost: 5500 }),
    c,
  );
  t.equal(full.accepted, 1, 'up to the budget');

  // Unpinned (every release must accept the answer) and 3.1: never named revenue_share.
  for (const version of [{}, { adcp_major_version: 3 }, { adcp_version: '3.1' }]) {
    const label = JSON.stringify(version);
    const listed = await h.ok('sales', 'get_products', { ...discovery, ...version }, c);
    t.same(listed.products, [], `${label}: no contingent product below a 3.2 pin`);
    const all = await h.ok('sales', 'get_products', { buying_mode: 'wholesale', ...version }, c);
    t.notOk(
      (all.products as Wire).some((p) => p.product_id === 'affiliate_content_commerce'),
      `${label}: not in the wholesale feed either`,
    );
    // by_package requires a pricing model no release below 3.2 has for it: the row leaves
    // the package out, its totals keep the settled spend.
    const d = await h.ok('sales', 'get_media_buy_delivery', { ...report, ...version }, c);
    const r = (d.media_buy_deliveries as Array<Record<string, unknown>>)[0]!;
    t.same(r.by_package, [], `${label}: no revenue-share package row`);
    t.match(r.totals, { spend: 4500, conversions: 320, conversion_value: 125000 }, label);
    t.notOk('commissionable_value' in (r.totals as object), `${label}: no 3.2 member`);
    const e = await h.err('sales', 'create_media_buy', { ...buy(), ...version }, c);
    t.equal(e.code, 'VALIDATION_ERROR', `${label}: the option is not offered to buy`);
    t.equal(e.field, 'packages[0].pricing_option_id');
  }
});

t.test('malformed revenue-share options are refused and nothing is stored', async (t) => {
  const { h, c, control } = await seeded(t);
  const bad: Array<[string, Record<string, unknown>]> = [
    ['no commission_rate', { commission_rate: undefined }],
    ['a zero rate', { commission_rate: 0 }],
    ['a rate over 1', { commission_rate: 4 }],
    ['a string rate', { commission_rate: '0.04' }],
    ['an unknown event type', { event_type: 'sale' }],
    ['custom without its name', { event_type: 'custom' }],
    ['a name without custom', { custom_event_name: 'x' }],
    ['no event source', { event_source_id: undefined }],
    ['an empty event source', { event_source_id: '' }],
    ['a lowercase currency', { currency: 'usd' }],
    ['no basis', { commission_basis_description: undefined }],
    ['a basis too long', { commission_basis_description: 'x'.repeat(1001) }],
    ['a fixed price beside it', { fixed_price: 5 }],
    ['a floor beside it', { floor_price: 1 }],
  ];
  for (const [label, change] of bad) {
    const r = await h.ok(
      'sales',
      'comply_test_controller',
      {
        scenario: 'seed_pricing_option',
        account,
        params: {
          product_id: 'affiliate_content_commerce',
          pricing_option_id: 'bad_option',
          fixture: { ...OPTION, ...change },
        },
      },
      c,
    );
    t.match(r, { success: false, error: 'INVALID_PARAMS' }, label);
  }
  t.match(
    await control('seed_pricing_option', {
      product_id: 'affiliate_content_commerce',
      pricing_option_id: 'custom_share',
      fixture: { ...OPTION, event_type: 'custom', custom_event_name: 'booking' },
    }),
    { success: true },
    'a custom event with its name',
  );
  const listed = await h.ok('sales', 'get_products', { ...discovery, ...pin }, c);
  t.same(
    (listed.products as Wire)[0]!.pricing_options.map(
      (o) => (o as { pricing_option_id: string }).pricing_option_id,
    ),
    ['affiliate_purchase_4pct', 'custom_share'],
    'only the well-formed options are stored',
  );
  for (const filters of [
    { pricing_structures: [] },
    { pricing_structures: ['contingent', 'contingent'] },
    { pricing_structures: ['revenue_share'] },
    { pricing_structures: 'contingent' },
  ]) {
    const e = await h.err('sales', 'get_products', { ...discovery, filters, ...pin }, c);
    t.equal(e.code, 'VALIDATION_ERROR', JSON.stringify(filters));
    t.match(e.field, /^filters\.pricing_structures/);
  }
});

t.test('a revenue-share package: no bid, the product window, outcomes checked', async (t) => {
  const { h, c } = await seeded(t);
  const bid = await h.err('sales', 'create_media_buy', { ...buy({ bid_price: 5 }), ...pin }, c);
  t.equal(bid.code, 'VALIDATION_ERROR');
  t.equal(bid.field, 'packages[0].bid_price');
  const window = buy();
  (window.packages[0]!.measurement_terms.billing_measurement as Record<string, unknown>)[
    'measurement_window'
  ] = 'commission_locked_90d';
  const terms = await h.err('sales', 'create_media_buy', { ...window, ...pin }, c);
  t.equal(terms.code, 'TERMS_REJECTED', 'a window the product does not declare');
  t.match(terms.message, /commission_locked_60d/, 'names the windows it reports');
  const created = await h.ok('sales', 'create_media_buy', { ...buy(), ...pin }, c);
  for (const [label, params] of [
    ['a negative commissionable value', { commissionable_value: -1 }],
    ['a string conversion value', { conversion_value: '125000' }],
    ['fractional conversions', { conversions: 1.5 }],
  ] as const) {
    const r = await h.ok(
      'sales',
      'comply_test_controller',
      {
        scenario: 'simulate_delivery',
        account,
        params: { media_buy_id: created.media_buy_id, ...params },
      },
      c,
    );
    t.match(r, { success: false, error: 'INVALID_PARAMS' }, label);
  }
  const d = await h.ok(
    'sales',
    'get_media_buy_delivery',
    { account, media_buy_ids: [created.media_buy_id], ...pin },
    c,
  );
  const p = (
    (d.media_buy_deliveries as Array<Record<string, unknown>>)[0]!.by_package as Array<
      Record<string, unknown>
    >
  )[0]!;
  t.notOk('commissionable_value' in p, 'nothing stated, nothing reported');
  t.equal(p.spend, 0, 'no spend before a settlement');
});

t.test(
  'a seeded product answers published channels only (affiliate kept, ours mapped)',
  async (t) => {
    const { h, c, control } = await seeded(t);
    await control('seed_product', {
      product_id: 'mixed_channels',
      fixture: {
        ...PRODUCT,
        // commissionable_value is a 3.2 metric: a product every release may list has none.
        reporting_capabilities: undefined,
        channels: ['video', 'affiliate', 'hologram', 'olv'],
        pricing_options: [
          { pricing_option_id: 'mixed_cpm', pricing_model: 'cpm', currency: 'USD', fixed_price: 9 },
        ],
      },
    });
    const all = await h.ok('sales', 'get_products', { buying_mode: 'wholesale', account }, c);
    const mixed = (all.products as Wire).find((p) => p.product_id === 'mixed_channels')!;
    t.same(mixed.channels, ['olv', 'affiliate'], 'video is olv; an unknown word is dropped');
    const byChannel = await h.ok(
      'sales',
      'get_products',
      { buying_mode: 'wholesale', account, filters: { channels: ['olv'] } },
      c,
    );
    t.ok(
      (byChannel.products as Wire).some((p) => p.product_id === 'mixed_channels'),
      'found by its published channel',
    );
  },
);
