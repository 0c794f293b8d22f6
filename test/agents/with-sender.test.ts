/**
 * The agents over the real sender: NotificationCore (outbox, BullMQ worker, RFC 9421
 * signing) and MediaBuyChannels fed by the agents' delivery simulator. A buyer receiver
 * on 127.0.0.1 gets the task webhooks and a delivery report with real numbers, and
 * get_media_buys reads webhook_activity from the sender's activity log.
 */
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { NotificationCore } from '../../sender/core/notification-core.js';
import { MediaBuyChannels } from '../../sender/channels/media-buy-channels.js';
import { createAgentsCore, type AgentsCore } from '../../agents/service.js';
import { ManualClock } from '../../agents/runtime/clock.js';
import type { AgentNotifications } from '../../agents/runtime/types.js';
import { testDatabase } from '../helpers/db.js';
import { senderHarness, startReceiver } from '../sender/harness.js';

const START = Date.parse('2026-03-02T10:00:00Z');
const profile = brandProfile('svc');

t.test('create_media_buy webhooks and reporting through the real sender', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const clock = new ManualClock(START);
  let agents: AgentsCore | null = null;
  const channels = new MediaBuyChannels({
    pool: h.pool,
    schema: h.schema,
    sink: h.outbox,
    profile,
    protocolVersion: '3.2',
    dataSource: { getDelivery: (id, period) => agents!.deliverySource.getDelivery(id, period) },
    clock: () => clock.nowMs(),
    allowHosts: ['127.0.0.1'],
  });
  await channels.migrate();
  const core = new NotificationCore({
    pool: h.pool,
    schema: h.schema,
    queue: h.queue,
    profile,
    protocolVersion: '3.2',
    allowHosts: ['127.0.0.1'],
    channels,
    sink: h.outbox,
  });
  // Compile-time check: the real core satisfies the agents' notification seam.
  const notifications: AgentNotifications = core;
  const db = testDatabase(t, 'agx');
  agents = await createAgentsCore({
    pool: db.pool,
    schema: db.schema,
    profile,
    notifications,
    clock,
    settings: { approval: 'manual', taskStepMs: 1000, webhookActivity: h.activity },
  });
  h.startWorker();
  const creds = {
    apiKey: (await agents.demoCredentials()).find(
      (c) => c.agent === 'sales' && c.principal_id === 'demo-buyer',
    )!.api_key,
  };

  const context = { correlation_id: 'e2e-1' };
  const created = await agents.dispatcher.invoke({
    agent: 'sales',
    task: 'create_media_buy',
    transport: 'mcp',
    credentials: creds,
    params: {
      buyer_ref: 'e2e',
      brand_manifest: { url: 'https://acme.example' },
      packages: [
        {
          buyer_ref: 'p',
          product_id: 'video_olv_news',
          pricing_option_id: 'olv_news_cpm',
          budget: 4800,
        },
      ],
      start_time: { type: 'asap' },
      end_time: new Date(START + 2 * 86400_000).toISOString(),
      push_notification_config: {
        url: `${rx.url}/task`,
        operation_id: 'op_webhook_presence_explicit',
      },
      reporting_webhook: { url: `${rx.url}/reports`, reporting_frequency: 'hourly' },
      context,
    },
  });
  t.notOk(created instanceof Error, String((created as Error).message ?? ''));
  const res = created as Record<string, unknown>;
  t.equal(res.status, 'submitted');

  // A registration the sender refuses is refused with the request (INVALID_REQUEST).
  const refused = await agents.dispatcher.invoke({
    agent: 'sales',
    task: 'create_media_buy',
    transport: 'mcp',
    credentials: creds,
    params: {
      buyer_ref: 'x',
      brand_manifest: { url: 'https://acme.example' },
      packages: [],
      start_time: 'asap',
      end_time: '2030-01-01T00:00:00Z',
      push_notification_config: { url: 'http://10.0.0.1/hook', operation_id: 'o' },
    },
  });
  t.match(refused, { code: 'INVALID_REQUEST', field: 'push_notification_config.url' });

  clock.advance(1000);
  await agents.executor.runDue();
  // The submitted envelope carries no media_buy_id: the operator names the task.
  const approved = await agents.operator.approve(res.task_id as string);
  const mediaBuyId = approved.media_buy_id as string;
  t.match(mediaBuyId, /^mb_/);
  await rx.waitFor(2, 20_000);
  const tasks = rx.received
    .filter((r) => r.url.endsWith('/task'))
    .map((r) => JSON.parse(r.body.toString()));
  t.same(tasks.map((b) => b.status).sort(), ['completed', 'working']);
  for (const b of tasks) {
    t.equal(b.operation_id, 'op_webhook_presence_explicit');
    t.equal(b.task_id, res.task_id);
    t.equal(b.task_type, 'create_media_buy');
    t.same(b.context, context);
    t.match(b.idempotency_key, /^[A-Za-z0-9_.:-]{16,255}$/);
  }
  t.equal(tasks.find((b) => b.status === 'completed').result.media_buy_id, mediaBuyId);

  // Two hours on: the hourly schedule fires reports with simulated numbers.
  clock.advance(2 * 3600_000);
  await channels.tick();
  await rx.waitFor(3, 20_000);
  const report = rx.received
    .filter((r) => r.url.endsWith('/reports'))
    .map((r) => JSON.parse(r.body.toString()))[0];
  t.equal(report.task_type, 'media_buy_delivery');
  t.equal(report.result.notification_type, 'scheduled');
  const row = report.result.media_buy_deliveries[0];
  t.equal(row.media_buy_id, mediaBuyId);
  t.equal(row.status, 'active');
  t.ok(row.totals.impressions > 0 && row.totals.spend > 0, JSON.stringify(row.totals));
  t.notOk('aggregated_totals' in report.result);

  // webhook_activity through get_media_buys (the sender's log, this principal's fires).
  await h.activity.flush();
  const buys = await agents.dispatcher.invoke({
    agent: 'sales',
    task: 'get_media_buys',
    transport: 'a2a',
    credentials: creds,
    params: { media_buy_ids: [mediaBuyId], include_webhook_activity: true },
  });
  const activity = (
    (buys as Record<string, unknown>).media_buys as Array<{
      webhook_activity: Array<{ status: string }>;
    }>
  )[0]!.webhook_activity;
  t.ok(activity.length >= 1, `activity records: ${activity.length}`);
  // Attempts still in flight show as pending; none failed.
  t.ok(
    activity.some((a) => a.status === 'success'),
    JSON.stringify(activity.map((a) => a.status)),
  );
  t.ok(activity.every((a) => a.status === 'success' || a.status === 'pending'));
  // A2A transport-level registration (1.0) on the signal agent: the native Task shape.
  const signalKey = (await agents.demoCredentials()).find(
    (c) => c.agent === 'signals' && c.principal_id === 'demo-buyer',
  )!.api_key;
  const act = await agents.dispatcher.invoke({
    agent: 'signals',
    task: 'activate_signal',
    transport: 'a2a',
    credentials: { apiKey: signalKey },
    a2aPush: { version: '1.0', config: { id: 'cfg-1', url: `${rx.url}/a2a` }, contextId: 'ctx-9' },
    params: {
      signal_agent_segment_id: 'sig_adults_18_plus',
      deployments: [{ type: 'platform', platform: 'amazon-dsp' }],
    },
  });
  t.equal((act as Record<string, unknown>).status, 'working', JSON.stringify(act));
  const before = rx.received.length;
  clock.advance(15 * 60_000);
  await agents.executor.runDue();
  void before;
  for (let i = 0; i < 400 && !rx.received.some((r) => r.url.endsWith('/a2a')); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const a2a = rx.received
    .filter((r) => r.url.endsWith('/a2a'))
    .map((r) => JSON.parse(r.body.toString()));
  t.equal(a2a.length, 1);
  t.equal(a2a[0].task.status.state, 'TASK_STATE_COMPLETED');
  t.equal(a2a[0].task.contextId, 'ctx-9');
  t.equal(a2a[0].task.id, (act as Record<string, unknown>).task_id);
  const parts = a2a[0].task.artifacts[0].parts;
  t.match(parts.at(-1).data, {
    deployments: [
      { platform: 'amazon-dsp', is_live: true, activation_key: { type: 'segment_id' } },
    ],
  });
  await channels.stop();
});
