import t from 'tap';
import { impairment, harness, PUSH, REPORTING, resultOf, shapeFailures } from './helpers.js';

const T0 = Date.parse('2026-03-10T10:20:00Z');
const MIN = 60_000;

t.test('terminal: queued impairments, then due reports, then final; nothing after', async (t) => {
  const h = await harness(t, { start: T0 });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_t',
    pushNotificationConfig: PUSH,
    reportingWebhook: REPORTING,
  });
  await h.channels.tick(Date.parse('2026-03-10T11:00:01Z'));
  h.clock.now = Date.parse('2026-03-10T11:30:00Z');
  await h.channels.impairmentObserved({ mediaBuyId: 'mb_t', impairment: impairment('imp_1') });
  await h.channels.impairmentObserved({
    mediaBuyId: 'mb_t',
    impairment: impairment('imp_2', 'source_offline'),
  });
  // Terminal at 12:10: the 11:00 period is due but not yet fired by a tick.
  h.clock.now = Date.parse('2026-03-10T12:10:00Z');
  const ids = await h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_t', status: 'completed' });
  t.equal(ids.length, 4);
  const events = await h.sink.events();
  t.same(
    events.map((e) => e.notificationType),
    ['scheduled', 'impairment', 'impairment', 'scheduled', 'final'],
    'impairments fire first, the final report last',
  );
  const final = resultOf(events[4]!);
  t.equal(final.sequence_number, 3);
  t.notOk('next_expected_at' in final, 'no next_expected_at on final');
  t.same(
    final.reporting_period,
    { start: '2026-03-10T10:00:00Z', end: '2026-03-10T12:09:59Z' },
    'the final covers the whole span reported, up to the terminal',
  );
  const row = final.media_buy_deliveries[0]!;
  t.equal(row.status, 'completed', 'row carries the buy state');
  t.equal(row.is_final, true);
  t.equal(row.finalized_at, '2026-03-10T12:10:00.000Z');
  t.equal(events[4]!.payload.status, 'completed');
  t.equal(resultOf(events[3]!).reporting_period.start, '2026-03-10T11:00:00Z');

  // Closed: every later call is a no-op.
  h.clock.now = Date.parse('2026-03-10T12:11:00Z');
  t.same(
    await h.channels.impairmentObserved({
      mediaBuyId: 'mb_t',
      impairment: impairment('imp_3', 'policy_violation'),
    }),
    [],
  );
  t.same(await h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_t', status: 'canceled' }), []);
  t.same(await h.channels.deliveryReportDue({ mediaBuyId: 'mb_t' }), []);
  await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_t', reportingWebhook: REPORTING });
  t.equal(await h.channels.tick(Date.parse('2026-03-12T00:00:00Z')), 0);
  t.equal((await h.sink.events()).length, 5, 'nothing after the final report');
  t.same(shapeFailures(await h.sink.events()), [], 'every payload passes the shared schemas');
});

t.test('canceled and rejected buys: final status, and late data still ends in final', async (t) => {
  const h = await harness(t, { start: T0 });
  for (const id of ['mb_c', 'mb_r']) {
    await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: id, reportingWebhook: REPORTING });
  }
  h.clock.now = T0 + 5 * MIN;
  await h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_c', status: 'canceled' });
  h.data.late.add('2026-03-10T10:00:00Z');
  await h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_r', status: 'rejected' });
  const [c, r] = (await h.sink.events()).map(resultOf);
  t.equal(c!.notification_type, 'final');
  t.equal(c!.sequence_number, 1);
  t.equal(c!.media_buy_deliveries[0]!.status, 'canceled');
  t.equal(r!.notification_type, 'final');
  t.equal(r!.partial_data, true, 'final without data is flagged partial');
  t.equal(r!.media_buy_deliveries[0]!.status, 'reporting_delayed');
  t.equal(r!.media_buy_deliveries[0]!.is_final, false);
  t.same(shapeFailures(await h.sink.events()), []);
});

t.test('terminal with only impairments pending flushes them, coalesced', async (t) => {
  const h = await harness(t, { start: T0 });
  await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_i', pushNotificationConfig: PUSH });
  await h.channels.impairmentObserved({ mediaBuyId: 'mb_i', impairment: impairment('imp_a') });
  await h.channels.impairmentObserved({
    mediaBuyId: 'mb_i',
    impairment: impairment('imp_a', 'consent_expired', { reason: 'again' }),
  });
  h.clock.now = T0 + MIN;
  t.equal(
    (await h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_i', status: 'completed' })).length,
    1,
  );
  const [only] = await h.sink.events();
  t.equal((only!.payload.result as Record<string, unknown>).reason, 'again');
  t.equal(await h.channels.tick(T0 + 10 * MIN), 0, 'the window row is gone');
});

t.test(
  'terminal joins the caller transaction: a rollback sends nothing and closes nothing',
  async (t) => {
    const h = await harness(t, { start: T0 });
    await h.channels.mediaBuyChannelsConfigured({
      mediaBuyId: 'mb_x',
      reportingWebhook: REPORTING,
    });
    const client = await h.pool.connect();
    try {
      await client.query('BEGIN');
      const ids = await h.channels.mediaBuyTerminal({
        mediaBuyId: 'mb_x',
        status: 'completed',
        client,
      });
      t.equal(ids.length, 1);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    t.equal((await h.sink.events()).length, 0);
    t.equal(await h.channels.tick(Date.parse('2026-03-10T11:00:01Z')), 1, 'schedule still open');
  },
);

t.test('terminal status and id are checked', async (t) => {
  const h = await harness(t, { start: T0 });
  await t.rejects(
    h.channels.mediaBuyTerminal({ mediaBuyId: 'mb', status: 'paused' as 'completed' }),
    { code: 'VALIDATION_ERROR', field: 'status' },
  );
  await t.rejects(h.channels.mediaBuyTerminal({ mediaBuyId: '', status: 'completed' }), {
    code: 'VALIDATION_ERROR',
    field: 'media_buy_id',
  });
  t.same(
    await h.channels.mediaBuyTerminal({ mediaBuyId: 'never_configured', status: 'completed' }),
    [],
  );
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'never_configured',
    pushNotificationConfig: PUSH,
  });
  t.same(
    await h.channels.impairmentObserved({
      mediaBuyId: 'never_configured',
      impairment: impairment('i', 'policy_violation'),
    }),
    [],
    'a buy terminal before any config stays closed',
  );
});

t.test('concurrent terminal and tick: final is still last and sent once', async (t) => {
  const h = await harness(t, { start: T0 });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_race',
    pushNotificationConfig: PUSH,
    reportingWebhook: REPORTING,
  });
  await h.channels.impairmentObserved({ mediaBuyId: 'mb_race', impairment: impairment('imp') });
  const at = Date.parse('2026-03-10T13:00:00Z');
  h.clock.now = at;
  await Promise.all([
    h.channels.tick(at),
    h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_race', status: 'completed' }),
    h.channels.tick(at),
  ]);
  const events = await h.sink.events();
  t.equal(events.filter((e) => e.notificationType === 'final').length, 1);
  t.equal(events.at(-1)!.notificationType, 'final');
  t.equal(events.filter((e) => e.notificationType === 'impairment').length, 1);
  t.same(
    events
      .filter((e) => e.notificationType !== 'impairment')
      .map((e) => resultOf(e).sequence_number),
    [1, 2, 3, 4],
    'no period reported twice',
  );
});
