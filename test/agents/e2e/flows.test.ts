/**
 * The spec's typical flows end to end against `startAgentsService` (real Koa servers on
 * 127.0.0.1, PostgreSQL, Redis, the sender's worker) with the official client SDKs over
 * MCP and A2A; task webhooks (MCP-shape from push_notification_config, A2A-shape from the
 * transport config of both versions) received and RFC 9421-verified by our receiver.
 */
import t from 'tap';
import { AgentClient } from '../../../agents/client/agent-client.js';
import { buyerReceiver, startService } from './support.js';

const DAY = 86400_000;

function buy(
  service: { core: { clock: { nowMs(): number } } },
  extra: Record<string, unknown> = {},
) {
  return {
    buyer_ref: `e2e-${Math.random().toString(36).slice(2)}`,
    brand_manifest: { url: 'https://acme.example' },
    packages: [
      {
        buyer_ref: 'pkg-ctv',
        product_id: 'ctv_premium_sports',
        pricing_option_id: 'ctv_sports_cpm',
        budget: 24000,
      },
    ],
    start_time: { type: 'asap' },
    end_time: new Date(service.core.clock.nowMs() + 30 * DAY).toISOString(),
    ...extra,
  };
}

t.test('sales flow over MCP and A2A with verified webhooks', async (t) => {
  const { service } = await startService(t);
  const { urls } = service;
  const rx = await buyerReceiver(t, `${urls.sales}/.well-known/jwks.json`);
  // A2A-shaped webhooks go to a second receiver: one receiver converges terminal results
  // of a task across channels, and the two shapes of one result differ (409 by design).
  const rxA2a = await buyerReceiver(t, `${urls.sales}/.well-known/jwks.json`);
  const key = service.credentials.find(
    (c) => c.agent === 'sales' && c.principal_id === 'demo-buyer',
  )!.api_key;

  // MCP: get_products -> list_creative_formats -> create_media_buy -> approve -> sync -> delivery.
  const mcp = new AgentClient({ agentUrl: urls.sales, apiKey: key });
  t.teardown(() => mcp.close());
  const products = await mcp.call('get_products', {
    brief: 'sports fans on connected TV',
    brand_manifest: { url: 'https://acme.example' },
  });
  t.ok((products.body.products as unknown[]).length > 0);
  const formats = await mcp.call('list_creative_formats', { format_types: ['video'] });
  const format = (
    formats.body.formats as Array<{ format_id: { agent_url: string; id: string } }>
  )[0]!;
  t.equal(format.format_id.agent_url, urls.creative, 'formats point at the creative agent');

  const context = { correlation_id: 'mcp-flow' };
  const created = await mcp.call(
    'create_media_buy',
    buy(service, {
      push_notification_config: { url: `${rx.url}/hooks/mcp`, operation_id: 'op-mcp-1' },
      context,
    }),
  );
  t.equal(created.status, 'submitted');
  t.notOk('media_buy_id' in created.body, 'the published submitted envelope has no buy');
  await rx.waitFor((e) => e.some((x) => x.operationId === 'op-mcp-1' && x.status === 'working'));
  // The operator names the create task (the buyer's handle); the buy comes back.
  const mediaBuyId = (await service.core.operator.approve(created.taskId!)).media_buy_id as string;
  await rx.waitFor((e) => e.some((x) => x.operationId === 'op-mcp-1' && x.status === 'completed'));
  const mine = rx.events.filter((x) => x.operationId === 'op-mcp-1');
  t.ok(
    mine.every((x) => x.format === 'mcp' && x.sender === 'seller'),
    'verified, MCP shape',
  );
  t.ok(mine.every((x) => x.taskId === created.taskId));
  const done = mine.find((x) => x.status === 'completed')!.payload as Record<string, unknown>;
  t.same(done.context, context, 'context echoed');
  const polled = await mcp.getTask(created.taskId!);
  t.equal(polled.body.status, 'completed');

  // The buy's packages arrive on the task's completion result (the webhook's `result`).
  const pkg = (done.result as { packages: Array<{ package_id: string }> }).packages[0]!;
  const synced = await mcp.call('sync_creatives', {
    creatives: [
      {
        creative_id: 'e2e-spot',
        name: 'Spot',
        format_id: { agent_url: urls.creative, id: 'video_ctv_30s' },
        assets: {
          video: { asset_type: 'video', url: 'https://cdn.acme.example/s.mp4', duration_ms: 30000 },
          click_url: { asset_type: 'url', url: 'https://acme.example/' },
        },
      },
    ],
    assignments: { 'e2e-spot': [pkg.package_id] },
  });
  t.equal(synced.ok, true, JSON.stringify(synced.body));
  const delivery = await mcp.call('get_media_buy_delivery', { media_buy_id: mediaBuyId });
  t.equal(delivery.ok, true, JSON.stringify(delivery.body));

  // A2A, both versions: AdCP push config in the parameters and the A2A transport config.
  for (const version of ['1.0', '0.3'] as const) {
    const a2a = new AgentClient({
      agentUrl: urls.sales,
      transport: 'a2a',
      a2aVersion: version,
      apiKey: key,
    });
    const op = `op-a2a-${version}`;
    const res = await a2a.call(
      'create_media_buy',
      buy(service, { push_notification_config: { url: `${rx.url}/hooks/adcp`, operation_id: op } }),
      {
        a2aPushConfig: {
          url: `${rxA2a.url}/hooks/a2a-${version}`,
          id: `cfg-${version}`,
          token: 'tok-123456',
        },
      },
    );
    t.equal(res.status, 'submitted', `${version}: submitted`);
    await rx.waitFor((e) => e.some((x) => x.operationId === op && x.status === 'working'));
    await rxA2a.waitFor((e) =>
      e.some((x) => x.format === 'a2a' && x.taskId === res.taskId && x.status === 'working'),
    );
    await service.core.operator.approve(res.taskId as string);
    await rxA2a.waitFor((e) =>
      e.some((x) => x.format === 'a2a' && x.taskId === res.taskId && x.status === 'completed'),
    );
    await rx.waitFor((e) => e.some((x) => x.operationId === op && x.status === 'completed'));
    const a2aEvents = rxA2a.events.filter((x) => x.format === 'a2a' && x.taskId === res.taskId);
    const body = JSON.stringify(a2aEvents.map((e) => e.payload));
    if (version === '1.0') t.match(body, /TASK_STATE_COMPLETED/, '1.0 state names');
    else t.match(body, /"state":"completed"/, '0.3 state names');
    const polledA2a = await a2a.getTask(res.taskId!);
    t.equal(polledA2a.status, 'completed', `${version}: tasks/get`);
    await a2a.close();
  }
});

t.test('creative flow over A2A 0.3, signal flow over MCP with a webhook', async (t) => {
  const { service } = await startService(t, { SVC_AGENTS_CLOCK_SPEED: '3600' });
  const { urls } = service;
  const rx = await buyerReceiver(t, `${urls.signals}/.well-known/jwks.json`);
  const cred = (agent: string) =>
    service.credentials.find((c) => c.agent === agent && c.principal_id === 'demo-buyer')!.api_key;

  const creative = new AgentClient({
    agentUrl: urls.creative,
    transport: 'a2a',
    a2aVersion: '0.3',
    apiKey: cred('creative'),
  });
  const formats = await creative.call('list_creative_formats', { type: 'display' });
  t.ok((formats.body.formats as unknown[]).length > 0);
  const built = await creative.call('build_creative', {
    target_format_id: { agent_url: urls.creative, id: 'display_300x250' },
    message: 'Run further this spring',
    brand_manifest: { name: 'Acme', url: 'https://acme.example', colors: { primary: '#ff6600' } },
  });
  t.equal(built.ok, true, JSON.stringify(built.body));
  const manifest = built.body.creative_manifest as Record<string, unknown>;
  const preview = await creative.call('preview_creative', {
    request_type: 'single',
    format_id: manifest.format_id,
    creative_manifest: manifest,
  });
  const previewUrl = (
    preview.body.previews as Array<{ renders: Array<{ preview_url: string }> }>
  )[0]!.renders[0]!.preview_url;
  t.ok(previewUrl.startsWith(`${urls.creative}/previews/`));
  const page = await fetch(previewUrl);
  t.equal(page.status, 200);
  t.match(await page.text(), /Run further this spring/);
  const sales = new AgentClient({ agentUrl: urls.sales, apiKey: cred('sales') });
  t.teardown(() => sales.close());
  const synced = await sales.call('sync_creatives', {
    creatives: [{ creative_id: 'e2e-300', name: 'Spring', ...manifest }],
  });
  t.equal(synced.ok, true);

  const signals = new AgentClient({ agentUrl: urls.signals, apiKey: cred('signals') });
  t.teardown(() => signals.close());
  const ttd = { type: 'platform', platform: 'the-trade-desk' };
  const found = await signals.call('get_signals', {
    signal_spec: 'luxury car buyers in market',
    deliver_to: { deployments: [ttd], countries: ['US'] },
  });
  const segment = (found.body.signals as Array<{ signal_agent_segment_id: string }>)[0]!;
  const act = await signals.call('activate_signal', {
    signal_agent_segment_id: segment.signal_agent_segment_id,
    deployments: [ttd],
    push_notification_config: { url: `${rx.url}/signals`, operation_id: 'op-sig-1' },
  });
  t.equal(act.status, 'working');
  await rx.waitFor((e) => e.some((x) => x.operationId === 'op-sig-1' && x.status === 'completed'));
  const result = JSON.stringify(rx.events.find((x) => x.operationId === 'op-sig-1')!.payload);
  t.match(result, /activation_key/);
  const unknown = await signals.call('activate_signal', {
    signal_agent_segment_id: 'sig_nope',
    deployments: [ttd],
  });
  t.match(unknown.body, { errors: [{ code: 'SIGNAL_AGENT_SEGMENT_NOT_FOUND' }] });
});

t.test('creative flow over MCP, signal flow over A2A 1.0 with a webhook', async (t) => {
  const { service } = await startService(t, { SVC_AGENTS_CLOCK_SPEED: '3600' });
  const { urls } = service;
  const rx = await buyerReceiver(t, `${urls.signals}/.well-known/jwks.json`);
  const cred = (agent: string) =>
    service.credentials.find((c) => c.agent === agent && c.principal_id === 'demo-buyer')!.api_key;

  const creative = new AgentClient({ agentUrl: urls.creative, apiKey: cred('creative') });
  t.teardown(() => creative.close());
  const formats = await creative.call('list_creative_formats', { type: 'display' });
  t.ok((formats.body.formats as unknown[]).length > 0, 'formats over MCP');
  const built = await creative.call('build_creative', {
    target_format_id: { agent_url: urls.creative, id: 'display_300x250' },
    message: 'Autumn sale',
    brand_manifest: { name: 'Acme', url: 'https://acme.example' },
  });
  t.equal(built.ok, true, JSON.stringify(built.body));
  const manifest = built.body.creative_manifest as Record<string, unknown>;
  const preview = await creative.call('preview_creative', {
    request_type: 'batch',
    requests: [{ format_id: manifest.format_id, creative_manifest: manifest }],
    output_format: 'html',
  });
  t.equal(preview.ok, true, JSON.stringify(preview.body));
  t.match(JSON.stringify(preview.body.results), /Autumn sale/, 'batch preview as HTML over MCP');
  const plain = await creative.call('build_creative', {
    target_format_id: 'display_300x250',
    message: 'x',
  });
  t.match(
    plain.body,
    { errors: [{ code: 'INVALID_FORMAT_ID' }] },
    'plain-string format id over MCP',
  );

  const signals = new AgentClient({
    agentUrl: urls.signals,
    transport: 'a2a',
    a2aVersion: '1.0',
    apiKey: cred('signals'),
  });
  t.teardown(() => signals.close());
  const ttd = { type: 'platform', platform: 'the-trade-desk' };
  const found = await signals.call('get_signals', {
    signal_spec: 'luxury car buyers in market',
    deliver_to: { deployments: [ttd], countries: ['US'] },
  });
  const segment = (found.body.signals as Array<{ signal_agent_segment_id: string }>)[0]!;
  const act = await signals.call('activate_signal', {
    signal_agent_segment_id: segment.signal_agent_segment_id,
    deployments: [ttd],
    push_notification_config: { url: `${rx.url}/signals`, operation_id: 'op-sig-a2a' },
  });
  t.ok(['working', 'submitted'].includes(String(act.status)), `async over A2A (${act.status})`);
  await rx.waitFor((e) =>
    e.some((x) => x.operationId === 'op-sig-a2a' && x.status === 'completed'),
  );
  const result = JSON.stringify(rx.events.find((x) => x.operationId === 'op-sig-a2a')!.payload);
  t.match(result, /activation_key/, 'the verified webhook carries the activation key');
  const unknown = await signals.call('activate_signal', {
    signal_agent_segment_id: 'sig_nope',
    deployments: [ttd],
  });
  t.match(
    JSON.stringify(unknown.body),
    /SIGNAL_AGENT_SEGMENT_NOT_FOUND/,
    'signal agent error over A2A',
  );
});
