/**
 * What the storyboards buy from a brief's ranking (get_products `products[i]`, then
 * create_media_buy): the catalog's fixed-CPM display product makes a fixed-price display
 * brief buyable at a small budget (3.1.19/3.2.0-beta.5 invalid_transitions.yaml:103-153)
 * while the unfiltered 3.0.6 briefs still get a 300x250 display product that takes their
 * budgets (creative_fate_after_cancellation.yaml:76-122, pending_creatives_to_start.yaml:58-
 * 111); seeded fixtures rank in a stable order however often they are re-seeded
 * (delivery_reporting.yaml:44-73, :106-131, :274).
 */
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { buyer, harness, START } from './support/core.js';

const account = { brand: { domain: 'acmeoutdoor.example' }, operator: 'pinnacle-agency.example' };
const end = new Date(START + 30 * 86400_000).toISOString();
type Wire = {
  product_id: string;
  format_ids: Array<{ id: string }>;
  pricing_options: Array<{ pricing_option_id: string; fixed_price?: number }>;
};

/** The sales agent as the unseeded storyboard runs see it: no human approval. */
async function adcp(t: Parameters<typeof harness>[0], testController = false) {
  const h = await harness(t, {
    profile: brandProfile('adcp'),
    settings: { testController, approval: 'never' },
  });
  const c = buyer(h);
  const products = async (params: Record<string, unknown>) =>
    (await h.ok('sales', 'get_products', { buying_mode: 'brief', account, ...params }, c))
      .products as Wire[];
  let n = 0;
  const buy = (p: Wire, budget: number, extra: object = {}, envelope: object = {}) =>
    h.ok(
      'sales',
      'create_media_buy',
      {
        brand: { domain: 'acmeoutdoor.example' },
        account,
        idempotency_key: `ranking-buy-${String(++n).padStart(4, '0')}`,
        start_time: 'asap',
        end_time: end,
        packages: [
          {
            product_id: p.product_id,
            pricing_option_id: p.pricing_options[0]!.pricing_option_id,
            budget,
            ...extra,
          },
        ],
        ...envelope,
      },
      c,
    );
  return { h, c, products, buy };
}

t.test('invalid_transitions.yaml:103-153: a fixed-price display brief at 5000', async (t) => {
  const { products, buy } = await adcp(t);
  const got = await products({
    brief: 'Display inventory on outdoor lifestyle content. Q3 flight.',
    filters: { is_fixed_price: true },
  });
  const first = got[0]!;
  t.equal(first.product_id, 'display_outdoor_enthusiast');
  t.type(first.pricing_options[0]!.fixed_price, 'number', ':129 the option is fixed-price');
  t.ok(
    got.indexOf(got.find((p) => p.product_id === 'display_homepage_takeover')!) > 0,
    'the 25,000 takeover is no longer first',
  );
  const created = await buy(first, 5000);
  t.ok(created.media_buy_id, ':150 the buy is created');
});

t.test('the 3.0.6 unfiltered display briefs still buy a 300x250 display product', async (t) => {
  const { products, buy } = await adcp(t);
  for (const [brief, budget] of [
    ['Display inventory on outdoor lifestyle content for creative-reuse testing.', 5000],
    ['Display inventory on outdoor lifestyle content. Q3 flight.', 10000],
  ] as const) {
    const first = (await products({ brief }))[0]!;
    t.equal(first.format_ids[0]!.id, 'display_300x250', `${brief}: the 300x250 creative fits`);
    // As the 3.0.6 runner sends it (the integer pin alone: served as 3.0).
    const created = await buy(first, budget, {}, { adcp_major_version: 3 });
    t.ok(created.media_buy_id, `${budget}: created`);
    t.equal(created.status, 'pending_creatives', `${budget}: awaiting creatives`);
  }
  const plain = await products({ brief: 'display banners' });
  t.equal(plain[0]!.product_id, 'display_run_of_network', 'ties keep catalog order');
});

t.test('delivery_reporting.yaml: seeded fixtures rank in a stable order', async (t) => {
  const { h, c, products, buy } = await adcp(t, true);
  const seed = (product_id: string, channel: string, format: string, option: object) =>
    h.ok(
      'sales',
      'comply_test_controller',
      {
        scenario: 'seed_product',
        account: { ...account, sandbox: true },
        params: {
          product_id,
          fixture: {
            delivery_type: 'guaranteed',
            channels: [channel],
            format_ids: [{ id: format }],
            pricing_options: [{ currency: 'USD', ...option }],
          },
        },
      },
      c,
    );
  const cpm = (price: number) => ({
    pricing_option_id: 'cpm_standard',
    pricing_model: 'cpm',
    fixed_price: price,
  });
  await seed('outdoor_display_q2', 'display', 'display_300x250', cpm(8));
  await seed('outdoor_video_q2', 'video', 'video_15s', cpm(12));
  await seed('video_viewability_q2', 'video', 'video_15s', {
    pricing_option_id: 'vcpm_standard',
    pricing_model: 'vcpm',
    fixed_price: 14,
  });
  const brief =
    'Display and video inventory on outdoor lifestyle content. Q2 flight, $25K budget. Adults 25-54, US.';
  const ids = async () => (await products({ brief })).map((p) => p.product_id);
  t.same((await ids()).slice(0, 3), [
    'outdoor_display_q2',
    'outdoor_video_q2',
    'video_viewability_q2',
  ]);
  const third = (await products({ brief }))[2]!;
  const viewability = await buy(third, 20000, {
    optimization_goals: [
      {
        kind: 'metric',
        metric: 'viewed_seconds',
        target: { kind: 'threshold_rate', value: 3 },
        priority: 1,
      },
    ],
  });
  t.ok(viewability.media_buy_id, ':274 products[2] is bought');

  // Another storyboard's fixture for the same sandbox buyer, and a re-seed (a new row
  // version): equal scores are ordered by id, never by where the row landed.
  await seed('lifestyle_display_q2', 'display', 'display_300x250', {
    pricing_option_id: 'cpm_standard',
    pricing_model: 'cpm',
    floor_price: 8,
  });
  const before = await ids();
  await seed('outdoor_display_q2', 'display', 'display_300x250', cpm(8));
  await seed('lifestyle_display_q2', 'display', 'display_300x250', {
    pricing_option_id: 'cpm_standard',
    pricing_model: 'cpm',
    floor_price: 8,
  });
  t.same(await ids(), before, 'the same order after re-seeding');
  t.same(before.slice(0, 3), ['lifestyle_display_q2', 'outdoor_display_q2', 'outdoor_video_q2']);
  const shifted = (await products({ brief }))[2]!;
  t.ok((await buy(shifted, 20000)).media_buy_id, 'the shifted products[2] is buyable too');
});
