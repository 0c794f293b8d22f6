/**
 * The sales agent as a buyer of the published protocol sees it: the published request
 * forms (no buyer_ref, brand/account, top-level update members, start_date/end_date,
 * cursor pagination), the published response members, and one validation error naming
 * every offending field. Every answer also passes the harness's strict schema check.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { TaskError } from '../../shared/errors/task-errors.js';
import { errorResponse } from '../../agents/runtime/errors.js';
import { buyer, harness, olderFormBuy, START } from './support/core.js';

/** A fresh idempotency_key (the published update_media_buy requires one). */
const uk = () => `upd-${Math.random().toString(36).slice(2, 14)}`;

const HOUR = 3600_000;
const end = new Date(START + 48 * HOUR).toISOString();

/** A create_media_buy request in the published 3.x form only. */
const publishedBuy = (extra: Record<string, unknown> = {}) => ({
  idempotency_key: `idem-${Math.random().toString(36).slice(2, 12)}`,
  brand: { domain: 'acme.example' },
  account: { brand: { domain: 'acme.example' }, operator: 'acme.example' },
  packages: [
    {
      product_id: 'video_olv_news',
      pricing_option_id: 'olv_news_cpm',
      budget: 5000,
    },
    {
      product_id: 'display_run_of_network',
      pricing_option_id: 'ron_display_auction',
      budget: 1000,
      bid_price: 4,
    },
  ],
  start_time: 'asap',
  end_time: end,
  ...extra,
});

t.test('products carry the published members', async (t) => {
  const h = await harness(t);
  const r = await h.ok(
    'sales',
    'get_products',
    { buying_mode: 'brief', brief: 'sports' },
    buyer(h),
  );
  t.equal(r.cache_scope, 'public');
  const products = r.products as Array<Record<string, unknown>>;
  for (const p of products) {
    t.ok((p.publisher_properties as unknown[]).length > 0, `${String(p.product_id)} properties`);
    t.match(p.reporting_capabilities, {
      timezone: 'UTC',
      supports_webhooks: true,
      date_range_support: 'date_range',
    });
    for (const o of p.pricing_options as Array<Record<string, unknown>>) {
      t.ok(['cpm', 'flat_rate'].includes(o.pricing_model as string), 'published pricing model');
      t.notOk('price' in o || 'floor' in o, 'no older price members');
      t.ok(o.fixed_price !== undefined || o.floor_price !== undefined);
    }
  }
  const everything = (await h.ok('sales', 'get_products', {}, buyer(h))).products as Array<
    Record<string, unknown>
  >;
  const flat = everything
    .flatMap((p) => p.pricing_options as Array<Record<string, unknown>>)
    .find((o) => o.pricing_option_id === 'homepage_flat');
  t.match(flat, { pricing_model: 'flat_rate', fixed_price: Number });
  const auction = everything
    .flatMap((p) => p.pricing_options as Array<Record<string, unknown>>)
    .find((o) => o.pricing_option_id === 'ron_display_auction');
  t.match(auction, { pricing_model: 'cpm', floor_price: Number });
  t.notOk(auction && 'fixed_price' in auction, 'an auction has no fixed price');

  // Published channel names filter as our older ones do.
  const olv = await h.ok('sales', 'get_products', { filters: { channels: ['olv'] } }, buyer(h));
  const video = await h.ok('sales', 'get_products', { filters: { channels: ['video'] } }, buyer(h));
  t.same(olv.products, video.products);
  t.ok((olv.products as Array<{ channels: string[] }>).every((p) => p.channels.includes('olv')));
  const podcasts = await h.ok(
    'sales',
    'get_products',
    { filters: { channels: ['podcast'] } },
    buyer(h),
  );
  t.same(
    (podcasts.products as Array<{ product_id: string }>).map((p) => p.product_id),
    ['audio_podcast_network'],
  );
  const bad = await h.err('sales', 'get_products', { filters: { channels: ['tv'] } }, buyer(h));
  t.match(bad, { code: 'VALIDATION_ERROR', field: 'filters.channels[0]' });
});

t.test('create in the published form: no buyer_ref, account by natural key, paused', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  const created = await h.ok('sales', 'create_media_buy', publishedBuy({ paused: true }), c);
  t.equal(created.status, 'completed');
  t.equal(created.media_buy_status, 'paused', 'created with delivery held');
  t.match(created, { revision: 1, currency: 'USD', total_budget: 6000 });
  t.match(created.confirmed_at, /^\d{4}-/);
  t.notOk('buyer_ref' in created, 'no buyer_ref when none was sent');
  const pkgs = created.packages as Array<Record<string, unknown>>;
  t.same(
    pkgs.map((p) => p.pricing_model),
    ['cpm', 'cpm'],
  );
  t.notOk(pkgs.some((p) => 'buyer_ref' in p));

  // Top-level update members: resume, then one package paused and re-budgeted.
  const id = created.media_buy_id as string;
  const resumed = await h.ok(
    'sales',
    'update_media_buy',
    { idempotency_key: uk(), media_buy_id: id, paused: false },
    c,
  );
  t.equal(resumed.media_buy_status, 'active');
  t.equal(resumed.revision, 2, 'every update is a new revision');
  const pkgId = pkgs[0]!.package_id as string;
  const changed = await h.ok(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: id,
      revision: 2,
      packages: [{ package_id: pkgId, budget: 7000, paused: true }],
    },
    c,
  );
  t.same(changed.changes_applied, ['packages[0]']);
  t.match((changed.packages as Array<Record<string, unknown>>)[0], { budget: 7000, paused: true });
  const stale = await h.err(
    'sales',
    'update_media_buy',
    { idempotency_key: uk(), media_buy_id: id, revision: 2, paused: true },
    c,
  );
  t.match(stale, { code: 'INVALID_STATE', field: 'revision' });
  const ghost = await h.err(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: id,
      packages: [{ package_id: 'pkg_ghost', paused: true }],
    },
    c,
  );
  t.match(ghost, { code: 'PACKAGE_NOT_FOUND', field: 'packages[0].package_id' });
  const canceled = await h.ok(
    'sales',
    'update_media_buy',
    { idempotency_key: uk(), media_buy_id: id, canceled: true },
    c,
  );
  t.equal(canceled.media_buy_status, 'canceled');

  // get_media_buys: cursor pagination over three buys.
  await h.ok('sales', 'create_media_buy', publishedBuy(), c);
  await h.ok('sales', 'create_media_buy', publishedBuy(), c);
  const page1 = await h.ok('sales', 'get_media_buys', { pagination: { max_results: 2 } }, c);
  const p1 = page1.pagination as { has_more: boolean; cursor: string; total_count: number };
  t.match(p1, { has_more: true, total_count: 3 });
  const page2 = await h.ok(
    'sales',
    'get_media_buys',
    { pagination: { max_results: 2, cursor: p1.cursor } },
    c,
  );
  t.same(page2.pagination, { has_more: false, total_count: 3 });
  const ids = [...(page1.media_buys as unknown[]), ...(page2.media_buys as unknown[])].map(
    (b) => (b as { media_buy_id: string }).media_buy_id,
  );
  t.equal(new Set(ids).size, 3, 'each buy once');
  const canceledOnly = await h.ok('sales', 'get_media_buys', { status_filter: ['canceled'] }, c);
  t.same(
    (canceledOnly.media_buys as Array<{ media_buy_id: string }>).map((b) => b.media_buy_id),
    [id],
  );
});

t.test('delivery rows carry rate and currency; start_date/end_date narrow them', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  const created = await h.ok('sales', 'create_media_buy', publishedBuy(), c);
  const id = created.media_buy_id as string;
  h.clock.advance(30 * HOUR);
  const all = await h.ok('sales', 'get_media_buy_delivery', { media_buy_ids: [id] }, c);
  const row = (all.media_buy_deliveries as Array<Record<string, unknown>>)[0]!;
  const byPackage = row.by_package as Array<Record<string, unknown>>;
  t.match(byPackage[0], { rate: 22, currency: 'USD', pricing_model: 'cpm' }, 'the fixed CPM');
  t.ok((byPackage[1]!.rate as number) >= 3, 'the auction clears at or above the floor');
  const firstDay = new Date(START).toISOString().slice(0, 10);
  const secondDay = new Date(START + 24 * HOUR).toISOString().slice(0, 10);
  // 3.2 (this seller's release): the range is half-open, end_date excluded.
  const day = await h.ok(
    'sales',
    'get_media_buy_delivery',
    { media_buy_ids: [id], start_date: firstDay, end_date: secondDay },
    c,
  );
  const dayImpressions = (day.aggregated_totals as { impressions: number }).impressions;
  const allImpressions = (all.aggregated_totals as { impressions: number }).impressions;
  t.ok(
    dayImpressions > 0 && dayImpressions < allImpressions,
    `${dayImpressions} of ${allImpressions}`,
  );
  t.same(day.reporting_period, {
    start: `${firstDay}T00:00:00.000Z`,
    end: `${secondDay}T00:00:00.000Z`,
  });
  // A buyer pinned to 3.1 reads both ends as inclusive days: the same day, same numbers.
  const day31 = await h.ok(
    'sales',
    'get_media_buy_delivery',
    { media_buy_ids: [id], start_date: firstDay, end_date: firstDay, svc_version: '3.1' },
    c,
  );
  t.same(day31.aggregated_totals, day.aggregated_totals, '3.1: end_date included');
  t.same(day31.reporting_period, {
    start: `${firstDay}T00:00:00.000Z`,
    end: `${firstDay}T23:59:59.000Z`,
  });
  for (const [start_date, end_date] of [
    [firstDay, firstDay],
    ['2026-03-05', '2026-03-01'],
  ]) {
    const empty = await h.err(
      'sales',
      'get_media_buy_delivery',
      { media_buy_ids: [id], start_date, end_date },
      c,
    );
    t.match(empty, { code: 'VALIDATION_ERROR', field: 'start_date' }, `${start_date}..${end_date}`);
  }
  const reversed = await h.err(
    'sales',
    'get_media_buy_delivery',
    { media_buy_ids: [id], start_date: '2026-03-05', end_date: '2026-03-01', svc_version: '3.1' },
    c,
  );
  t.match(reversed, { code: 'VALIDATION_ERROR', field: 'end_date' });
  const notADate = await h.err(
    'sales',
    'get_media_buy_delivery',
    { media_buy_ids: [id], start_date: 'March 1st' },
    c,
  );
  t.match(notADate, { code: 'VALIDATION_ERROR', field: 'start_date' });
});

t.test('sync_accounts in the published provisioning form, and refusals', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  const r = await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: 'acct-sync-0001',
      accounts: [
        { brand: { domain: 'acme.example' }, operator: 'agency.example', billing: 'operator' },
        { name: 'Older form account' },
      ],
    },
    c,
  );
  const [published, older] = r.accounts as Array<Record<string, unknown>>;
  t.match(published, {
    brand: { domain: 'acme.example' },
    operator: 'agency.example',
    billing: 'operator',
    action: 'created',
    status: 'active',
  });
  t.match(older, { name: 'Older form account', brand: { domain: /\.invalid$/ } });
  const again = await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [{ account: { account_id: published!.account_id }, name: 'Renamed' }],
    },
    c,
  );
  t.match((again.accounts as unknown[])[0], {
    account_id: published!.account_id,
    action: 'updated',
  });
  const bad = await h.err(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [{ brand: { domain: 'acme.example' }, operator: 'Not A Domain', billing: 'me' }],
    },
    c,
  );
  t.equal(bad.code, 'VALIDATION_ERROR');
  t.same(
    bad.issues?.map((i) => i.pointer),
    ['/accounts/0/operator', '/accounts/0/billing'],
    'both offending fields at once',
  );
});

t.test('sync_accounts: the per-agent billing gate of a passthrough-only buyer agent', async (t) => {
  const h = await harness(t);
  const { api_key } = await h.core.onboardPrincipal({
    agent: 'sales',
    principalId: 'passthrough-agency',
    permissions: { media_buys: ['read', 'write'] },
    commercialRelationship: 'passthrough_only',
  });
  const c = { apiKey: api_key };
  const brand = { domain: 'acme.example' };
  const r = await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [
        { brand, operator: 'agency.example', billing: 'agent' },
        { brand: { domain: 'other.example' }, operator: 'agency.example', billing: 'operator' },
        { brand, operator: 'agency.example', billing: 'advertiser' },
      ],
      context: { correlation_id: 'gate' },
    },
    c,
  );
  const [agent, operator, advertiser] = r.accounts as Array<Record<string, unknown>>;
  t.same(agent, {
    brand,
    operator: 'agency.example',
    action: 'failed',
    status: 'rejected',
    errors: [
      {
        code: 'BILLING_NOT_PERMITTED_FOR_AGENT',
        message: 'agent billing is not available to this buyer agent',
        field: 'billing',
        suggestion: 'retry with billing operator',
        recovery: 'correctable',
        details: { rejected_billing: 'agent', suggested_billing: 'operator' },
      },
    ],
  });
  t.match(operator, { billing: 'operator', action: 'created', status: 'active' });
  // The capability gate comes first: advertiser billing is not offered to anyone.
  t.match(advertiser, {
    action: 'failed',
    errors: [{ code: 'BILLING_NOT_SUPPORTED', details: { scope: 'capability' } }],
  });
  t.same(r.context, { correlation_id: 'gate' });
  // The refused account was not stored; an agent-billable buyer's agent billing is.
  const listed = await h.ok('sales', 'list_accounts', {}, c);
  t.same(
    (listed.accounts as Array<{ brand: unknown }>).map((a) => a.brand),
    [{ domain: 'other.example' }],
  );
  const billable = await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [{ brand, operator: 'agency.example', billing: 'agent' }],
    },
    buyer(h),
  );
  t.match((billable.accounts as unknown[])[0], { billing: 'agent', action: 'created' });
  // A relationship outside the two is refused at onboarding, naming the field.
  await t.rejects(
    h.core.onboardPrincipal({
      agent: 'sales',
      principalId: 'p2',
      permissions: {},
      commercialRelationship: 'free_lunch' as never,
    }),
    { code: 'VALIDATION_ERROR', field: 'commercial_relationship' },
  );
});

t.test('a request matching neither form names every offending field at once', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  const bad = await h.err(
    'sales',
    'create_media_buy',
    {
      brand: { domain: 'acme.example' },
      packages: [{ product_id: 'video_olv_news', pricing_option_id: 'olv_news_cpm', budget: -1 }],
      start_time: 5,
      end_time: 'tomorrow',
      paused: 'yes',
      context: { trace: 't-1' },
    },
    c,
  );
  t.equal(bad.code, 'VALIDATION_ERROR');
  t.equal(bad.status, 400);
  t.same(
    bad.issues?.map((i) => i.pointer),
    ['/packages/0/budget', '/start_time', '/end_time', '/paused', '/idempotency_key'],
    'the published form without its idempotency_key is named too',
  );
  t.equal(bad.field, 'packages[0].budget', 'field is the first issue');
  t.ok(
    bad.issues?.every((i) => typeof i.keyword === 'string' && i.message.length > 0),
    'each issue has its keyword and message',
  );
  const missing = await h.err('sales', 'create_media_buy', { brand: { domain: 'a.example' } }, c);
  t.same(
    missing.issues?.map((i) => [i.pointer, i.keyword]),
    [
      ['/start_time', 'required'],
      ['/end_time', 'required'],
      ['/idempotency_key', 'required'],
      // packages or a proposal_id: a whole-request rule, after the members.
      ['/packages', 'required'],
    ],
  );
  // On the wire: the published error with issues[], the request's context echoed.
  const wire = errorResponse(bad, { brand: 'svc', context: { trace: 't-1' } }).body;
  t.match(wire, {
    status: 'failed',
    errors: [{ code: 'VALIDATION_ERROR', issues: bad.issues }],
    context: { trace: 't-1' },
  });

  const upd = await h.err(
    'sales',
    'update_media_buy',
    {
      idempotency_key: uk(),
      media_buy_id: 'mb_x',
      paused: 'no',
      revision: 0,
      packages: [{ budget: 0 }],
    },
    c,
  );
  t.same(
    upd.issues?.map((i) => i.pointer),
    ['/revision', '/paused', '/packages/0/package_id', '/packages/0/budget'],
  );
  const list = await h.err(
    'sales',
    'list_creatives',
    { pagination: { max_results: 0, cursor: '' }, filters: { statuses: 'approved' } },
    c,
  );
  t.same(list.issues?.map((i) => i.pointer).sort(), [
    '/filters/statuses',
    '/pagination/cursor',
    '/pagination/max_results',
  ]);
  const buys = await h.err('sales', 'get_media_buys', { pagination: { cursor: 'x' } }, c);
  t.match(buys, { code: 'VALIDATION_ERROR', field: 'pagination.cursor' });
  // A structured format id keeps its own code.
  const fmt = await h.err(
    'sales',
    'sync_creatives',
    { creatives: [{ creative_id: 'c', name: 'n', format_id: 'display_300x250', assets: {} }] },
    c,
  );
  t.match(fmt, { code: 'INVALID_FORMAT_ID', field: 'creatives[0].format_id' });
});

t.test('the older spec forms still work beside the published ones', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  const older = await h.ok('sales', 'create_media_buy', olderFormBuy('older-1', end), c);
  t.equal(older.status, 'submitted');
  const approved = await h.core.operator.approve(older.task_id as string);
  t.match(approved, { buyer_ref: 'older-1', media_buy_status: 'pending_creatives' });
  t.equal(
    (approved.packages as Array<{ buyer_ref: string }>)[0]!.buyer_ref,
    'p1',
    'buyer_ref echoed when the buyer sent one',
  );
  const found = await h.ok('sales', 'get_media_buys', { buyer_refs: ['older-1'] }, c);
  t.equal((found.media_buys as unknown[]).length, 1);
});

t.test('SVC_BRAND=adcp: the same shapes under the protocol brand', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp'), settings: { approval: 'never' } });
  const c = buyer(h);
  const products = await h.ok('sales', 'get_products', { buying_mode: 'wholesale' }, c);
  t.ok((products.products as unknown[]).length > 0);
  const created = await h.ok('sales', 'create_media_buy', publishedBuy(), c);
  t.equal(created.media_buy_status, 'pending_creatives', 'approved, no creatives yet');
  const r = await h.call(
    'sales',
    'update_media_buy',
    { idempotency_key: uk(), media_buy_id: 'mb_nope', paused: true },
    c,
  );
  t.ok(r instanceof TaskError && (r.code as string) === 'MEDIA_BUY_NOT_FOUND');
});

t.test(
  'list_accounts pages by cursor; re-canceling is NOT_CANCELLABLE; product before dates',
  async (t) => {
    const h = await harness(t, { settings: { approval: 'never' } });
    const c = buyer(h);
    await h.ok(
      'sales',
      'sync_accounts',
      {
        idempotency_key: randomUUID(),
        accounts: ['a', 'b', 'c'].map((x) => ({
          brand: { domain: `${x}.example` },
          operator: 'agency.example',
          billing: 'operator',
        })),
      },
      c,
    );
    const first = await h.ok('sales', 'list_accounts', { pagination: { max_results: 2 } }, c);
    const page = first.pagination as { has_more: boolean; cursor: string };
    t.match(page, { has_more: true });
    t.notOk('total_count' in page, 'accounts can grow between pages: no total');
    const rest = await h.ok(
      'sales',
      'list_accounts',
      { pagination: { max_results: 2, cursor: page.cursor } },
      c,
    );
    t.equal((rest.accounts as unknown[]).length, 1);
    t.same(rest.pagination, { has_more: false });

    const created = await h.ok('sales', 'create_media_buy', publishedBuy(), c);
    const id = created.media_buy_id as string;
    await h.ok(
      'sales',
      'update_media_buy',
      { idempotency_key: uk(), media_buy_id: id, canceled: true },
      c,
    );
    const again = await h.err(
      'sales',
      'update_media_buy',
      { idempotency_key: uk(), media_buy_id: id, canceled: true },
      c,
    );
    t.match(again, { code: 'NOT_CANCELLABLE', status: 409 });
    const paused = await h.err(
      'sales',
      'update_media_buy',
      { idempotency_key: uk(), media_buy_id: id, paused: true },
      c,
    );
    t.equal(paused.code, 'INVALID_STATE', 'other changes of an ended buy stay INVALID_STATE');

    // An unknown product is named even when the flight is also over; reversed dates first.
    const reversed = await h.err(
      'sales',
      'create_media_buy',
      publishedBuy({
        packages: [{ product_id: 'nope', pricing_option_id: 'x', budget: 10 }],
        start_time: '2020-02-01T00:00:00Z',
        end_time: '2020-01-01T00:00:00Z',
      }),
      c,
    );
    t.match(reversed, { code: 'VALIDATION_ERROR', field: 'end_time' });
    const unknown = await h.err(
      'sales',
      'create_media_buy',
      publishedBuy({
        packages: [{ product_id: 'nope', pricing_option_id: 'x', budget: 10 }],
        start_time: '2020-01-01T00:00:00Z',
        end_time: '2020-02-01T00:00:00Z',
      }),
      c,
    );
    t.match(unknown, { code: 'PRODUCT_NOT_FOUND', field: 'packages[0].product_id' });
  },
);

t.test('a sandbox account is confirmed at once; other requests still await approval', async (t) => {
  const { markDemoPrincipalsSandbox } = await import('../../agents/sandbox/fixtures.js');
  const h = await harness(t, { settings: { testController: true } });
  await markDemoPrincipalsSandbox(h.pool, h.schema);
  const c = buyer(h);
  const sandbox = await h.ok('sales', 'create_media_buy', publishedBuy(), c);
  t.equal(sandbox.status, 'completed', 'named account of a sandbox principal: no review');
  t.match(sandbox.media_buy_id, /^mb_/);
  const { account: _account, ...noAccount } = publishedBuy();
  const reviewed = await h.ok('sales', 'create_media_buy', noAccount, c);
  t.equal(reviewed.status, 'submitted', 'no account named: the seller reviews');
});

t.test(
  'a push_notification_config without operation_id: the payload carries the task id',
  async (t) => {
    const h = await harness(t);
    const c = buyer(h);
    const created = await h.ok(
      'sales',
      'create_media_buy',
      publishedBuy({ push_notification_config: { url: 'https://buyer.example/hooks/task' } }),
      c,
    );
    t.equal(created.status, 'submitted');
    const taskId = created.task_id as string;
    const channels = h.notifications.of('mediaBuyChannelsConfigured')[0]!;
    t.same(channels.pushNotificationConfig, {
      url: 'https://buyer.example/hooks/task',
      operation_id: taskId,
    });
    h.clock.advance(1000);
    await h.core.executor.runDue();
    const change = h.notifications.of('taskStatusChanged')[0]!;
    t.equal(change.status, 'working');
    t.match(change.pushNotificationConfig, { operation_id: taskId });
    // An operation_id the buyer sends is kept; a malformed one is still refused.
    const own = await h.ok(
      'sales',
      'create_media_buy',
      publishedBuy({
        push_notification_config: { url: 'https://buyer.example/h', operation_id: 'op-mine-1' },
      }),
      c,
    );
    t.equal(own.status, 'submitted');
    t.match(h.notifications.of('mediaBuyChannelsConfigured').at(-1)!.pushNotificationConfig, {
      operation_id: 'op-mine-1',
    });
    const bad = await h.err(
      'sales',
      'create_media_buy',
      publishedBuy({
        push_notification_config: { url: 'https://buyer.example/h', operation_id: 7 },
      }),
      c,
    );
    t.match(bad, { code: 'INVALID_REQUEST', field: /^push_notification_config\.operation_id/ });
  },
);

t.test(
  'the sales format listing: cursor pages; a sandbox session lists its seeded formats',
  async (t) => {
    const { markDemoPrincipalsSandbox, putFixture, SESSION } =
      await import('../../agents/sandbox/fixtures.js');
    const h = await harness(t, { settings: { testController: true } });
    const c = buyer(h);
    const all = await h.ok('sales', 'list_creative_formats', {}, c);
    const total = (all.formats as unknown[]).length;
    t.ok(total > 2);
    t.match(all.pagination, { has_more: false, total_count: total });
    const first = await h.ok(
      'sales',
      'list_creative_formats',
      { pagination: { max_results: 2 } },
      c,
    );
    const cursor = (first.pagination as { cursor: string }).cursor;
    t.match(first.pagination, { has_more: true, total_count: total });
    const second = await h.ok(
      'sales',
      'list_creative_formats',
      { pagination: { max_results: 100, cursor } },
      c,
    );
    t.same(
      [...(first.formats as unknown[]), ...(second.formats as unknown[])],
      all.formats,
      'two pages are the whole listing',
    );
    await markDemoPrincipalsSandbox(h.pool, h.schema);
    for (const id of ['seeded_a', 'seeded_b']) {
      await putFixture(
        h.pool,
        h.schema,
        {
          agent: 'sales',
          principalId: 'demo-buyer',
          account: SESSION,
          kind: 'creative_format',
          id,
        },
        { name: `Seeded ${id}`, type: 'display' },
      );
    }
    const account = { brand: { domain: 'acme.example' }, operator: 'acme.example' };
    const seeded = await h.ok('sales', 'list_creative_formats', { account }, c);
    t.same(
      (seeded.formats as Array<{ format_id: { id: string } }>).map((f) => f.format_id.id),
      ['seeded_a', 'seeded_b'],
    );
    const unseeded = await h.ok('sales', 'list_creative_formats', {}, c);
    t.equal((unseeded.formats as unknown[]).length, total, 'without an account: the catalog');
  },
);

/** publishedBuy with its auction package's bid left out (3.1 optional, 3.2 deprecated). */
const withoutBid = () => {
  const b = publishedBuy({ context: { correlation_id: 'no-bid' } });
  delete (b.packages[1] as { bid_price?: number }).bid_price;
  return b;
};

t.test('an auction package without bid_price: automatic bidding under adcp only', async (t) => {
  const adcp = await harness(t, { profile: brandProfile('adcp'), settings: { approval: 'never' } });
  const created = await adcp.ok('sales', 'create_media_buy', withoutBid(), buyer(adcp));
  const auction = (created.packages as Array<Record<string, unknown>>)[1]!;
  t.notOk('bid_price' in auction, 'no bid invented');
  t.match(created, { total_budget: 6000 });
  // get_media_buys echoes the create request's context, persisted with the buy.
  const read = await adcp.ok(
    'sales',
    'get_media_buys',
    { media_buy_ids: [created.media_buy_id] },
    buyer(adcp),
  );
  t.same((read.media_buys as Array<Record<string, unknown>>)[0]!.context, {
    correlation_id: 'no-bid',
  });
  // A missing bid never masks a later check: a past start is still INVALID_REQUEST.
  const past = await adcp.err(
    'sales',
    'create_media_buy',
    { ...withoutBid(), start_time: '2020-01-01T00:00:00Z' },
    buyer(adcp),
  );
  t.equal(past.code, 'INVALID_REQUEST');
  const svc = await harness(t, { settings: { approval: 'never' } });
  const refused = await svc.err('sales', 'create_media_buy', withoutBid(), buyer(svc));
  t.match(refused, { code: 'VALIDATION_ERROR', field: 'packages[1].bid_price' }, 'svc: required');
});

t.test('update total_budget: every package scaled in proportion, exact to the cent', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp'), settings: { approval: 'never' } });
  const c = buyer(h);
  const created = await h.ok('sales', 'create_media_buy', publishedBuy(), c);
  const id = created.media_buy_id as string;
  const update = (extra: Record<string, unknown>) =>
    h.call('sales', 'update_media_buy', { idempotency_key: uk(), media_buy_id: id, ...extra }, c);
  const scaled = (await update({ total_budget: { amount: 1000, currency: 'USD' } })) as Record<
    string,
    unknown
  >;
  t.equal(scaled.total_budget, 1000);
  t.same(
    (scaled.affected_packages as Array<{ budget: number }>).map((p) => p.budget),
    [833.33, 166.67],
    '5000:1000 kept, the last package takes the remainder',
  );
  t.ok((scaled.changes_applied as string[]).includes('total_budget'));
  for (const [name, extra, field] of [
    [
      'with packages',
      {
        total_budget: { amount: 10, currency: 'USD' },
        packages: [{ package_id: 'x', budget: 1 }],
      },
      'total_budget',
    ],
    [
      'another currency',
      { total_budget: { amount: 10, currency: 'EUR' } },
      'total_budget.currency',
    ],
    ['zero', { total_budget: { amount: 0, currency: 'USD' } }, 'total_budget.amount'],
    ['no currency', { total_budget: { amount: 10 } }, 'total_budget.currency'],
  ] as const) {
    const r = await update(extra);
    t.ok(r instanceof TaskError, name);
    t.match(r, { code: 'VALIDATION_ERROR', field }, name);
  }
});
