/**
 * The channels through the real path: NotificationCore -> MediaBuyChannels -> S1's
 * PostgreSQL outbox -> BullMQ worker -> signed POST to a loopback receiver, verified with
 * the receiver-side verifier.
 */
import t from 'tap';
import { brandProfile } from '../../../shared/brand.js';
import { NotificationCore } from '../../../sender/core/notification-core.js';
import { senderHarness, startReceiver, verifyReceived } from '../harness.js';
import { impairment, outboxChannels } from './helpers.js';

const profile = brandProfile('svc');
const T0 = Date.parse('2026-03-10T10:20:00Z');

t.test('reports and impairments are delivered, signed, in the shared sender schema', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const clock = { now: T0 };
  const { channels, migrations } = await outboxChannels(h, clock);
  t.ok(migrations.includes('ch_001_registry'), 'ch_ migrations beside the outbox');
  const core = new NotificationCore({
    pool: h.pool,
    schema: h.schema,
    queue: h.queue,
    profile,
    protocolVersion: '3.2',
    allowHosts: ['127.0.0.1'],
    channels,
  });
  h.startWorker();

  await core.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_e2e',
    principalId: 'p_e2e',
    pushNotificationConfig: { url: `${rx.url}/push`, operation_id: 'op_e2e' },
    reportingWebhook: { url: `${rx.url}/reports`, reporting_frequency: 'hourly' },
  });
  const ids: string[] = [];
  ids.push(
    ...(await core.impairmentObserved({
      mediaBuyId: 'mb_e2e',
      principalId: 'p_e2e',
      impairment: impairment('imp_fraud', 'identity_authorization_revoked'),
    })),
  );
  await core.impairmentObserved({
    mediaBuyId: 'mb_e2e',
    principalId: 'p_e2e',
    impairment: impairment('imp_general'),
  });
  t.equal(
    await channels.tick(Date.parse('2026-03-10T11:00:01Z')),
    2,
    'the closed impairment window and the first hourly report',
  );
  clock.now = Date.parse('2026-03-10T11:01:00Z');
  await core.impairmentObserved({
    mediaBuyId: 'mb_e2e',
    principalId: 'p_e2e',
    impairment: impairment('imp_queued', 'source_offline'),
  });
  clock.now = Date.parse('2026-03-10T11:02:00Z');
  ids.push(
    ...(await core.mediaBuyTerminal({
      mediaBuyId: 'mb_e2e',
      principalId: 'p_e2e',
      status: 'completed',
    })),
  );
  t.equal(ids.length, 3, 'fraud now; on terminal the queued impairment, then the final');

  const { rows } = await h.pool.query<{ id: string; notification_type: string }>(
    `SELECT id::text, notification_type FROM ${h.schema}.outbox ORDER BY id`,
  );
  t.same(
    rows.map((r) => r.notification_type),
    ['impairment', 'impairment', 'scheduled', 'impairment', 'final'],
    'the outbox holds the events in enqueue order',
  );
  for (const r of rows) t.equal(await h.waitForState(r.id), 'delivered');
  await rx.waitFor(5);

  const kids: unknown[] = [];
  for (const r of rx.received) kids.push((await verifyReceived(rx, r, h.key, profile)).keyid);
  t.same([...new Set(kids)], [h.key.kid], 'every delivery verifies');
  type Body = Record<string, unknown> & { result: Record<string, unknown> };
  const byPath = (path: string) =>
    rx.received
      .filter((r) => r.url === `/hook${path}`)
      .map((r) => JSON.parse(r.body.toString()) as Body);
  const reports = byPath('/reports');
  t.same(reports.map((b) => [b.result.notification_type, b.result.sequence_number]).sort(), [
    ['final', 2],
    ['scheduled', 1],
  ]);
  t.ok(reports.every((b) => b.task_type === 'media_buy_delivery' && b.status === 'completed'));
  const pushes = byPath('/push');
  t.same(pushes.map((b) => b.notification_id).sort(), ['imp_fraud', 'imp_general', 'imp_queued']);
  t.ok(pushes.every((b) => b.operation_id === 'op_e2e' && b.result.health === 'impaired'));

  t.same(
    await core.impairmentObserved({
      mediaBuyId: 'mb_e2e',
      principalId: 'p_e2e',
      impairment: impairment('imp_late', 'policy_violation'),
    }),
    [],
    'closed after the final report',
  );
});
