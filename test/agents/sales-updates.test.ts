/**
 * Sales agent details: update_media_buy variants, start_time forms, inline creative
 * assignment, delete_missing, list_creatives paging, feedback, delivery ranges.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { buyer, harness, START } from './support/core.js';
import { displayCreative as display } from './support/creatives.js';

/** A fresh idempotency_key (the published update_media_buy requires one). */
const uk = () => `upd-${Math.random().toString(36).slice(2, 14)}`;

const HOUR = 3600_000;
const buy = (ref: string, extra: Record<string, unknown> = {}) => ({
  buyer_ref: ref,
  brand_manifest: { name: 'Acme', colors: { primary: '#000' } },
  packages: [
    {
      buyer_ref: 'a',
      product_id: 'display_run_of_network',
      pricing_option_id: 'ron_display_auction',
      budget: 1000,
      bid_price: 4,
    },
    {
      buyer_ref: 'b',
      product_id: 'display_homepage_takeover',
      pricing_option_id: 'homepage_flat',
      budget: 25000,
    },
  ],
  start_time: { type: 'asap' },
  end_time: new Date(START + 10 * HOUR).toISOString(),
  ...extra,
});

t.test('update_media_buy variants', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  await h.ok('sales', 'sync_creatives', { creatives: [display('c1'), display('c2')] }, c);
  const created = await h.ok(
    'sales',
    'create_media_buy',
    buy('u1', { reporting_webhook: { url: 'https://b.example/r', reporting_frequency: 'daily' } }),
    c,
  );
  const [pa, pb] = created.packages as Array<{
    package_id: string;
    pricing_model: string;
    budget: number;
  }>;
  t.equal(pb!.pricing_model, 'flat_rate', 'the published name of a flat fee');
  h.notifications.clear();

  const upd = await h.ok(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: created.media_buy_id,
      updates: {
        end_time: new Date(START + 20 * HOUR).toISOString(),
        targeting: { geo_countries: ['US'] },
        packages: [
          { package_id: pa!.package_id, budget: 1500, paused: true, creative_ids: ['c1', 'c2'] },
        ],
      },
      reporting_webhook: { url: 'https://b.example/r2', reporting_frequency: 'hourly' },
    },
    c,
  );
  t.same(upd.changes_applied, ['end_time', 'packages[0]', 'targeting', 'reporting_webhook']);
  const pkgs = upd.packages as Array<{
    package_id: string;
    budget: number;
    paused: boolean;
    creative_ids: string[];
    targeting_overlay: unknown;
  }>;
  t.same([pkgs[0]!.budget, pkgs[0]!.paused, pkgs[0]!.creative_ids], [1500, true, ['c1', 'c2']]);
  t.same(pkgs[1]!.targeting_overlay, { geo_countries: ['US'] });
  const rotated = h.notifications.of('mediaBuyChannelsConfigured');
  t.equal(rotated.length, 1);
  t.match(rotated[0]!.reportingWebhook, { url: 'https://b.example/r2' });
  t.equal(rotated[0]!.pushNotificationConfig, undefined);
  t.equal(rotated[0]!.flightEnd, new Date(START + 20 * HOUR).toISOString(), 'the new flight end');
  const later = new Date(START + 21 * HOUR).toISOString();
  await h.ok(
    'sales',
    'update_media_buy',
    { idempotency_key: uk(), media_buy_id: created.media_buy_id, updates: { end_time: later } },
    c,
  );
  t.match(
    h.notifications.of('mediaBuyChannelsConfigured')[1],
    { flightEnd: later, reportingWebhook: undefined, pushNotificationConfig: undefined },
    'an end_time alone moves the schedule end',
  );
  const removed = await h.ok(
    'sales',
    'update_media_buy',
    { idempotency_key: uk(), media_buy_id: created.media_buy_id, reporting_webhook: null },
    c,
  );
  t.same(removed.changes_applied, ['reporting_webhook']);
  t.equal(
    h.notifications.of('mediaBuyChannelsConfigured')[2]!.reportingWebhook,
    null,
    'null removes the channel',
  );
  await h.ok(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: created.media_buy_id,
      updates: { end_time: new Date(START + 20 * HOUR).toISOString() },
    },
    c,
  );
  t.equal(
    h.notifications.of('mediaBuyChannelsConfigured').length,
    3,
    'no channels left: nothing to tell the sender',
  );
  const view = await h.ok('sales', 'get_media_buys', { buyer_refs: ['u1'] }, c);
  t.notOk('reporting_webhook' in (view.media_buys as Array<Record<string, unknown>>)[0]!);
  t.equal(
    (view.media_buys as Array<{ end_time: string }>)[0]!.end_time,
    new Date(START + 20 * HOUR).toISOString(),
  );

  // Paused package: no delivery; flat fee: impressions at the notional CPM.
  h.clock.advance(2 * HOUR);
  const d = await h.ok(
    'sales',
    'get_media_buy_delivery',
    { media_buy_id: created.media_buy_id },
    c,
  );
  const byPkg = d.by_package as Array<{ package_id: string; impressions: number; spend: number }>;
  t.equal(byPkg.find((p) => p.package_id === pa!.package_id)!.spend, 0);
  const flat = byPkg.find((p) => p.package_id === pb!.package_id)!;
  t.ok(Math.abs(flat.spend - (25000 * 2) / 20) < 0.02, `flat spend ${flat.spend}`);
  t.ok(Math.abs(flat.impressions - (flat.spend / 8) * 1000) <= 1);

  const badEnd = await h.err(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: created.media_buy_id,
      updates: { end_time: new Date(START).toISOString() },
    },
    c,
  );
  t.equal(badEnd.field, 'updates.end_time');
  const badReport = await h.err(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: created.media_buy_id,
      reporting_webhook: { url: 'https://b.example', reporting_frequency: 'yearly' },
    },
    c,
  );
  t.equal(badReport.code, 'INVALID_REQUEST');
  const badPush = await h.err(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: created.media_buy_id,
      push_notification_config: { url: 'not a url' },
    },
    c,
  );
  t.equal(badPush.field, 'push_notification_config.url');
  // A creative not synced yet is kept pending, not refused (sales-pending-creatives.test.ts).
  const pendingCreative = await h.ok(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: created.media_buy_id,
      updates: { packages: [{ package_id: pa!.package_id, creative_ids: ['nope'] }] },
    },
    c,
  );
  t.same(
    (pendingCreative.packages as Array<{ package_id: string; creative_ids: string[] }>).find(
      (p) => p.package_id === pa!.package_id,
    )!.creative_ids,
    [],
  );
});

t.test('start_time forms, inline creatives, filters', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  await h.ok('sales', 'sync_creatives', { creatives: [display('c1')] }, c);
  const scheduled = await h.ok(
    'sales',
    'create_media_buy',
    buy('s1', {
      start_time: { type: 'scheduled', datetime: new Date(START + HOUR).toISOString() },
    }),
    c,
  );
  const dated = await h.ok(
    'sales',
    'create_media_buy',
    buy('s2', { start_time: { type: 'date', date: '2026-03-02' }, end_time: '2026-03-04' }),
    c,
  );
  const asapString = await h.ok(
    'sales',
    'create_media_buy',
    buy('s3', {
      start_time: 'asap',
      packages: [
        {
          buyer_ref: 'a',
          product_id: 'display_run_of_network',
          pricing_option_id: 'ron_display_auction',
          budget: 1000,
          bid_price: 3,
          creatives: [{ creative_id: 'c1' }],
        },
      ],
    }),
    c,
  );
  t.same((asapString.packages as Array<{ creative_ids: string[] }>)[0]!.creative_ids, ['c1']);
  h.clock.advance(HOUR / 2);
  const all = await h.ok(
    'sales',
    'get_media_buy_delivery',
    { media_buy_ids: [scheduled.media_buy_id, dated.media_buy_id] },
    c,
  );
  const rows = all.media_buy_deliveries as Array<{
    media_buy_id: string;
    totals: { spend: number };
  }>;
  t.equal(
    rows.find((r) => r.media_buy_id === scheduled.media_buy_id)!.totals.spend,
    0,
    'scheduled start not reached',
  );
  t.ok(rows.find((r) => r.media_buy_id === dated.media_buy_id)!.totals.spend > 0);
  t.equal(all.delivery, undefined, 'several buys: no single-buy members');
  const everything = await h.ok('sales', 'get_media_buy_delivery', {}, c);
  t.equal((everything.aggregated_totals as { media_buy_count: number }).media_buy_count, 3);
  const ranged = await h.ok(
    'sales',
    'get_media_buy_delivery',
    { media_buy_id: dated.media_buy_id, date_range: { start: '2026-03-01', end: '2026-03-01' } },
    c,
  );
  t.equal((ranged.delivery as { spend: number }).spend, 0, 'nothing delivered before the range');
  const weekly = await h.ok(
    'sales',
    'get_media_buy_delivery',
    { media_buy_id: dated.media_buy_id, granularity: 'weekly' },
    c,
  );
  t.equal((weekly.timeseries as unknown[]).length, 1);
  const filtered = await h.ok('sales', 'get_media_buys', { status_filter: 'active', limit: 2 }, c);
  t.equal((filtered.media_buys as unknown[]).length, 2);
  const none = await h.ok('sales', 'get_media_buys', { status_filter: ['paused'] }, c);
  t.same(none.media_buys, []);
  const fb = await h.ok(
    'sales',
    'provide_performance_feedback',
    {
      idempotency_key: randomUUID(),
      media_buy_id: dated.media_buy_id,
      performance_index: 1.2,
      metric_type: 'conversion_rate',
    },
    c,
  );
  t.match(fb, { success: true, feedback_id: /^fb_/ });
  const fbBad = await h.err(
    'sales',
    'provide_performance_feedback',
    {
      media_buy_id: dated.media_buy_id,
      performance_index: 1,
      package_id: 'pkg_nope',
      idempotency_key: randomUUID(),
    },
    c,
  );
  t.equal(fbBad.code, 'PACKAGE_NOT_FOUND');
});

t.test('no windowed granularity declared: daily only', async (t) => {
  const h = await harness(t, { settings: { approval: 'never', windowedPullGranularities: [] } });
  const c = buyer(h);
  const created = await h.ok('sales', 'create_media_buy', buy('w1'), c);
  t.equal(
    (
      await h.err(
        'sales',
        'get_media_buy_delivery',
        { media_buy_id: created.media_buy_id, granularity: 'hourly' },
        c,
      )
    ).code,
    'UNSUPPORTED_GRANULARITY',
  );
  t.equal(
    (
      await h.err(
        'sales',
        'get_media_buy_delivery',
        { media_buy_id: created.media_buy_id, time_granularity: 'hourly' },
        c,
      )
    ).code,
    'UNSUPPORTED_GRANULARITY',
  );
  t.ok(
    (
      await h.ok(
        'sales',
        'get_media_buy_delivery',
        { media_buy_id: created.media_buy_id, granularity: 'daily' },
        c,
      )
    ).timeseries,
  );
  const products = await h.ok('sales', 'get_products', {}, c);
  t.same(
    (
      products.products as Array<{
        reporting_capabilities: { windowed_pull_granularities: string[] };
      }>
    )[0]!.reporting_capabilities.windowed_pull_granularities,
    [],
  );
});

t.test('creatives: delete_missing and paging', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  await h.ok('sales', 'sync_creatives', { creatives: ['c1', 'c2', 'c3'].map(display) }, c);
  const created = await h.ok('sales', 'create_media_buy', buy('d1'), c);
  const pkg = (created.packages as Array<{ package_id: string }>)[0]!.package_id;
  await h.ok(
    'sales',
    'sync_creatives',
    { creatives: [display('c3')], assignments: { c3: [pkg] } },
    c,
  );
  const page1 = await h.ok('sales', 'list_creatives', { limit: 2 }, c);
  t.same(
    (page1.creatives as Array<{ creative_id: string }>).map((x) => x.creative_id),
    ['c1', 'c2'],
  );
  const cursor = (page1.pagination as { cursor: string }).cursor;
  t.same(page1.pagination, { has_more: true, cursor, total_count: 3 }, 'published cursor paging');
  const page2 = await h.ok(
    'sales',
    'list_creatives',
    { pagination: { max_results: 2, cursor } },
    c,
  );
  t.same(page2.pagination, { has_more: false, total_count: 3 }, 'the last page has no cursor');
  const older = await h.ok('sales', 'list_creatives', { limit: 2, offset: 2 }, c);
  t.same(older.creatives, page2.creatives, 'the older offset paging lands on the same page');
  const first = (page1.creatives as Array<Record<string, unknown>>)[0]!;
  t.match(first.created_date, /^\d{4}-\d{2}-\d{2}T/, 'created_date (published)');
  t.equal(first.created_at, first.created_date, 'created_at kept for older clients');
  t.equal(first.status, 'approved');
  const badCursor = await h.err(
    'sales',
    'list_creatives',
    { pagination: { cursor: 'not-ours' } },
    c,
  );
  t.equal(badCursor.field, 'pagination.cursor');
  t.same(
    (page2.creatives as Array<{ creative_id: string; assigned_package_ids: string[] }>).map((x) => [
      x.creative_id,
      x.assigned_package_ids,
    ]),
    [['c3', [pkg]]],
  );
  const sync = await h.ok(
    'sales',
    'sync_creatives',
    { creatives: [display('c3')], delete_missing: true },
    c,
  );
  t.same(
    (sync.creatives as Array<{ creative_id: string; action: string }>)
      .map((x) => [x.creative_id, x.action])
      .sort(),
    [
      ['c1', 'deleted'],
      ['c2', 'deleted'],
      ['c3', 'unchanged'],
    ],
  );
  const active = await h.ok(
    'sales',
    'list_creatives',
    { filters: { status: ['active'], format_types: ['display'] } },
    c,
  );
  t.equal((active.query_summary as { total_matching: number }).total_matching, 1);
  const approved = await h.ok(
    'sales',
    'list_creatives',
    { filters: { statuses: ['approved'], format_types: ['display'] } },
    c,
  );
  t.same(approved.creatives, active.creatives, 'published statuses filter, same creatives');
  const archived = await h.ok('sales', 'list_creatives', { filters: { status: ['archived'] } }, c);
  t.equal((archived.creatives as unknown[]).length, 2);
  const restored = await h.ok('sales', 'sync_creatives', { creatives: [display('c1')] }, c);
  t.equal(
    (restored.creatives as Array<{ action: string }>)[0]!.action,
    'updated',
    'an archived creative comes back',
  );
  t.equal(
    (await h.err('sales', 'sync_creatives', { creatives: [display('c1'), display('c1')] }, c))
      .field,
    'creatives[1].creative_id',
  );
  t.equal(
    (
      await h.err(
        'sales',
        'sync_creatives',
        { creatives: [display('c1')], assignments: { ghost: [pkg] } },
        c,
      )
    ).code,
    'CREATIVE_NOT_FOUND',
  );
});

t.test('creatives: published assignments array (one creative to one package each)', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  await h.ok('sales', 'sync_creatives', { creatives: ['c1', 'c2'].map(display) }, c);
  const created = await h.ok('sales', 'create_media_buy', buy('a1'), c);
  const mediaBuyId = created.media_buy_id as string;
  const pkg = (created.packages as Array<{ package_id: string }>)[0]!.package_id;
  const r = await h.ok(
    'sales',
    'sync_creatives',
    {
      idempotency_key: randomUUID(),
      creatives: [display('c2')],
      assignments: [
        { creative_id: 'c1', package_id: pkg },
        { creative_id: 'c2', package_id: pkg, weight: 50, placement_ids: ['top'] },
        { creative_id: 'c1', package_id: pkg },
      ],
    },
    c,
  );
  t.same(
    r.assignments,
    [
      { creative_id: 'c1', package_ids: [pkg] },
      { creative_id: 'c2', package_ids: [pkg] },
    ],
    'grouped per creative, a repeated pair once',
  );
  const got = await h.ok('sales', 'get_media_buys', { media_buy_ids: [mediaBuyId] }, c);
  const packages = (got.media_buys as Array<{ packages: Array<Record<string, unknown>> }>)[0]!
    .packages;
  t.same(
    (packages[0]!.creative_assignments as Array<{ creative_id: string }>)
      .map((a) => a.creative_id)
      .sort(),
    ['c1', 'c2'],
    'both assignments stored',
  );

  // Malformed: each refuses the whole request with the entry's field.
  const refused = async (assignments: unknown, code: string, field: string, why: string) => {
    const e = await h.err(
      'sales',
      'sync_creatives',
      { creatives: [display('c1')], assignments, idempotency_key: randomUUID() },
      c,
    );
    t.equal(e.code, code, `${why}: ${e.message}`);
    t.equal(e.field, field, why);
  };
  await refused(
    [{ creative_id: 'c1', package_id: 'pkg_nope' }],
    'PACKAGE_NOT_FOUND',
    'assignments[0].package_id',
    'unknown package',
  );
  await refused(
    [
      { creative_id: 'c1', package_id: pkg },
      { creative_id: 'ghost', package_id: pkg },
    ],
    'CREATIVE_NOT_FOUND',
    'assignments[1].creative_id',
    'unknown creative',
  );
  const invalid = async (assignments: unknown, why: string) => {
    const e = await h.err(
      'sales',
      'sync_creatives',
      { creatives: [display('c1')], assignments, idempotency_key: randomUUID() },
      c,
    );
    t.equal(e.status, 400, `${why}: ${e.code} ${e.message}`);
    t.match(e.field ?? '', /^assignments/, why);
  };
  await invalid([], 'empty array');
  await invalid([{ creative_id: 'c1' }], 'package_id missing');
  await invalid([{ creative_id: 'c1', package_id: pkg, weight: 101 }], 'weight over 100');
  await invalid([{ creative_id: 'c1', package_id: pkg, placement_ids: [] }], 'empty placement_ids');
  await invalid('c1', 'neither form');
});

t.test('3.2 create_media_buy members: brand domain, account, total_budget', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  await h.ok('sales', 'sync_accounts', { accounts: [{ account_id: 'acct-32', name: 'Acme' }] }, c);
  const base = buy('v32');
  delete (base as Record<string, unknown>).brand_manifest;
  const r = await h.ok(
    'sales',
    'create_media_buy',
    {
      ...base,
      brand: { domain: 'acme.example' },
      account: { account_id: 'acct-32' },
      total_budget: { amount: 26000, currency: 'USD' },
      // (proposal_id and packages are mutually exclusive: test/agents/proposal-buy.test.ts)
      idempotency_key: '6f1f3c1e-0c9a-4c55-9d8e-3f1b2a7c9d10',
      start_time: 'asap',
    },
    c,
  );
  t.equal(r.status, 'completed');
  const view = await h.ok('sales', 'get_media_buys', { media_buy_ids: [r.media_buy_id] }, c);
  t.same((view.media_buys as Array<{ brand_manifest: unknown }>)[0]!.brand_manifest, {
    url: 'https://acme.example',
  });
  t.match(await h.err('sales', 'create_media_buy', { ...base, buyer_ref: 'x1' }, c), {
    code: 'VALIDATION_ERROR',
    field: 'brand',
  });
  t.match(
    await h.err(
      'sales',
      'create_media_buy',
      {
        ...base,
        buyer_ref: 'x2',
        brand: { domain: 'acme.example' },
        account: { account_id: 'nope' },
      },
      c,
    ),
    { code: 'ACCOUNT_NOT_FOUND', field: 'account.account_id' },
  );
  t.match(
    await h.err(
      'sales',
      'create_media_buy',
      {
        ...base,
        buyer_ref: 'x3',
        brand: { domain: 'acme.example' },
        total_budget: { amount: 1, currency: 'USD' },
      },
      c,
    ),
    { code: 'VALIDATION_ERROR', field: 'total_budget.amount' },
  );
  t.match(
    await h.err(
      'sales',
      'create_media_buy',
      {
        ...base,
        buyer_ref: 'x4',
        brand: { domain: 'acme.example' },
        total_budget: { amount: 26000, currency: 'EUR' },
      },
      c,
    ),
    { code: 'VALIDATION_ERROR', field: 'total_budget.currency' },
  );
  t.match(
    await h.err(
      'sales',
      'create_media_buy',
      { ...base, buyer_ref: 'x5', brand: { domain: 'not a domain' } },
      c,
    ),
    { code: 'VALIDATION_ERROR', field: 'brand.domain' },
  );
});
