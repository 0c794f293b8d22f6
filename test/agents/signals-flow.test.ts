/**
 * The typical signal flow: get_signals, activate_signal (async, webhooks), then the
 * activation key in media buy targeting.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { buyer, harness, START } from './support/core.js';

const SALES = 'http://127.0.0.1:3001';

t.test('discover, activate, target', async (t) => {
  const h = await harness(t);
  const c = buyer(h, 'signals');
  const ttd = { type: 'platform', platform: 'the-trade-desk' };
  const salesTarget = { type: 'agent', agent_url: SALES };

  const found = await h.ok(
    'signals',
    'get_signals',
    {
      signal_spec: 'luxury car buyers in market',
      deliver_to: { deployments: [ttd, salesTarget], countries: ['US'] },
    },
    c,
  );
  const signals = found.signals as Array<Record<string, unknown>>;
  t.equal(signals[0]!.signal_agent_segment_id, 'sig_luxury_auto_intenders');
  t.equal(signals[0]!.coverage_percentage, 1);
  t.same(signals[0]!.pricing, { cpm: 4, currency: 'USD' });
  const deps = signals[0]!.deployments as Array<Record<string, unknown>>;
  t.same(
    deps.map((d) => d.is_live),
    [false, false],
  );
  t.same(
    deps.map((d) => d.estimated_activation_duration_minutes),
    [60, 60],
  );

  const live = await h.ok(
    'signals',
    'get_signals',
    { signal_spec: 'sports fans', deliver_to: { deployments: [ttd], countries: ['US'] } },
    c,
  );
  const sports = (live.signals as Array<Record<string, unknown>>)[0]!;
  t.equal(sports.signal_agent_segment_id, 'sig_sports_enthusiasts');
  t.match((sports.deployments as unknown[])[0], {
    is_live: true,
    activation_key: { type: 'segment_id' },
  });

  // Filters: catalog types, providers, CPM, coverage, countries, owner visibility.
  const owned = await h.ok(
    'signals',
    'get_signals',
    {
      signal_spec: 'anything',
      deliver_to: { deployments: [ttd], countries: ['US'] },
      filters: { catalog_types: ['owned'] },
    },
    c,
  );
  t.same(
    (owned.signals as Array<{ signal_agent_segment_id: string; pricing: { cpm: number } }>).map(
      (s) => [s.signal_agent_segment_id, s.pricing.cpm],
    ),
    [['sig_demo_buyer_site_visitors', 0]],
  );
  const broad = await h.ok(
    'signals',
    'get_signals',
    {
      signal_spec: 'x',
      deliver_to: { deployments: [ttd], countries: ['GB'] },
      filters: { min_coverage_percentage: 90, max_cpm: 1 },
    },
    c,
  );
  t.same(
    (broad.signals as Array<{ signal_agent_segment_id: string }>).map(
      (s) => s.signal_agent_segment_id,
    ),
    ['sig_adults_18_plus'],
  );
  const meridian = await h.ok(
    'signals',
    'get_signals',
    {
      signal_spec: 'x',
      deliver_to: { deployments: [ttd], countries: ['US'] },
      filters: { data_providers: ['Meridian Data'] },
      max_results: 1,
    },
    c,
  );
  t.equal((meridian.signals as unknown[]).length, 1);
  // A principal the signals agent knows (an unknown one has no signal access at all).
  await h.core.onboardPrincipal({
    agent: 'signals',
    principalId: 'stranger',
    permissions: { products: ['read'] },
  });
  const other = await h.core.issueToken('signals', 'stranger', { products: ['read'] });
  const strangers = await h.ok(
    'signals',
    'get_signals',
    {
      signal_spec: 'loyalty members',
      deliver_to: { deployments: [ttd], countries: ['US'] },
      filters: { catalog_types: ['custom', 'owned'] },
    },
    { authorization: `Bearer ${other}` },
  );
  t.same(strangers.signals, [], 'custom and owned signals are private to their principal');

  // One refused target refuses the activation (the published success carries no errors),
  // naming every refused target at once.
  const refused = await h.err(
    'signals',
    'activate_signal',
    {
      signal_agent_segment_id: 'sig_luxury_auto_intenders',
      deployments: [
        ttd,
        { type: 'platform', platform: 'dv360', account: 'not-mine' },
        { type: 'platform', platform: 'nowhere' },
      ],
    },
    c,
  );
  t.equal(refused.code, 'DEPLOYMENT_UNAUTHORIZED');
  t.same(
    (refused as unknown as { items: Array<{ field: string }> }).items.map((e) => e.field),
    ['deployments[1].account', 'deployments[2].platform'],
  );

  // Activate on a platform and on the sales agent (older `deployments` form).
  const context = { correlation_id: 'sig-1' };
  const push = { url: 'https://buyer.example/hooks/signals', operation_id: 'op-activate-1' };
  const act = await h.ok(
    'signals',
    'activate_signal',
    {
      signal_agent_segment_id: 'sig_luxury_auto_intenders',
      deployments: [ttd, salesTarget],
      push_notification_config: push,
      context,
    },
    c,
  );
  t.equal(act.status, 'working');
  t.match(act.task_id, /^task_/);
  t.same(
    (act.deployments as Array<Record<string, unknown>>).map((d) => [
      d.is_live,
      d.estimated_activation_duration_minutes,
    ]),
    [
      [false, 60],
      [false, 60],
    ],
  );
  t.notOk('errors' in act, 'a successful activation carries no errors member');
  t.same(h.notifications.calls, [], 'initial response inline only');

  // In progress: a second activation is refused; get_signals shows the remaining time.
  const twice = await h.err(
    'signals',
    'activate_signal',
    { signal_agent_segment_id: 'sig_luxury_auto_intenders', deployments: [ttd] },
    c,
  );
  t.equal(twice.code, 'ALREADY_ACTIVATED');
  h.clock.advance(30 * 60_000);
  t.equal(await h.core.executor.runDue(), 0);
  const half = await h.ok(
    'signals',
    'get_signals',
    { signal_spec: 'luxury auto', deliver_to: { deployments: [ttd], countries: ['US'] } },
    c,
  );
  t.match((half.signals as Array<{ deployments: unknown[] }>)[0]!.deployments[0], {
    is_live: false,
    estimated_activation_duration_minutes: 30,
  });

  h.clock.advance(30 * 60_000);
  t.equal(await h.core.executor.runDue(), 1);
  const changes = h.notifications.of('taskStatusChanged');
  t.same(
    changes.map((x) => x.status),
    ['completed'],
    'working -> completed: one webhook',
  );
  t.equal(changes[0]!.taskType, 'activate_signal');
  t.equal(changes[0]!.initialStatus, 'working');
  t.same(changes[0]!.context, context);
  t.same(changes[0]!.pushNotificationConfig, push);
  const result = changes[0]!.result as { deployments: Array<Record<string, unknown>> };
  t.match(result.deployments, [
    {
      type: 'platform',
      platform: 'the-trade-desk',
      is_live: true,
      activation_key: { type: 'segment_id' },
    },
    {
      type: 'agent',
      agent_url: SALES,
      is_live: true,
      activation_key: { type: 'key_value', key: 'svc_signal', value: 'sig_luxury_auto_intenders' },
    },
  ]);
  t.ok(result.deployments.every((d) => typeof d.deployed_at === 'string'));
  t.notOk('errors' in result);
  const polled = await h.ok('signals', 'get_task_status', { task_id: act.task_id }, c);
  t.equal(polled.status, 'completed');

  // Reference the key_value activation key in media buy targeting.
  const key = result.deployments[1]!.activation_key as { key: string; value: string };
  const created = await h.ok(
    'sales',
    'create_media_buy',
    {
      buyer_ref: 'with-signal',
      brand_manifest: { url: 'https://acme.example' },
      packages: [
        {
          buyer_ref: 'p',
          product_id: 'video_olv_news',
          pricing_option_id: 'olv_news_cpm',
          budget: 2000,
          targeting_overlay: { key_value_pairs: [{ key: key.key, value: key.value }] },
        },
      ],
      start_time: { type: 'asap' },
      end_time: new Date(START + 86400_000 * 3).toISOString(),
    },
    buyer(h),
  );
  t.ok(created.task_id ?? created.media_buy_id, 'the buy was accepted');
  const buys = await h.ok('sales', 'get_media_buys', { buyer_refs: ['with-signal'] }, buyer(h));
  t.match(buys.media_buys, [
    {
      packages: [
        {
          targeting_overlay: {
            key_value_pairs: [{ key: 'svc_signal', value: 'sig_luxury_auto_intenders' }],
          },
        },
      ],
    },
  ]);
});

t.test('published request forms, pagination, pricing options, deactivation', async (t) => {
  const h = await harness(t);
  const c = buyer(h, 'signals');
  const ttd = { type: 'platform', platform: 'the-trade-desk' };
  const found = await h.ok(
    'signals',
    'get_signals',
    { signal_spec: 'luxury car buyers in market', destinations: [ttd], countries: ['US'] },
    c,
  );
  const first = (found.signals as Array<Record<string, unknown>>)[0]!;
  t.same(first.signal_id, {
    source: 'agent',
    agent_url: 'http://127.0.0.1:3003',
    id: 'sig_luxury_auto_intenders',
  });
  t.same(first.pricing_options, [
    { pricing_option_id: 'sig_luxury_auto_intenders_cpm', model: 'cpm', cpm: 4, currency: 'USD' },
  ]);
  t.equal(found.cache_scope, 'public');
  t.match(found.pagination, { has_more: false, total_count: (found.signals as unknown[]).length });
  t.notOk('cursor' in (found.pagination as object), 'no cursor on the last page');

  // No destinations and no countries: every signal, in pages.
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await h.ok(
      'signals',
      'get_signals',
      { pagination: { max_results: 2, ...(cursor ? { cursor } : {}) } },
      c,
    );
    const p = page.pagination as { has_more: boolean; cursor?: string; total_count: number };
    seen.push(
      ...(page.signals as Array<{ signal_agent_segment_id: string; deployments: unknown[] }>).map(
        (x) => x.signal_agent_segment_id,
      ),
    );
    t.equal(p.has_more, p.cursor !== undefined, 'cursor exactly when has_more');
    cursor = p.cursor;
    pages++;
  } while (cursor && pages < 10);
  t.ok(pages >= 2, 'more than one page');
  t.equal(new Set(seen).size, seen.length, 'no signal twice across pages');
  const byId = await h.ok(
    'signals',
    'get_signals',
    { signal_ids: [{ source: 'agent', agent_url: 'x', id: 'sig_sports_enthusiasts' }] },
    c,
  );
  t.same(
    (byId.signals as Array<{ signal_agent_segment_id: string }>).map(
      (x) => x.signal_agent_segment_id,
    ),
    ['sig_sports_enthusiasts'],
  );

  // Malformed: each names its field.
  const bad: Array<[string, string, unknown, string, string]> = [
    [
      'both forms',
      'get_signals',
      {
        signal_spec: 'x',
        destinations: [ttd],
        deliver_to: { deployments: [ttd], countries: ['US'] },
      },
      'VALIDATION_ERROR',
      'deliver_to',
    ],
    [
      'bad country',
      'get_signals',
      { signal_spec: 'x', countries: ['usa'] },
      'VALIDATION_ERROR',
      'countries[0]',
    ],
    [
      'bad destination',
      'get_signals',
      { signal_spec: 'x', destinations: [{ type: 'dsp' }] },
      'VALIDATION_ERROR',
      'destinations[0].type',
    ],
    [
      'unknown platform',
      'get_signals',
      { signal_spec: 'x', destinations: [{ type: 'platform', platform: 'nowhere' }] },
      'DEPLOYMENT_UNAUTHORIZED',
      'destinations[0].platform',
    ],
    [
      'forged cursor',
      'get_signals',
      { signal_spec: 'x', pagination: { cursor: 'not-a-cursor' } },
      'VALIDATION_ERROR',
      'pagination.cursor',
    ],
    [
      'page too big',
      'get_signals',
      { signal_spec: 'x', pagination: { max_results: 1000 } },
      'VALIDATION_ERROR',
      'pagination.max_results',
    ],
    [
      'no targets',
      'activate_signal',
      { signal_agent_segment_id: 'sig_sports_enthusiasts' },
      'VALIDATION_ERROR',
      'destinations',
    ],
    [
      'both target forms',
      'activate_signal',
      {
        signal_agent_segment_id: 'sig_sports_enthusiasts',
        destinations: [ttd],
        deployments: [ttd],
      },
      'VALIDATION_ERROR',
      'destinations',
    ],
    [
      'unknown pricing option',
      'activate_signal',
      {
        idempotency_key: randomUUID(),
        signal_agent_segment_id: 'sig_luxury_auto_intenders',
        destinations: [ttd],
        pricing_option_id: 'nope',
      },
      'VALIDATION_ERROR',
      'pricing_option_id',
    ],
    [
      'bad action',
      'activate_signal',
      {
        idempotency_key: randomUUID(),
        signal_agent_segment_id: 'sig_luxury_auto_intenders',
        destinations: [ttd],
        action: 'pause',
      },
      'VALIDATION_ERROR',
      'action',
    ],
  ];
  for (const [name, task, params, code, field] of bad) {
    const e = await h.err('signals', task, params, c);
    t.equal(e.code, code, `${name}: code`);
    t.equal(e.field, field, `${name}: field ${e.field}`);
  }

  // Published activation: destinations + pricing option; then deactivation.
  const act = await h.ok(
    'signals',
    'activate_signal',
    {
      signal_agent_segment_id: 'sig_luxury_auto_intenders',
      destinations: [ttd],
      pricing_option_id: 'sig_luxury_auto_intenders_cpm',
      idempotency_key: 'act-published-0001',
    },
    c,
  );
  t.equal(act.status, 'working');
  t.match(act.deployments, [{ type: 'platform', platform: 'the-trade-desk', is_live: false }]);
  const off = await h.ok(
    'signals',
    'activate_signal',
    {
      signal_agent_segment_id: 'sig_luxury_auto_intenders',
      action: 'deactivate',
      destinations: [ttd],
      idempotency_key: 'act-published-0002',
    },
    c,
  );
  t.equal(off.status, 'completed');
  t.same(off.deployments, [{ type: 'platform', platform: 'the-trade-desk', is_live: false }]);
  const after = await h.ok(
    'signals',
    'get_signals',
    { signal_ids: [{ id: 'sig_luxury_auto_intenders' }], destinations: [ttd] },
    c,
  );
  t.match((after.signals as Array<{ deployments: unknown[] }>)[0]!.deployments, [
    { is_live: false, estimated_activation_duration_minutes: 60 },
  ]);
  // Activating again works once the destination is clear.
  await h.ok(
    'signals',
    'activate_signal',
    {
      signal_agent_segment_id: 'sig_luxury_auto_intenders',
      destinations: [ttd],
      idempotency_key: 'act-published-0003',
    },
    c,
  );
});
