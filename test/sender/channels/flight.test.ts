/**
 * The flight end ends the reporting schedule (supplement §4.7): a flight of N periods gets
 * N `scheduled` reports and one `final`, (duration / frequency) + 1, then nothing; queued
 * impairments fire before the final. Runs on an accelerated clock and on a set clock.
 */
import t from 'tap';
import { acceleratedClock } from '../../../sender/channels/clock.js';
import { impairment, harness, PUSH, REPORTING, resultOf, shapeFailures } from './helpers.js';

const at = (iso: string) => Date.parse(iso);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a 3-hour hourly flight on a fast clock: 3 reports + final, then nothing', async (t) => {
  // One real millisecond is 36 virtual seconds: the flight lasts 300 ms. The clock starts
  // (at 08:00, slack for a slow configuration call) once the harness is ready.
  let clock = acceleratedClock({ factor: 36_000, start: at('2026-03-10T08:00:00Z') });
  const h = await harness(t, {
    reportingClock: { now: () => clock.now(), tickIntervalMs: 10 },
  });
  clock = acceleratedClock({ factor: 36_000, start: at('2026-03-10T08:00:00Z') });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_flight',
    pushNotificationConfig: PUSH,
    reportingWebhook: REPORTING,
    flightStart: '2026-03-10T10:00:00Z',
    flightEnd: '2026-03-10T13:00:00Z',
  });
  h.channels.start();
  let events = await h.sink.events();
  for (let i = 0; i < 300 && !events.some((e) => e.notificationType === 'final'); i++) {
    await sleep(10);
    events = await h.sink.events();
  }
  await sleep(100); // several more ticks, far past the flight on this clock
  await h.channels.stop();
  events = await h.sink.events();
  const results = events.map(resultOf);
  t.same(
    results.map((r) => [r.notification_type, r.sequence_number, r.reporting_period]),
    [
      ['scheduled', 1, { start: '2026-03-10T10:00:00Z', end: '2026-03-10T10:59:59Z' }],
      ['scheduled', 2, { start: '2026-03-10T11:00:00Z', end: '2026-03-10T11:59:59Z' }],
      ['scheduled', 3, { start: '2026-03-10T12:00:00Z', end: '2026-03-10T12:59:59Z' }],
      ['final', 4, { start: '2026-03-10T10:00:00Z', end: '2026-03-10T12:59:59Z' }],
    ],
    'no report before the flight start; (3 h / 1 h) + 1 notifications',
  );
  t.same(
    results.map((r) => r.next_expected_at),
    ['2026-03-10T12:00:00Z', '2026-03-10T13:00:00Z', '2026-03-10T13:00:00Z', undefined],
    'next_expected_at points at the next fire; the last report at the final',
  );
  const final = results[3]!.media_buy_deliveries[0]!;
  t.equal(final.status, 'completed', 'the flight end completes the buy');
  t.equal(final.is_final, true);
  t.same(shapeFailures(events), []);
  t.same(
    await h.channels.impairmentObserved({
      mediaBuyId: 'mb_flight',
      impairment: impairment('imp_after', 'policy_violation'),
    }),
    [],
    'the channels are closed after the final',
  );
  t.equal(await h.channels.tick(at('2026-03-11T00:00:00Z')), 0);
});

t.test('flight end mid-period: queued impairments, then the final over the flight', async (t) => {
  const h = await harness(t, { start: at('2026-03-10T10:20:00Z') });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_cut',
    pushNotificationConfig: PUSH,
    reportingWebhook: REPORTING,
    flightStart: '2026-03-10T10:20:00Z',
    flightEnd: '2026-03-10T12:40:00Z',
  });
  t.equal(await h.channels.tick(at('2026-03-10T11:00:01Z')), 1);
  t.equal(await h.channels.tick(at('2026-03-10T12:00:01Z')), 1);
  h.clock.now = at('2026-03-10T12:38:00Z');
  // A general impairment opens a 5-minute window that would close after the flight end.
  await h.channels.impairmentObserved({ mediaBuyId: 'mb_cut', impairment: impairment('imp_1') });
  t.equal(await h.channels.tick(at('2026-03-10T12:39:59Z')), 0, 'nothing due before the end');
  t.equal(await h.channels.tick(at('2026-03-10T12:40:00Z')), 2);
  const events = await h.sink.events();
  t.same(
    events.map((e) => [
      e.notificationType,
      e.notificationType === 'impairment' ? null : resultOf(e).reporting_period,
    ]),
    [
      ['scheduled', { start: '2026-03-10T10:20:00Z', end: '2026-03-10T10:59:59Z' }],
      ['scheduled', { start: '2026-03-10T11:00:00Z', end: '2026-03-10T11:59:59Z' }],
      ['impairment', null],
      ['final', { start: '2026-03-10T10:20:00Z', end: '2026-03-10T12:39:59Z' }],
    ],
    'the cut period is in the final only: floor(140 min / 60 min) + 1 reports',
  );
  t.equal(resultOf(events[1]!).next_expected_at, '2026-03-10T12:40:00Z', 'the final is next');
  t.same(shapeFailures(events), []);
  h.clock.now = at('2026-03-10T12:41:00Z');
  t.same(
    await h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_cut', status: 'completed' }),
    [],
    "the agent's own terminal call after the flight end is a no-op",
  );
});

t.test('the final waits for the expected delay; a moved end is honoured', async (t) => {
  const h = await harness(t, { start: at('2026-03-10T10:20:00Z') });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_delay',
    reportingWebhook: REPORTING,
    expectedDelayMinutes: 30,
    flightEnd: '2026-03-10T18:00:00Z',
  });
  // Shortened at 11:40 to end at noon.
  h.clock.now = at('2026-03-10T11:40:00Z');
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_delay',
    flightEnd: '2026-03-10T12:00:00Z',
  });
  t.equal(await h.channels.tick(at('2026-03-10T11:30:00Z')), 1, 'period 10-11 after its delay');
  t.equal(await h.channels.tick(at('2026-03-10T12:29:59Z')), 0, 'not before end + delay');
  t.equal(await h.channels.tick(at('2026-03-10T12:30:00Z')), 2);
  const results = (await h.sink.events()).map(resultOf);
  t.same(
    results.map((r) => [r.notification_type, r.reporting_period.start, r.reporting_period.end]),
    [
      ['scheduled', '2026-03-10T10:00:00Z', '2026-03-10T10:59:59Z'],
      ['scheduled', '2026-03-10T11:00:00Z', '2026-03-10T11:59:59Z'],
      ['final', '2026-03-10T10:00:00Z', '2026-03-10T11:59:59Z'],
    ],
  );
  t.equal(await h.channels.tick(at('2026-03-10T20:00:00Z')), 0, 'nothing after the final');
});

t.test('a terminal call after the flight end reports up to the flight end', async (t) => {
  const h = await harness(t, { start: at('2026-03-10T10:00:00Z') });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_late_call',
    reportingWebhook: { ...REPORTING, reporting_frequency: 'daily' },
    expectedDelayMinutes: 60,
    flightEnd: '2026-03-10T12:00:00Z',
  });
  h.clock.now = at('2026-03-10T12:30:00Z');
  await h.channels.mediaBuyTerminal({ mediaBuyId: 'mb_late_call', status: 'completed' });
  const [final] = (await h.sink.events()).map(resultOf);
  t.equal(final!.notification_type, 'final');
  t.same(final!.reporting_period, { start: '2026-03-10T00:00:00Z', end: '2026-03-10T11:59:59Z' });
});

t.test('a push-only buy closes at its flight end, impairments flushed', async (t) => {
  const h = await harness(t, { start: at('2026-03-10T10:00:00Z') });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_push',
    pushNotificationConfig: PUSH,
    flightEnd: '2026-03-10T10:02:00Z',
  });
  await h.channels.impairmentObserved({ mediaBuyId: 'mb_push', impairment: impairment('imp') });
  t.equal(await h.channels.tick(at('2026-03-10T10:02:00Z')), 1, 'the queued impairment fires');
  h.clock.now = at('2026-03-10T10:03:00Z');
  t.same(
    await h.channels.impairmentObserved({
      mediaBuyId: 'mb_push',
      impairment: impairment('imp2', 'policy_violation'),
    }),
    [],
  );
});

t.test('flight dates are checked', async (t) => {
  const h = await harness(t, { start: at('2026-03-10T10:00:00Z') });
  const configure = (extra: object) =>
    h.channels.mediaBuyChannelsConfigured({
      mediaBuyId: 'mb_bad',
      reportingWebhook: REPORTING,
      ...extra,
    });
  await t.rejects(configure({ flightEnd: 'next tuesday' }), {
    code: 'VALIDATION_ERROR',
    field: 'end_time',
  });
  await t.rejects(configure({ flightEnd: '2026-03-10' }), {
    code: 'VALIDATION_ERROR',
    field: 'end_time',
  });
  await t.rejects(configure({ flightStart: 42 }), {
    code: 'VALIDATION_ERROR',
    field: 'start_time',
  });
  await t.rejects(
    configure({ flightStart: '2026-03-10T12:00:00Z', flightEnd: '2026-03-10T11:00:00Z' }),
    { code: 'VALIDATION_ERROR', field: 'end_time' },
  );
  await configure({ flightStart: '2026-03-10T12:00:00Z' });
  await t.rejects(configure({ flightEnd: '2026-03-10T12:00:00Z' }), {
    code: 'VALIDATION_ERROR',
    field: 'end_time',
  });
  await configure({ flightStart: null, flightEnd: '2026-03-10T12:00:00+01:00' });
  t.equal(
    await h.channels.tick(at('2026-03-10T11:00:00Z')),
    2,
    'offsets are honoured: ends 11:00Z',
  );
});
