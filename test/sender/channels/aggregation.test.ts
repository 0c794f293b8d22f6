/**
 * Aggregated delivery reports (supplement §4.6, opt-in): buys whose registrations agree in
 * everything that reaches the envelope or the auth, due together with the same report
 * header, share one payload; anything that differs keeps them apart.
 */
import t from 'tap';
import { DeliveryReportSchema } from '../../../shared/envelope/index.js';
import { harness, REPORTING, resultOf, shapeFailures, type Harness } from './helpers.js';

const T0 = Date.parse('2026-03-10T10:20:00Z');
const TICK_11 = Date.parse('2026-03-10T11:00:01Z');
const SHARED = {
  ...REPORTING,
  operation_id: 'op_reports_acme',
  token: 'tok_reports_acme_0123456789',
};

async function configure(h: Harness, id: string, extra: object = {}, reporting: object = {}) {
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: id,
    principalId: 'p_acme',
    reportingWebhook: { ...SHARED, ...reporting },
    ...extra,
  });
}

t.test('off by default: one report per buy', async (t) => {
  const h = await harness(t, { start: T0 });
  await configure(h, 'mb_a');
  await configure(h, 'mb_b');
  t.equal(await h.channels.tick(TICK_11), 2);
  const rows = (await h.sink.events()).map((e) => resultOf(e).media_buy_deliveries.length);
  t.same(rows, [1, 1]);
});

t.test('identical registrations due together share one payload', async (t) => {
  const h = await harness(t, { start: T0, aggregateReports: true });
  h.data.spendOffset = 0;
  for (const id of ['mb_a', 'mb_b', 'mb_c']) await configure(h, id);
  t.equal(await h.channels.tick(TICK_11), 1, 'one payload');
  t.equal(await h.channels.tick(Date.parse('2026-03-10T12:00:01Z')), 1);
  const events = await h.sink.events();
  t.same(shapeFailures(events), [], 'envelope and report pass the shared schemas');
  const [first, second] = events;
  const r1 = resultOf(first!);
  t.same(r1.media_buy_deliveries.map((r) => r.media_buy_id).sort(), ['mb_a', 'mb_b', 'mb_c']);
  t.ok(DeliveryReportSchema.safeParse(r1).success);
  t.equal(r1.notification_type, 'scheduled');
  t.same(r1.reporting_period, { start: '2026-03-10T10:00:00Z', end: '2026-03-10T10:59:59Z' });
  t.equal(r1.next_expected_at, '2026-03-10T12:00:00Z');
  t.same(
    [r1.sequence_number, resultOf(second!).sequence_number],
    [1, 2],
    'sequence_number counts the stream',
  );
  const envelope = first!.payload;
  t.equal(envelope.operation_id, 'op_reports_acme', 'the registration operation_id, verbatim');
  t.equal(envelope.token, SHARED.token);
  t.equal(envelope.task_type, 'media_buy_delivery');
  t.match(envelope.task_id, /^reporting\.[0-9a-f]{24}$/, "the stream's handle, no one buy's");
  t.equal(second!.payload.task_id, envelope.task_id, 'stable per stream');
  t.equal(first!.target.url, SHARED.url);
  t.same(first!.target.auth, { mode: 'rfc9421' });
  t.equal(first!.principalId, 'p_acme');
  t.notOk('mediaBuyId' in first!, 'not attributed to one buy');
});

t.test('anything in the envelope or auth that differs keeps buys apart', async (t) => {
  const h = await harness(t, { start: T0, aggregateReports: true });
  await configure(h, 'mb_base');
  await configure(h, 'mb_same', {}, { requested_metrics: ['clicks'] });
  await configure(h, 'mb_url', {}, { url: 'https://buyer.example/hooks/other' });
  await configure(h, 'mb_token', {}, { token: 'tok_someone_else_0123456' });
  await configure(
    h,
    'mb_auth',
    {},
    { authentication: { schemes: ['Bearer'], credentials: 'q7Vw2LmX9pRt4ZsK8nBc3HdY6fJg1TaE' } },
  );
  await configure(h, 'mb_op', {}, { operation_id: 'op_other' });
  await configure(h, 'mb_ctx', { context: { campaign: 'spring' } });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_principal',
    principalId: 'p_other',
    reportingWebhook: SHARED,
  });
  await configure(h, 'mb_daily', {}, { reporting_frequency: 'daily' });
  // No operation_id on the registration: the derived one is per buy.
  await configure(h, 'mb_derived_1', {}, { operation_id: undefined });
  await configure(h, 'mb_derived_2', {}, { operation_id: undefined });
  t.equal(await h.channels.tick(TICK_11), 9);
  const events = await h.sink.events();
  t.same(shapeFailures(events), []);
  const groups = events.map((e) =>
    resultOf(e)
      .media_buy_deliveries.map((r) => r.media_buy_id)
      .sort()
      .join('+'),
  );
  t.same(
    groups.sort(),
    [
      'mb_auth',
      'mb_base+mb_same',
      'mb_ctx',
      'mb_derived_1',
      'mb_derived_2',
      'mb_op',
      'mb_principal',
      'mb_token',
      'mb_url',
    ],
    'only requested_metrics may differ (it shapes rows only); daily is not due yet',
  );
  const both = events.find((e) => resultOf(e).media_buy_deliveries.length === 2)!;
  const [base, same] = resultOf(both).media_buy_deliveries;
  t.same(base!.totals, { spend: 10, impressions: 1000, clicks: 5 });
  t.same(same!.totals, { spend: 10, impressions: 1000, clicks: 5 }, 'each row its own metrics');
  const solo = events.find((e) => resultOf(e).media_buy_deliveries[0]!.media_buy_id === 'mb_ctx')!;
  t.equal(solo.payload.task_id, 'mb_ctx', 'a group of one is an ordinary per-buy report');
  t.same(solo.payload.context, { campaign: 'spring' });
  t.equal(solo.mediaBuyId, 'mb_ctx');
});

t.test('currency, lateness and failures split the group, in order', async (t) => {
  const h = await harness(t, { start: T0, aggregateReports: true, tickBatchSize: 50 });
  for (const id of ['mb_1', 'mb_2', 'mb_usd', 'mb_late', 'mb_broken']) await configure(h, id);
  const original = h.data.getDelivery.bind(h.data);
  h.data.getDelivery = async (id, period) => {
    if (id === 'mb_broken') throw new Error('warehouse down');
    if (id === 'mb_late') return { late: true, expectedAvailability: '2026-03-10T15:00:00Z' };
    const d = await original(id, period);
    if (id === 'mb_usd' && !('late' in d)) return { ...d, currency: 'USD' };
    return d;
  };
  t.equal(await h.channels.tick(TICK_11), 3);
  const events = await h.sink.events();
  t.same(shapeFailures(events), []);
  t.same(
    events
      .map((e) => [
        resultOf(e).notification_type,
        resultOf(e).currency,
        resultOf(e)
          .media_buy_deliveries.map((r) => r.media_buy_id)
          .sort()
          .join('+'),
      ])
      .sort(),
    [
      ['delayed', 'USD', 'mb_late'],
      ['scheduled', 'EUR', 'mb_1+mb_2'],
      ['scheduled', 'USD', 'mb_usd'],
    ],
    'a late buy gets its own delayed report; the failing one sends nothing',
  );
  h.data.getDelivery = original;
  t.equal(await h.channels.tick(Date.parse('2026-03-10T11:00:30Z')), 0, 'the failed buy waits');
  t.equal(
    await h.channels.tick(Date.parse('2026-03-10T11:01:02Z')),
    1,
    'the failed buy is retried after failureRetrySeconds; the late one later',
  );
});
