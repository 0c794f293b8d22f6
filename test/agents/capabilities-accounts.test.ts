/**
 * Capability documents (webhook_signing of supplement §7.1), get_agent_capabilities,
 * sync_accounts with notification_configs[], sync_agent_notification_configs and the
 * capabilities.changed publication.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { buyer, harness, pendingBuyId } from './support/core.js';

t.test('capability documents per agent and brand', async (t) => {
  // The published schemas spell the adcp brand (`adcp`, `adcp/webhook-signing/v1`): this
  // brand-svc document is checked against them in the adcp test below instead.
  const h = await harness(t, {
    settings: {
      brandJsonUrl: 'https://seller.example/.well-known/brand.json',
      validateResponses: 'off',
    },
  });
  const doc = await h.ok('sales', 'get_svc_capabilities', {});
  t.same(doc.supported_protocols, ['media_buy']);
  t.same(doc.webhook_signing, {
    supported: true,
    profile: 'svc/webhook-signing/v1',
    algorithms: ['ed25519', 'ecdsa-p256-sha256'],
    legacy_hmac_fallback: true,
    delivery_retry_horizon_seconds: 86400,
  });
  t.match(doc.svc, {
    idempotency: { supported: true, replay_ttl_seconds: 86400 },
    capability_changes: { capabilities_version: '1' },
  });
  // The brief-routing scope (published 3.1+): every channel the catalog sells as, its
  // countries, and the publishers whose adagents.json authorizes it (the demo publishers).
  t.same((doc.media_buy as Record<string, unknown>).portfolio, {
    publisher_domains: ['sportsnetwork.example', 'dailynews.example', 'citybillboards.example'],
    primary_channels: ['olv', 'ctv', 'display', 'streaming_audio', 'podcast', 'dooh'],
    primary_countries: ['US', 'CA'],
  });
  const wholesale = await h.ok('sales', 'get_products', { buying_mode: 'wholesale' }, buyer(h));
  const declared = new Set(
    (doc.media_buy as { portfolio: { primary_channels: string[] } }).portfolio.primary_channels,
  );
  t.ok(
    (wholesale.products as Array<{ channels: string[] }>).every((p) =>
      p.channels.every((c) => declared.has(c)),
    ),
    'no product contradicts the declared channel scope',
  );
  t.match(doc.media_buy, {
    reporting_capabilities: { windowed_pull_granularities: ['hourly'] },
    reporting_delivery_methods: ['webhook'],
    relationship_notifications: {
      supported: true,
      registration_task: 'sync_accounts',
      event_types: ['creative.assignment_changed'],
      repair_tasks: ['get_media_buys'],
    },
  });
  // Published: the account block names its billing parties and only account lifecycle events.
  t.match(doc.account, {
    supported_billing: ['operator', 'agent'],
    notifications: { event_types: ['account.status_changed'] },
  });
  t.notOk('sandbox' in (doc.account as object), 'no sandbox accounts unless the controller is on');
  t.notOk('compliance_testing' in doc, 'no test controller by default');
  t.match(doc.ext, { impairment_notifications: { registration_task: 'create_media_buy' } });
  t.same(doc.identity, {
    brand_json_url: 'https://seller.example/.well-known/brand.json',
    per_principal_key_isolation: false,
  });
  t.ok((doc.tasks as string[]).includes('create_media_buy'));
  t.same((await h.ok('signals', 'get_svc_capabilities', {})).supported_protocols, ['signals']);
  t.same((await h.ok('creative', 'get_svc_capabilities', {})).supported_protocols, ['creative']);
  t.equal(
    (await h.err('sales', 'get_adcp_capabilities', {})).code,
    'UNSUPPORTED_FEATURE',
    'the brand decides the task name',
  );

  const agentCaps = await h.ok('sales', 'get_agent_capabilities', {});
  t.equal((agentCaps.coalescence_windows as Record<string, number>).impairment, 300);
  t.ok(
    (agentCaps.tasks as Array<{ name: string; async: boolean }>).some(
      (x) => x.name === 'create_media_buy' && x.async,
    ),
  );
});

t.test('adcp brand and 3.1: branded names switch, no retry horizon', async (t) => {
  const h = await harness(t, {
    profile: brandProfile('adcp'),
    settings: { protocolVersion: '3.1' },
  });
  const doc = await h.ok('sales', 'get_adcp_capabilities', {});
  t.match(doc.webhook_signing, { profile: 'adcp/webhook-signing/v1' });
  t.notOk('delivery_retry_horizon_seconds' in (doc.webhook_signing as object));
  t.ok(doc.adcp);
  t.notOk('identity' in doc, 'no https brand.json configured: no identity block');
  // The harness validates every response against both published releases (strict).
  for (const agent of ['creative', 'signals'] as const) {
    t.same((await h.ok(agent, 'get_adcp_capabilities', {})).supported_protocols, [agent]);
  }
});

// Account subscribers for creative.status_changed (supplement) are outside the published
// account notification enum: these responses are not published-schema checked (agents-schemas
// owns sync_accounts; reported in agents-coord.md).
const unchecked = { settings: { validateResponses: 'off' as const } };

t.test('sync_accounts: replacement semantics and account events', async (t) => {
  const h = await harness(t, unchecked);
  const c = buyer(h);
  const cfg = (id: string, types = ['creative.status_changed']) => ({
    subscriber_id: id,
    url: `https://buyer.example/acct/${id}`,
    event_types: types,
  });
  const first = await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [
        {
          name: 'Acme',
          brand: { domain: 'acme.example' },
          notification_configs: [
            cfg('s1'),
            {
              ...cfg('s2'),
              active: false,
              authentication: { schemes: ['Bearer'], credentials: 'b'.repeat(40) },
            },
          ],
        },
      ],
    },
    c,
  );
  const acct = (first.accounts as Array<Record<string, unknown>>)[0]!;
  t.equal(acct.action, 'created');
  t.match(acct.account_id, /^acct_/);
  const echoed = acct.notification_configs as Array<Record<string, unknown>>;
  t.same(echoed[1]!.authentication, { schemes: ['Bearer'] }, 'credentials are write-only');
  // Omitted configs: unchanged.
  const same = await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [{ name: 'Acme', brand: { domain: 'acme.example' } }],
    },
    c,
  );
  t.equal(
    (same.accounts as Array<{ action: string; notification_configs: unknown[] }>)[0]!.action,
    'unchanged',
  );
  t.equal(
    (same.accounts as Array<{ notification_configs: unknown[] }>)[0]!.notification_configs.length,
    2,
  );

  // An account event reaches only active subscribers of that type.
  const CREATIVE = 'http://127.0.0.1:3002';
  await h.ok(
    'sales',
    'sync_creatives',
    {
      creatives: [
        {
          creative_id: 'cr1',
          name: 'n',
          format_id: { agent_url: CREATIVE, id: 'display_300x250' },
          assets: {
            image: { asset_type: 'image', url: 'https://x.example/i.png' },
            click_url: { asset_type: 'url', url: 'https://x.example' },
          },
        },
      ],
    },
    c,
  );
  const events = h.notifications.of('accountNotification');
  t.equal(events.length, 1);
  t.equal(events[0]!.notificationType, 'creative.status_changed');
  t.same(
    events[0]!.configs.map((x) => (x as { subscriber_id: string }).subscriber_id),
    ['s1'],
  );
  t.match(events[0]!.fields, {
    account_id: acct.account_id,
    creative_id: 'cr1',
    transition: { to: 'approved' },
  });

  // Assignment changes go to subscribers of creative.assignment_changed.
  await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [
        {
          name: 'Acme',
          brand: { domain: 'acme.example' },
          notification_configs: [cfg('s1'), cfg('s5', ['creative.assignment_changed'])],
        },
      ],
    },
    c,
  );
  const created = await h.ok(
    'sales',
    'create_media_buy',
    {
      buyer_ref: 'acct-buy',
      brand_manifest: { url: 'https://acme.example' },
      packages: [
        {
          buyer_ref: 'p',
          product_id: 'display_run_of_network',
          pricing_option_id: 'ron_display_auction',
          budget: 500,
          bid_price: 3,
        },
      ],
      start_time: { type: 'asap' },
      end_time: '2030-01-01T00:00:00Z',
    },
    c,
  );
  const buyId = await pendingBuyId(h, created.task_id);
  const pkg = (
    (await h.ok('sales', 'get_media_buys', { media_buy_ids: [buyId] }, c)).media_buys as Array<{
      packages: Array<{ package_id: string }>;
    }>
  )[0]!.packages[0]!.package_id;
  await h.ok(
    'sales',
    'sync_creatives',
    {
      creatives: [
        {
          creative_id: 'cr1',
          name: 'n',
          format_id: { agent_url: CREATIVE, id: 'display_300x250' },
          assets: {
            image: { asset_type: 'image', url: 'https://x.example/i.png' },
            click_url: { asset_type: 'url', url: 'https://x.example' },
          },
        },
      ],
      assignments: { cr1: [pkg] },
    },
    c,
  );
  const assigned = h.notifications
    .of('accountNotification')
    .filter((e) => e.notificationType === 'creative.assignment_changed');
  t.equal(assigned.length, 1);
  t.same(
    assigned[0]!.configs.map((x) => (x as { subscriber_id: string }).subscriber_id),
    ['s5'],
  );
  t.match(assigned[0]!.fields, { creative_id: 'cr1', package_ids: [pkg] });

  // [] clears.
  const cleared = await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [{ name: 'Acme', brand: { domain: 'acme.example' }, notification_configs: [] }],
    },
    c,
  );
  t.equal(
    (cleared.accounts as Array<{ action: string; notification_configs: unknown[] }>)[0]!.action,
    'updated',
  );
  t.same(
    (cleared.accounts as Array<{ notification_configs: unknown[] }>)[0]!.notification_configs,
    [],
  );

  // Malformed sets fail whole.
  const dup = await h.err(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [{ name: 'Acme', notification_configs: [cfg('s1'), cfg('s1')] }],
    },
    c,
  );
  t.equal(dup.field, 'accounts[0].notification_configs[1].subscriber_id');
  const wrongSurface = await h.err(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [{ name: 'Acme', notification_configs: [cfg('s3', ['capabilities.changed'])] }],
    },
    c,
  );
  t.equal(wrongSurface.field, 'accounts[0].notification_configs[0].event_types[0]');
  const badUrl = await h.err(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [{ name: 'Acme', notification_configs: [{ ...cfg('s4'), url: 'ftp://x' }] }],
    },
    c,
  );
  t.equal(badUrl.field, 'accounts[0].notification_configs[0].url');
  const badId = await h.err(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [
        { name: 'Acme', notification_configs: [{ ...cfg('s4'), subscriber_id: 'has space' }] },
      ],
    },
    c,
  );
  t.equal(badId.code, 'VALIDATION_ERROR');
});

t.test('agent-level configs and capabilities.changed', async (t) => {
  // get_svc_capabilities below: brand svc (see the first test).
  const h = await harness(t, unchecked);
  const configs = [
    {
      subscriber_id: 'caps-1',
      url: 'https://buyer.example/caps',
      event_types: ['capabilities.changed'],
    },
    {
      subscriber_id: 'caps-2',
      url: 'https://buyer.example/caps2',
      event_types: ['capabilities.changed'],
      active: false,
    },
  ];
  const r = await h.ok(
    'signals',
    'sync_agent_notification_configs',
    { notification_configs: configs },
    buyer(h, 'signals'),
  );
  t.equal(r.capabilities_version, '1');
  t.equal(r.action, 'updated');
  t.equal((r.notification_configs as unknown[]).length, 2);
  const again = await h.ok(
    'signals',
    'sync_agent_notification_configs',
    { notification_configs: configs },
    buyer(h, 'signals'),
  );
  t.equal(again.action, 'unchanged', 'the same set again');
  const cleared = await h.ok(
    'signals',
    'sync_agent_notification_configs',
    { notification_configs: [] },
    buyer(h, 'signals'),
  );
  t.equal(cleared.action, 'cleared');
  await h.ok(
    'signals',
    'sync_agent_notification_configs',
    { notification_configs: configs },
    buyer(h, 'signals'),
  );
  t.equal(
    (
      await h.err(
        'signals',
        'sync_agent_notification_configs',
        { notification_configs: [{ ...configs[0], event_types: ['creative.status_changed'] }] },
        buyer(h, 'signals'),
      )
    ).code,
    'VALIDATION_ERROR',
  );

  const published = await h.core.publishCapabilitiesChange('signals', 'new deployment platform', [
    'signals.platforms',
  ]);
  t.same(published, { capabilities_version: '2', subscribers: 1 });
  const ev = h.notifications.of('agentEvent');
  t.equal(ev.length, 1);
  t.equal(ev[0]!.capabilitiesVersion, '2');
  t.equal(ev[0]!.agentUrl, 'http://127.0.0.1:3003');
  t.same(
    ev[0]!.configs.map((x) => (x as { subscriber_id: string }).subscriber_id),
    ['caps-1'],
  );
  // The snapshot is published before the event: the document already says 2.
  const doc = await h.ok('signals', 'get_svc_capabilities', {});
  t.equal(
    (doc.svc as { capability_changes: { capabilities_version: string } }).capability_changes
      .capabilities_version,
    '2',
  );
  // The sales agent has no subscribers: nothing fires.
  t.same(await h.core.publishCapabilitiesChange('sales', 'x'), {
    capabilities_version: '2',
    subscribers: 0,
  });
  t.equal(h.notifications.of('agentEvent').length, 1);
});

t.test('list_accounts reads back the principal accounts only', async (t) => {
  const h = await harness(t, unchecked);
  await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [
        {
          account_id: 'a-1',
          name: 'One',
          notification_configs: [
            {
              subscriber_id: 's',
              url: 'https://b.example/x',
              event_types: ['account.status_changed'],
              authentication: { schemes: ['HMAC-SHA256'], credentials: 'k'.repeat(32) },
            },
          ],
        },
        { account_id: 'a-2', name: 'Two' },
      ],
    },
    buyer(h),
  );
  const all = await h.ok('sales', 'list_accounts', {}, buyer(h));
  t.same(
    (all.accounts as Array<{ account_id: string }>).map((a) => a.account_id),
    ['a-1', 'a-2'],
  );
  t.same(
    (all.accounts as Array<{ notification_configs: Array<{ authentication: unknown }> }>)[0]!
      .notification_configs[0]!.authentication,
    { schemes: ['HMAC-SHA256'] },
  );
  const one = await h.ok('sales', 'list_accounts', { account_ids: ['a-2'] }, buyer(h));
  t.equal((one.accounts as unknown[]).length, 1);
  // The published exact filter: one account by account_id or by its natural key.
  const ids = async (params: Record<string, unknown>) =>
    (
      (await h.ok('sales', 'list_accounts', params, buyer(h))).accounts as Array<{
        account_id: string;
      }>
    ).map((a) => a.account_id);
  t.same(await ids({ account: { account_id: 'a-2' }, status: 'active' }), ['a-2']);
  t.same(await ids({ account: { account_id: 'a-2' }, account_ids: ['a-1'] }), [], 'both narrow');
  t.same(await ids({ account: { account_id: 'nope' } }), []);
  t.same(await ids({ status: 'closed' }), [], 'by status');
  const natural = await h.ok(
    'sales',
    'sync_accounts',
    {
      idempotency_key: randomUUID(),
      accounts: [{ brand: { domain: 'acme.example' }, operator: 'agency.example' }],
    },
    buyer(h),
  );
  const naturalId = (natural.accounts as Array<{ account_id: string }>)[0]!.account_id;
  t.same(
    await ids({ account: { brand: { domain: 'acme.example' }, operator: 'agency.example' } }),
    [naturalId],
    'by natural key',
  );
  for (const [name, params, field] of [
    ['account not an object', { account: 'a-1' }, 'account'],
    ['account_id empty', { account: { account_id: '' } }, 'account'],
    ['status outside the enum', { status: 'sleeping' }, 'status'],
  ] as const) {
    const e = await h.err('sales', 'list_accounts', params, buyer(h));
    t.equal(e.code, 'VALIDATION_ERROR', name);
    t.match(e.field ?? '', new RegExp(`^${field}`), name);
  }
  const other = await h.core.issueToken('sales', 'other', {});
  t.same(
    (await h.ok('sales', 'list_accounts', {}, { authorization: `Bearer ${other}` })).accounts,
    [],
  );
});
