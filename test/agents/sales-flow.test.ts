/**
 * The spec's typical sales flow through the TaskDispatcher: get_products,
 * list_creative_formats, create_media_buy (async, approval), sync_creatives,
 * get_media_buy_delivery; then updates, impairments, cancellation and completion.
 */
import t from 'tap';
import { TaskError } from '../../shared/errors/task-errors.js';
import { buyer, harness, pendingBuyId, START } from './support/core.js';

const CREATIVE = 'http://127.0.0.1:3002';
const HOUR = 3600_000;

function buyParams(extra: Record<string, unknown> = {}) {
  return {
    buyer_ref: 'campaign-1',
    brand_manifest: { url: 'https://acme.example' },
    packages: [
      {
        buyer_ref: 'pkg-ctv',
        product_id: 'ctv_premium_sports',
        pricing_option_id: 'ctv_sports_cpm',
        budget: 24000,
      },
      {
        buyer_ref: 'pkg-display',
        product_id: 'display_run_of_network',
        pricing_option_id: 'ron_display_auction',
        budget: 2400,
        bid_price: 5,
      },
    ],
    start_time: { type: 'asap' },
    end_time: new Date(START + 24 * HOUR).toISOString(),
    ...extra,
  };
}

t.test('typical sales flow with approval, webhooks and delivery', async (t) => {
  const h = await harness(t);
  const creds = buyer(h);

  const products = await h.ok(
    'sales',
    'get_products',
    { brief: 'Live sports fans on connected TV', brand_manifest: { url: 'https://acme.example' } },
    creds,
  );
  const list = products.products as Array<Record<string, unknown>>;
  t.equal(list[0]!.product_id, 'ctv_premium_sports', 'best match first');
  t.ok(
    list.some((p) => p.product_id === 'custom_demo_buyer_sports_bundle'),
    'custom product for this principal',
  );
  t.ok((list[0]!.pricing_options as unknown[]).length > 0, 'pricing with credentials');
  t.match(list[0]!.brief_relevance, /sports/);

  const formats = await h.ok('sales', 'list_creative_formats', { format_types: ['video'] });
  const fl = formats.formats as Array<{
    format_id: { id: string; agent_url: string };
    type: string;
    asset_schemas: unknown;
  }>;
  t.ok(fl.length > 0 && fl.every((f) => f.type === 'video'));
  t.ok(fl.some((f) => f.format_id.id === 'video_ctv_30s' && f.format_id.agent_url === CREATIVE));
  t.ok(fl[0]!.asset_schemas, 'sales listing carries asset schemas');

  const context = { correlation_id: 'corr-123', nested: { a: [1, 2] } };
  const push = { url: 'https://buyer.example/hooks/task', operation_id: 'op-create-1' };
  const created = await h.ok(
    'sales',
    'create_media_buy',
    buyParams({
      push_notification_config: push,
      context,
      reporting_webhook: {
        url: 'https://buyer.example/hooks/reports',
        reporting_frequency: 'hourly',
      },
    }),
    creds,
  );
  t.equal(created.status, 'submitted');
  t.match(created.task_id, /^task_/);
  t.notOk('media_buy_id' in created || 'packages' in created, 'the submitted envelope has no buy');
  t.same(created.context, context, 'context echoed verbatim');
  const mediaBuyId = await pendingBuyId(h, created.task_id);
  const pending = (
    (await h.ok('sales', 'get_media_buys', { media_buy_ids: [mediaBuyId] }, creds))
      .media_buys as Array<Record<string, unknown>>
  )[0]!;
  t.equal(pending.status, 'pending_creatives', 'awaiting approval, no creatives yet');
  t.equal(pending.confirmed_at, null, 'provisional until the seller confirms');
  const packages = pending.packages as Array<{ package_id: string; buyer_ref: string }>;
  t.equal(packages.length, 2);
  t.ok(packages.every((p) => p.package_id.startsWith('pkg_')));

  // Channels registered with the sender in the same transaction; no task webhook yet.
  t.same(
    h.notifications.calls.map((c) => c.method),
    ['mediaBuyChannelsConfigured'],
  );
  const channels = h.notifications.of('mediaBuyChannelsConfigured')[0]!;
  t.equal(channels.mediaBuyId, mediaBuyId);
  t.same(channels.pushNotificationConfig, push);
  t.ok(
    Date.parse(channels.flightEnd as string) > Date.parse(channels.flightStart as string),
    'the flight goes with the channels, so the schedule ends with it',
  );
  t.equal(
    (channels.reportingWebhook as { reporting_frequency: string }).reporting_frequency,
    'hourly',
  );

  // Executor: submitted -> working -> input-required (manual approval).
  t.equal(await h.core.executor.runDue(), 0, 'nothing due before the step interval');
  h.clock.advance(1000);
  t.equal(await h.core.executor.runDue(), 1);
  h.clock.advance(1000);
  t.equal(
    await h.core.executor.runDue(),
    0,
    'manual approval: nothing scheduled while working waits',
  );
  const polled = await h.ok('sales', 'get_task_status', { task_id: created.task_id }, creds);
  t.equal(polled.status, 'working');
  t.equal(polled.task_type, 'create_media_buy');

  const approved = await h.core.operator.approve(mediaBuyId);
  t.equal(approved.media_buy_status, 'pending_creatives', 'approved; no creatives assigned yet');
  const statuses = h.notifications.of('taskStatusChanged');
  t.same(
    statuses.map((s) => s.status),
    ['working', 'completed'],
    'one webhook per status change, in order',
  );
  for (const s of statuses) {
    t.equal(s.taskId, created.task_id);
    t.equal(s.taskType, 'create_media_buy');
    t.equal(s.initialStatus, 'submitted');
    t.same(s.pushNotificationConfig, push);
    t.same(s.context, context);
    t.equal(s.mediaBuyId, mediaBuyId);
  }
  t.same((statuses[0]!.result as Record<string, unknown>).current_step, 'inventory_review');
  t.equal((statuses[1]!.result as Record<string, unknown>).media_buy_status, 'pending_creatives');
  const done = await h.ok(
    'sales',
    'get_task_status',
    { task_id: created.task_id, include_result: true },
    creds,
  );
  t.equal(done.status, 'completed');
  t.equal((done.result as Record<string, unknown>).media_buy_id, mediaBuyId);

  // Creatives: sync and assign to the CTV package.
  const synced = await h.ok(
    'sales',
    'sync_creatives',
    {
      creatives: [
        {
          creative_id: 'cr-ctv-1',
          name: 'Sports spot',
          format_id: { agent_url: CREATIVE, id: 'video_ctv_30s' },
          assets: {
            video: {
              asset_type: 'video',
              url: 'https://cdn.acme.example/spot.mp4',
              duration_ms: 30000,
            },
            click_url: { asset_type: 'url', url: 'https://acme.example/' },
          },
        },
      ],
      assignments: { 'cr-ctv-1': [packages[0]!.package_id] },
    },
    creds,
  );
  t.same((synced.creatives as unknown[])[0], {
    creative_id: 'cr-ctv-1',
    action: 'created',
    status: 'approved',
  });
  const again = await h.ok(
    'sales',
    'sync_creatives',
    {
      creatives: [
        {
          creative_id: 'cr-ctv-1',
          name: 'Sports spot',
          format_id: { agent_url: CREATIVE, id: 'video_ctv_30s' },
          assets: {
            video: {
              asset_type: 'video',
              url: 'https://cdn.acme.example/spot.mp4',
              duration_ms: 30000,
            },
            click_url: { asset_type: 'url', url: 'https://acme.example/' },
          },
        },
      ],
    },
    creds,
  );
  t.equal((again.creatives as Array<{ action: string }>)[0]!.action, 'unchanged');
  const listed = await h.ok('sales', 'list_creatives', { filters: { status: ['active'] } }, creds);
  t.same((listed.creatives as Array<{ assigned_package_ids: string[] }>)[0]!.assigned_package_ids, [
    packages[0]!.package_id,
  ]);
  t.equal((listed.query_summary as { total_matching: number }).total_matching, 1);

  // Six hours later: a quarter of the one-day flight delivered.
  h.clock.advance(6 * HOUR - 2000);
  const delivery = await h.ok(
    'sales',
    'get_media_buy_delivery',
    { media_buy_id: mediaBuyId, granularity: 'daily' },
    creds,
  );
  const totals = delivery.delivery as { impressions: number; spend: number; clicks: number };
  // Approval came 2 s after start, so a hair under 6 h of the 24 h flight.
  t.ok(
    Math.abs(totals.spend - (26400 * (6 * HOUR - 2000)) / (24 * HOUR)) < 0.02,
    `spend ${totals.spend}`,
  );
  const byPackage = delivery.by_package as Array<{
    package_id: string;
    impressions: number;
    spend: number;
  }>;
  const ctv = byPackage.find((p) => p.package_id === packages[0]!.package_id)!;
  t.ok(
    Math.abs(ctv.impressions - (ctv.spend / 42) * 1000) <= 1,
    'CPM pricing: impressions = spend / cpm',
  );
  t.ok(totals.clicks > 0);
  t.equal((delivery.timeseries as unknown[]).length, 1, 'one day so far');
  const hourly = await h.ok(
    'sales',
    'get_media_buy_delivery',
    { media_buy_id: mediaBuyId, time_granularity: 'hourly' },
    creds,
  );
  t.equal((hourly.timeseries as unknown[]).length, 6, 'hourly slices at the declared granularity');
  t.ok((hourly.aggregated_totals as { media_buy_count: number }).media_buy_count === 1);

  // The sender's data source sees the same numbers for a reporting period.
  const period = {
    start: new Date(START).toISOString(),
    end: new Date(START + HOUR - 1000).toISOString(),
  };
  const got = await h.core.deliverySource.getDelivery(mediaBuyId, period);
  if ('late' in got) throw new Error('unexpected late delivery');
  const report = got;
  t.equal(report.status, 'active');
  t.equal(report.by_package.length, 2);
  t.ok(report.totals.spend > 0 && report.totals.spend < 26400 / 24 + 0.01);

  // Impairment observed by the seller: stored for get_media_buys and handed to the sender.
  await h.core.operator.observeImpairment(mediaBuyId, {
    impairment_id: 'imp-1',
    resource_type: 'creative',
    resource_id: 'cr-ctv-1',
    package_ids: [packages[0]!.package_id],
    transition: { from: 'approved', to: 'suspended' },
    reason_code: 'policy_violation',
    observed_at: h.clock.now().toISOString(),
  });
  t.equal(h.notifications.of('impairmentObserved').length, 1);
  const buys = await h.ok(
    'sales',
    'get_media_buys',
    { media_buy_ids: [mediaBuyId], include_webhook_activity: true },
    creds,
  );
  const mb = (buys.media_buys as Array<Record<string, unknown>>)[0]!;
  t.equal(mb.health, 'impaired');
  t.equal((mb.impairments as unknown[]).length, 1);
  t.same(mb.webhook_activity, [], 'no activity reader configured: empty list');

  // Pause, change budget and rotate the push config.
  const newPush = { url: 'https://buyer.example/hooks/v2', operation_id: 'op-rotate' };
  const updated = await h.ok(
    'sales',
    'update_media_buy',
    {
      media_buy_id: mediaBuyId,
      updates: { status: 'paused', budget_change: 2640 },
      push_notification_config: newPush,
    },
    creds,
  );
  t.equal(updated.status, 'completed');
  t.equal(updated.media_buy_status, 'paused');
  const budgets = (updated.packages as Array<{ budget: number }>).map((p) => p.budget);
  t.same(budgets, [26400, 2640], 'budget_change spread proportionally');
  const rotated = h.notifications.of('mediaBuyChannelsConfigured').at(-1)!;
  t.same(rotated.pushNotificationConfig, newPush);
  t.equal(rotated.reportingWebhook, undefined, 'reporting webhook untouched');

  // Paused: nothing accrues.
  const before = (
    await h.ok('sales', 'get_media_buy_delivery', { media_buy_id: mediaBuyId }, creds)
  ).delivery as { spend: number };
  h.clock.advance(3 * HOUR);
  await h.core.simulator.tick();
  const during = (
    await h.ok('sales', 'get_media_buy_delivery', { media_buy_id: mediaBuyId }, creds)
  ).delivery as { spend: number };
  t.equal(during.spend, before.spend, 'no spend while paused');

  await h.ok(
    'sales',
    'update_media_buy',
    { media_buy_id: mediaBuyId, updates: { status: 'active' } },
    creds,
  );
  h.clock.advance(20 * HOUR);
  t.ok((await h.core.simulator.tick()) >= 1);
  const after = await h.ok('sales', 'get_media_buys', { media_buy_ids: [mediaBuyId] }, creds);
  t.equal(
    (after.media_buys as Array<{ status: string; health: string }>)[0]!.status,
    'completed',
    'flight over',
  );
  t.equal(
    (after.media_buys as Array<{ status: string; health: string }>)[0]!.health,
    'ok',
    'terminal buys are not impaired',
  );
  const terminal = h.notifications.of('mediaBuyTerminal');
  t.same(
    terminal.map((x) => x.status),
    ['completed'],
  );
  const final = await h.ok('sales', 'get_media_buy_delivery', { media_buy_id: mediaBuyId }, creds);
  t.ok((final.delivery as { spend: number }).spend <= 29040 + 0.01, 'never over the budget');

  const refused = await h.err(
    'sales',
    'update_media_buy',
    { media_buy_id: mediaBuyId, updates: { status: 'paused' } },
    creds,
  );
  t.equal(refused.code, 'INVALID_STATE');
  t.equal(refused.status, 409);
});

t.test('automatic approval after the configured delay', async (t) => {
  const h = await harness(t, {
    settings: { approval: { autoAfterSeconds: 60 }, taskStepMs: 1000 },
  });
  const created = await h.ok(
    'sales',
    'create_media_buy',
    buyParams({
      push_notification_config: { url: 'https://b.example/h', operation_id: 'op-auto' },
    }),
    buyer(h),
  );
  t.equal(created.status, 'submitted');
  h.clock.advance(1000);
  await h.core.executor.runDue();
  h.clock.advance(59_000);
  t.equal(await h.core.executor.runDue(), 0, 'not yet');
  h.clock.advance(1000);
  t.equal(await h.core.executor.tick(), 1);
  t.same(
    h.notifications.of('taskStatusChanged').map((s) => s.status),
    ['working', 'completed'],
  );
  const view = await h.core.dispatcher.getTask(
    created.task_id!,
    await h.core.dispatcher.authenticate('sales', buyer(h)),
  );
  t.equal(view.status, 'completed');
  t.equal(view.result?.media_buy_status, 'pending_creatives');
});

t.test('no approval: the initial response is terminal and nothing is notified', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const created = await h.ok(
    'sales',
    'create_media_buy',
    buyParams({
      push_notification_config: { url: 'https://b.example/h', operation_id: 'op-sync' },
    }),
    buyer(h),
  );
  t.equal(created.status, 'completed');
  t.equal(created.task_id, undefined, 'no task id is invented');
  t.equal(created.media_buy_status, 'pending_creatives');
  h.clock.advance(10_000);
  await h.core.executor.runDue();
  t.same(h.notifications.of('taskStatusChanged'), [], 'terminal initial response: no task webhook');
  // get_products with a push config is terminal too.
  const r = await h.ok(
    'sales',
    'get_products',
    {
      brief: 'x',
      push_notification_config: { url: 'https://b.example/h', operation_id: 'op-gp' },
      context: { correlation_id: 'c1' },
    },
    buyer(h),
  );
  t.equal(r.status, 'completed');
  t.same(r.context, { correlation_id: 'c1' });
  t.same(h.notifications.of('taskStatusChanged'), []);
});

t.test('operator rejection and buyer cancellation end the task', async (t) => {
  const h = await harness(t);
  const a = await h.ok(
    'sales',
    'create_media_buy',
    buyParams({
      buyer_ref: 'rej',
      push_notification_config: { url: 'https://b.example/h', operation_id: 'op-rej' },
    }),
    buyer(h),
  );
  const aId = await pendingBuyId(h, a.task_id);
  const rejected = await h.core.operator.reject(aId, 'inventory sold out');
  t.equal(rejected.media_buy_status, 'rejected');
  t.same(
    h.notifications.of('taskStatusChanged').map((s) => s.status),
    ['rejected'],
  );
  t.same(
    h.notifications.of('mediaBuyTerminal').map((s) => s.status),
    ['rejected'],
  );
  const again = await h.core.operator.approve(aId).catch((e: unknown) => e);
  t.ok(again instanceof TaskError && (again.code as string) === 'INVALID_STATE');

  h.notifications.clear();
  const b = await h.ok(
    'sales',
    'create_media_buy',
    buyParams({
      buyer_ref: 'cxl',
      push_notification_config: { url: 'https://b.example/h', operation_id: 'op-cxl' },
    }),
    buyer(h),
  );
  const c = await h.ok(
    'sales',
    'update_media_buy',
    { media_buy_id: await pendingBuyId(h, b.task_id), updates: { status: 'canceled' } },
    buyer(h),
  );
  t.equal(c.media_buy_status, 'canceled');
  t.same(
    h.notifications.of('taskStatusChanged').map((s) => [s.status, s.taskId]),
    [['canceled', b.task_id]],
  );
  t.same(
    h.notifications.of('mediaBuyTerminal').map((s) => s.status),
    ['canceled'],
  );
});

t.test('unauthenticated get_products is the partial catalog', async (t) => {
  const h = await harness(t);
  const r = await h.ok('sales', 'get_products', { brief: 'sports' });
  const list = r.products as Array<Record<string, unknown>>;
  t.ok(list.length > 0);
  t.ok(
    list.every((p) => (p.pricing_options as unknown[]).length > 0),
    'the published product always carries its rate card',
  );
  t.notOk(
    list.some((p) => p.product_id === 'custom_demo_buyer_sports_bundle'),
    'no custom products',
  );
  t.notOk(
    list.some((p) => p.product_id === 'video_private_marketplace'),
    'standard products only',
  );
  t.ok(
    list.every((p) =>
      (p.format_ids as Array<{ id: string }>).every((f) =>
        ['display_300x250', 'display_728x90', 'video_30s', 'audio_30s', 'dooh_1920x1080'].includes(
          f.id,
        ),
      ),
    ),
  );
  t.equal(r.catalog, 'partial');
  const full = await h.ok('sales', 'get_products', {}, buyer(h));
  t.ok((full.products as unknown[]).length > list.length);
});

t.test('get_products filters', async (t) => {
  const h = await harness(t);
  const creds = buyer(h);
  const audio = await h.ok('sales', 'get_products', { filters: { channels: ['audio'] } }, creds);
  t.same(
    (audio.products as Array<{ channel: string }>).map((p) => p.channel),
    ['audio', 'audio'],
  );
  const dooh = await h.ok(
    'sales',
    'get_products',
    { brief: 'billboards in times square', filters: { channels: ['dooh', 'ctv'] } },
    creds,
  );
  t.equal((dooh.products as Array<{ product_id: string }>)[0]!.product_id, 'dooh_times_square');
  const cheap = await h.ok(
    'sales',
    'get_products',
    { filters: { budget_range: { min: 0, max: 5000 } } },
    creds,
  );
  t.notOk(
    (cheap.products as Array<{ product_id: string }>).some(
      (p) => p.product_id === 'display_homepage_takeover',
    ),
  );
  const g = await h.ok(
    'sales',
    'get_products',
    { filters: { delivery_type: 'guaranteed', format_types: ['display'] } },
    creds,
  );
  t.same(
    (g.products as Array<{ product_id: string }>).map((p) => p.product_id),
    ['display_homepage_takeover', 'display_outdoor_enthusiast'],
  );
  const props = await h.ok('sales', 'list_authorized_properties', {});
  t.same(props.publisher_domains, [
    'sportsnetwork.example',
    'dailynews.example',
    'citybillboards.example',
  ]);
});

t.test('reporting delays: late data for the sender, delivery goes on', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  const created = await h.ok('sales', 'create_media_buy', buyParams({ buyer_ref: 'late' }), c);
  const id = created.media_buy_id as string;
  h.clock.advance(HOUR);
  const expected = new Date(START + 6 * HOUR);
  await h.core.operator.delayReporting(id, expected);
  const period = {
    start: new Date(START).toISOString(),
    end: new Date(START + HOUR - 1000).toISOString(),
  };
  t.same(await h.core.deliverySource.getDelivery(id, period), {
    late: true,
    currency: 'USD',
    expectedAvailability: expected.toISOString(),
  });
  const buys = await h.ok('sales', 'get_media_buys', { media_buy_ids: [id] }, c);
  t.equal(
    (buys.media_buys as Array<{ status: string }>)[0]!.status,
    'pending_creatives',
    'a reporting delay is ours: on the wire the buy keeps its published status',
  );
  h.clock.advance(HOUR);
  await h.core.simulator.tick();
  await h.core.operator.resumeReporting(id);
  const d = await h.core.deliverySource.getDelivery(id, {
    start: new Date(START).toISOString(),
    end: new Date(START + 2 * HOUR - 1000).toISOString(),
  });
  t.notOk('late' in d);
  t.ok(
    Math.abs((d as { totals: { spend: number } }).totals.spend - (26400 * 2) / 24) < 0.02,
    'the delayed hours were delivered',
  );
  await t.rejects(h.core.operator.resumeReporting(id), { code: 'INVALID_STATE' });
  await h.core.operator.delayReporting(id);
  const upd = await h.ok(
    'sales',
    'update_media_buy',
    { media_buy_id: id, updates: { status: 'active' } },
    c,
  );
  t.equal(upd.media_buy_status, 'active');
  await h.ok('sales', 'update_media_buy', { media_buy_id: id, updates: { status: 'paused' } }, c);
  await t.rejects(h.core.operator.delayReporting(id), { code: 'INVALID_STATE' });
});
