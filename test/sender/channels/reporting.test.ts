import t from 'tap';
import { acceleratedClock } from '../../../sender/channels/clock.js';
import { TaskError } from '../../../sender/channels/errors.js';
import { harness, PUSH, REPORTING, resultOf, shapeFailures } from './helpers.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-03-10T10:20:00Z');

t.test('hourly schedule: UTC periods, sequence from 1, next_expected_at', async (t) => {
  const h = await harness(t, { start: T0 });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_1',
    principalId: 'p_1',
    pushNotificationConfig: PUSH,
    reportingWebhook: REPORTING,
    context: { trace: 'abc' },
  });
  t.equal(await h.channels.tick(T0 + 10 * 60_000), 0, 'nothing before the period ends');
  // Three periods end by 13:00:30.
  t.equal(await h.channels.tick(Date.parse('2026-03-10T13:00:30Z')), 3);
  t.equal(await h.channels.tick(Date.parse('2026-03-10T13:00:31Z')), 0, 'each period once');
  const events = await h.sink.events();
  t.same(
    events.map((e) => resultOf(e).sequence_number),
    [1, 2, 3],
  );
  t.same(
    events.map((e) => resultOf(e).reporting_period),
    [
      { start: '2026-03-10T10:00:00Z', end: '2026-03-10T10:59:59Z' },
      { start: '2026-03-10T11:00:00Z', end: '2026-03-10T11:59:59Z' },
      { start: '2026-03-10T12:00:00Z', end: '2026-03-10T12:59:59Z' },
    ],
  );
  t.same(
    events.map((e) => resultOf(e).next_expected_at),
    ['2026-03-10T12:00:00Z', '2026-03-10T13:00:00Z', '2026-03-10T14:00:00Z'],
  );
  const first = events[0]!;
  t.equal(first.target.url, REPORTING.url);
  t.equal(first.target.channel, 'reporting');
  t.same(first.target.auth, { mode: 'rfc9421' });
  t.equal(first.notificationType, 'scheduled');
  t.equal(first.sequenceNumber, 1);
  t.equal(first.mediaBuyId, 'mb_1');
  t.equal(first.principalId, 'p_1');
  const p = first.payload;
  t.equal(p.task_type, 'media_buy_delivery');
  t.equal(p.status, 'completed', 'top-level status is the task status');
  t.equal(p.idempotency_key, first.idempotencyKey);
  t.equal(p.operation_id, PUSH.operation_id, 'operation_id from the buy push config');
  t.same(p.context, { trace: 'abc' });
  t.notOk('notification_id' in p, 'reports carry no notification_id');
  const r = resultOf(first);
  t.equal(r.notification_type, 'scheduled');
  t.equal(r.currency, 'EUR');
  t.notOk('aggregated_totals' in r);
  t.equal(r.media_buy_deliveries[0]!.status, 'active', 'row status is the buy state');
  t.same(r.media_buy_deliveries[0]!.totals, { spend: 10, impressions: 1000, clicks: 5 });
  t.equal(new Set(events.map((e) => e.idempotencyKey)).size, 3, 'a fresh key per fire');
  t.same(shapeFailures(await h.sink.events()), [], 'every payload passes the shared schemas');
});

t.test('daily and monthly periods are UTC calendar periods', async (t) => {
  const h = await harness(t, { start: Date.parse('2026-02-27T15:00:00Z') });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_d',
    reportingWebhook: { ...REPORTING, reporting_frequency: 'daily' },
  });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_m',
    reportingWebhook: {
      ...REPORTING,
      url: 'https://buyer.example/m',
      reporting_frequency: 'monthly',
    },
  });
  await h.channels.tick(Date.parse('2026-03-02T00:00:01Z'));
  const events = await h.sink.events();
  const daily = events
    .filter((e) => e.mediaBuyId === 'mb_d')
    .map((e) => resultOf(e).reporting_period);
  t.same(daily, [
    { start: '2026-02-27T00:00:00Z', end: '2026-02-27T23:59:59Z' },
    { start: '2026-02-28T00:00:00Z', end: '2026-02-28T23:59:59Z' },
    { start: '2026-03-01T00:00:00Z', end: '2026-03-01T23:59:59Z' },
  ]);
  const monthly = events.filter((e) => e.mediaBuyId === 'mb_m').map((e) => resultOf(e));
  t.same(
    monthly.map((r) => r.reporting_period),
    [{ start: '2026-02-01T00:00:00Z', end: '2026-02-28T23:59:59Z' }],
  );
  t.equal(monthly[0]!.next_expected_at, '2026-04-01T00:00:00Z');
  t.equal(monthly[0]!.operation_id, undefined);
  t.match(events.find((e) => e.mediaBuyId === 'mb_m')!.payload.operation_id, /^reporting\.mb_m$/);
});

t.test('the interval runner on a sped-up clock fires the schedule by itself', async (t) => {
  const clock = acceleratedClock({ factor: 3600, start: T0, tickIntervalMs: 20 });
  const h = await harness(t, { reportingClock: clock });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_run',
    reportingWebhook: REPORTING,
  });
  h.channels.start();
  // One real second is an hour here; wait (bounded) for three reports.
  const deadline = Date.now() + 20_000;
  while ((await h.sink.events()).length < 3 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await h.channels.stop();
  const events = await h.sink.events();
  t.ok(events.length >= 3, 'three hourly reports within the bound');
  t.same(
    events.slice(0, 3).map((e) => resultOf(e).sequence_number),
    [1, 2, 3],
  );
  t.same(
    events.slice(0, 3).map((e) => resultOf(e).reporting_period.start),
    ['2026-03-10T10:00:00Z', '2026-03-10T11:00:00Z', '2026-03-10T12:00:00Z'],
  );
});

t.test('late data: one delayed report, then the scheduled one when it arrives', async (t) => {
  const h = await harness(t, { start: T0, delayedRetrySeconds: 600 });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_late',
    reportingWebhook: REPORTING,
    expectedDelayMinutes: 30,
    currency: 'GBP',
  });
  t.equal(await h.channels.tick(Date.parse('2026-03-10T11:10:00Z')), 0, 'waits out expected delay');
  h.data.late.add('2026-03-10T10:00:00Z');
  t.equal(await h.channels.tick(Date.parse('2026-03-10T11:30:00Z')), 1);
  t.equal(await h.channels.tick(Date.parse('2026-03-10T11:45:00Z')), 0, 'one delayed per period');
  h.data.late.clear();
  t.equal(await h.channels.tick(Date.parse('2026-03-10T11:50:00Z')), 0, 'not before the retry');
  t.equal(await h.channels.tick(Date.parse('2026-03-10T11:55:00Z')), 1, 'retried 10 min later');
  const [delayed, scheduled] = (await h.sink.events()).map(resultOf);
  t.equal(delayed!.notification_type, 'delayed');
  t.equal(delayed!.sequence_number, 1);
  t.equal(delayed!.partial_data, true);
  t.equal(delayed!.unavailable_count, 1);
  t.equal(delayed!.currency, 'GBP', 'the configured currency when no data is known');
  t.same(delayed!.media_buy_deliveries[0], {
    media_buy_id: 'mb_late',
    status: 'reporting_delayed',
    expected_availability: '2030-01-01T00:00:00Z',
    totals: { spend: 0 },
    by_package: [],
  });
  t.equal(delayed!.next_expected_at, '2030-01-01T00:00:00Z');
  t.equal(scheduled!.notification_type, 'scheduled');
  t.equal(scheduled!.sequence_number, 2);
  t.same(scheduled!.reporting_period, {
    start: '2026-03-10T10:00:00Z',
    end: '2026-03-10T10:59:59Z',
  });
  t.equal(
    scheduled!.next_expected_at,
    '2026-03-10T12:30:00Z',
    'next fire keeps the expected delay',
  );
});

t.test('adjusted and window_update reports', async (t) => {
  const h = await harness(t, { start: T0 });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_adj',
    reportingWebhook: REPORTING,
  });
  await h.channels.tick(Date.parse('2026-03-10T11:00:05Z'));
  const period = { start: '2026-03-10T10:00:00Z', end: '2026-03-10T10:59:59Z' };
  h.data.spendOffset = 5;
  const ids = await h.channels.deliveryReportDue({
    mediaBuyId: 'mb_adj',
    notificationType: 'adjusted',
    period,
  });
  t.equal(ids.length, 1);
  const supplied = {
    notification_type: 'window_update',
    reporting_period: period,
    currency: 'EUR',
    media_buy_deliveries: [
      {
        media_buy_id: 'mb_adj',
        status: 'active',
        totals: { spend: 16 },
        by_package: [
          { package_id: 'pkg_1', spend: 16, measurement_window: 'c7', supersedes_window: 'c3' },
        ],
      },
    ],
  };
  await h.channels.deliveryReportDue({ mediaBuyId: 'mb_adj', report: supplied });
  const [, adjusted, update] = (await h.sink.events()).map(resultOf);
  t.equal(adjusted!.notification_type, 'adjusted');
  t.equal(adjusted!.sequence_number, 2);
  t.same(adjusted!.reporting_period, period);
  t.equal(adjusted!.media_buy_deliveries[0]!.is_adjusted, true);
  t.same(adjusted!.media_buy_deliveries[0]!.totals, { spend: 15, impressions: 1000, clicks: 5 });
  t.equal(adjusted!.next_expected_at, '2026-03-10T12:00:00Z');
  t.equal(update!.notification_type, 'window_update');
  t.equal(update!.sequence_number, 3);
  t.same(update!.media_buy_deliveries, supplied.media_buy_deliveries);

  const refusals: Array<[string, unknown, string]> = [
    [
      'final from an agent',
      { ...supplied, notification_type: 'final' },
      'report.notification_type',
    ],
    ['aggregated_totals', { ...supplied, aggregated_totals: {} }, 'report.aggregated_totals'],
    ['notification_id', { ...supplied, notification_id: 'n1' }, 'report.notification_id'],
    ['bad currency', { ...supplied, currency: 'eur' }, 'report.currency'],
    ['no rows', { ...supplied, media_buy_deliveries: [] }, 'report.media_buy_deliveries'],
    [
      'foreign row',
      {
        ...supplied,
        media_buy_deliveries: [{ ...supplied.media_buy_deliveries[0], media_buy_id: 'x' }],
      },
      'report.media_buy_deliveries.0.media_buy_id',
    ],
    [
      'row without spend',
      { ...supplied, media_buy_deliveries: [{ ...supplied.media_buy_deliveries[0], totals: {} }] },
      'report.media_buy_deliveries.0.totals.spend',
    ],
  ];
  for (const [name, report, field] of refusals) {
    await t.rejects(
      h.channels.deliveryReportDue({
        mediaBuyId: 'mb_adj',
        report: report as Record<string, unknown>,
      }),
      { name: 'TaskError', code: 'VALIDATION_ERROR', field },
      name,
    );
  }
  await t.rejects(
    h.channels.deliveryReportDue({ mediaBuyId: 'mb_adj', notificationType: 'adjusted' }),
    { code: 'VALIDATION_ERROR', field: 'reporting_period' },
    'adjusted needs a period',
  );
  t.equal((await h.sink.events()).length, 3, 'refusals enqueue nothing');
  t.same(shapeFailures(await h.sink.events()), []);
});

t.test('window_update is refused under protocol 3.1', async (t) => {
  const h = await harness(t, { start: T0, protocolVersion: '3.1' });
  await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_31', reportingWebhook: REPORTING });
  const err = await h.channels
    .deliveryReportDue({
      mediaBuyId: 'mb_31',
      notificationType: 'window_update',
      period: { start: '2026-03-10T10:00:00Z', end: '2026-03-10T10:59:59Z' },
    })
    .catch((e: unknown) => e);
  t.ok(err instanceof TaskError);
  t.match(err, { code: 'VALIDATION_ERROR', field: 'notification_type' });
});

t.test('rotation: a new reporting URL is used from the next fire, sequence restarts', async (t) => {
  const h = await harness(t, { start: T0 });
  const auth = { schemes: ['HMAC-SHA256'], credentials: 'secret-secret-secret-secret-0123' };
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_rot',
    reportingWebhook: REPORTING,
  });
  await h.channels.tick(Date.parse('2026-03-10T12:00:01Z'));
  const rotated = {
    ...REPORTING,
    url: 'https://buyer.example/hooks/reports-v2',
    authentication: auth,
  };
  await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_rot', reportingWebhook: rotated });
  await h.channels.tick(Date.parse('2026-03-10T14:00:01Z'));
  const events = await h.sink.events();
  t.same(
    events.map((e) => [e.target.url, resultOf(e).sequence_number]),
    [
      [REPORTING.url, 1],
      [REPORTING.url, 2],
      [rotated.url, 1],
      [rotated.url, 2],
    ],
  );
  t.same(events[2]!.target.auth, { mode: 'hmac', secret: auth.credentials });
  t.same(
    events.map((e) => resultOf(e).reporting_period.start),
    [
      '2026-03-10T10:00:00Z',
      '2026-03-10T11:00:00Z',
      '2026-03-10T12:00:00Z',
      '2026-03-10T13:00:00Z',
    ],
    'the same frequency keeps the schedule going',
  );
  const { rows } = await h.pool.query(
    `SELECT reporting_previous_url FROM ${h.schema}.channel_media_buys WHERE media_buy_id = 'mb_rot'`,
  );
  t.equal(rows[0].reporting_previous_url, REPORTING.url, 'previous URL kept for information');
});

t.test('a refused registration writes nothing', async (t) => {
  const h = await harness(t, { start: T0 });
  await t.rejects(
    h.channels.mediaBuyChannelsConfigured({
      mediaBuyId: 'mb_bad',
      pushNotificationConfig: PUSH,
      reportingWebhook: { ...REPORTING, reporting_frequency: 'weekly' },
    }),
    { code: 'INVALID_REQUEST', field: 'reporting_webhook.reporting_frequency' },
  );
  await t.rejects(
    h.channels.mediaBuyChannelsConfigured({
      mediaBuyId: 'mb_bad',
      pushNotificationConfig: { url: PUSH.url },
    }),
    { code: 'INVALID_REQUEST', field: 'push_notification_config.operation_id' },
  );
  await t.rejects(
    h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_bad', currency: 'euro' }),
    { code: 'VALIDATION_ERROR', field: 'currency' },
  );
  const { rows } = await h.pool.query(
    `SELECT count(*)::int AS n FROM ${h.schema}.channel_media_buys`,
  );
  t.equal(rows[0].n, 0);
  t.equal(await h.channels.tick(T0 + 10 * HOUR), 0);
});

t.test('requested_metrics: only those plus impressions and spend are reported', async (t) => {
  const h = await harness(t, { start: T0 });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_metrics',
    reportingWebhook: { ...REPORTING, requested_metrics: ['conversions'] },
  });
  await h.channels.tick(Date.parse('2026-03-10T11:00:01Z'));
  const [report] = (await h.sink.events()).map(resultOf);
  const row = report!.media_buy_deliveries[0]!;
  t.same(row.totals, { spend: 10, impressions: 1000 }, 'clicks not requested');
  t.same(row.by_package, [{ package_id: 'pkg_1', spend: 10, impressions: 1000 }]);
});

t.test('a failing data source holds back only its buy, and nothing is half-done', async (t) => {
  const h = await harness(t, { start: T0, tickBatchSize: 1 });
  for (const id of ['mb_ok', 'mb_broken']) {
    await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: id, reportingWebhook: REPORTING });
  }
  const original = h.data.getDelivery.bind(h.data);
  let broken = true;
  h.data.getDelivery = async (id, period) => {
    if (id === 'mb_broken' && broken) throw new Error('warehouse down');
    return original(id, period);
  };
  // One buy per tick: the failing one must not block the healthy one behind it.
  let healthy = 0;
  for (let i = 0; i < 3; i++) healthy += await h.channels.tick(Date.parse('2026-03-10T11:00:01Z'));
  t.equal(healthy, 1, 'the healthy buy fires');
  await t.rejects(
    h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_broken', status: 'completed' }),
    /warehouse down/,
  );
  t.equal(await h.channels.tick(Date.parse('2026-03-10T11:00:30Z')), 0, 'postponed after failing');
  broken = false;
  t.equal(await h.channels.tick(Date.parse('2026-03-10T11:01:02Z')), 1, 'retried a minute later');
  h.clock.now = Date.parse('2026-03-10T11:01:03Z');
  t.equal(
    (await h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_broken', status: 'completed' })).length,
    1,
    'the terminal call can be repeated after a failure',
  );
  const broke = (await h.sink.events()).filter((e) => e.mediaBuyId === 'mb_broken');
  t.same(
    broke.map((e) => [e.notificationType, resultOf(e).sequence_number]),
    [
      ['scheduled', 1],
      ['final', 2],
    ],
  );
});

t.test('tick counts every event of buys handled in parallel lanes', async (t) => {
  const h = await harness(t, { start: T0, tickConcurrency: 4 });
  for (let i = 0; i < 12; i++) {
    await h.channels.mediaBuyChannelsConfigured({
      mediaBuyId: `mb_lane_${i}`,
      reportingWebhook: REPORTING,
    });
  }
  t.equal(await h.channels.tick(Date.parse('2026-03-10T12:00:01Z')), 24);
  t.equal((await h.sink.events()).length, 24);
});

t.test('loopback targets only when allow-listed', async (t) => {
  const loopback = { url: 'http://127.0.0.1:9/r', reporting_frequency: 'hourly' };
  const strict = await harness(t, { start: T0 });
  await t.rejects(
    strict.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_lo', reportingWebhook: loopback }),
    { code: 'INVALID_REQUEST', field: 'reporting_webhook.url' },
  );
  for (const options of [{ allowHosts: ['127.0.0.1'] }, { allowInsecureUrls: true }]) {
    const open = await harness(t, { start: T0, ...options });
    await open.channels.mediaBuyChannelsConfigured({
      mediaBuyId: 'mb_lo',
      reportingWebhook: loopback,
    });
    t.equal(
      await open.channels.tick(Date.parse('2026-03-10T11:00:01Z')),
      1,
      JSON.stringify(options),
    );
  }
});
