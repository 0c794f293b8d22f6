import t from 'tap';
import { brandProfile } from '../../../shared/brand.js';
import { MediaBuyChannels } from '../../../sender/channels/media-buy-channels.js';
import { harness, impairment, PUSH, REPORTING, shapeFailures } from './helpers.js';

const T0 = Date.parse('2026-03-10T10:20:00Z');
const MIN = 60_000;

type ImpairmentResult = Record<string, unknown> & { impairment_id: string; health: string };
const resultOf = (e: { payload: Record<string, unknown> }) => e.payload.result as ImpairmentResult;

t.test('general impairments coalesce: one fire per impairment at window close', async (t) => {
  const h = await harness(t, { start: T0 });
  await h.channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_1',
    principalId: 'p_1',
    pushNotificationConfig: { ...PUSH, token: 'tok_0123456789abcdef' },
  });
  const observe = async (at: number, imp: object) => {
    h.clock.now = at;
    return h.channels.impairmentObserved({ mediaBuyId: 'mb_1', impairment: imp });
  };
  t.same(await observe(T0, impairment('imp_a')), [], 'nothing sent while coalescing');
  await observe(T0 + 1 * MIN, impairment('imp_a', 'consent_expired', { reason: 'second look' }));
  await observe(T0 + 2 * MIN, impairment('imp_b', 'ttl_expired'));
  await observe(T0 + 4 * MIN, impairment('imp_a', 'consent_expired', { reason: 'latest' }));
  t.equal(await h.channels.tick(T0 + 4 * MIN + 59_000), 0, 'window still open');
  // Pending windows are rows, not memory: a fresh instance over the same schema fires them.
  const restarted = new MediaBuyChannels({
    pool: h.pool,
    schema: h.schema,
    sink: h.sink,
    profile: brandProfile('svc'),
    protocolVersion: '3.2',
    dataSource: h.data,
  });
  t.equal(await restarted.tick(T0 + 5 * MIN), 2, 'window closes 5 min after it opened');
  t.equal(await h.channels.tick(T0 + 10 * MIN), 0, 'fired once');
  const events = await h.sink.events();
  t.same(
    events.map((e) => e.notificationId),
    ['imp_a', 'imp_b'],
  );
  const a = events[0]!;
  t.equal(resultOf(a).reason, 'latest', 'the latest state of the impairment is sent');
  t.equal(resultOf(a).health, 'impaired');
  t.equal(resultOf(a).media_buy_id, 'mb_1');
  t.equal(resultOf(a).notification_type, 'impairment');
  t.equal(a.payload.notification_id, 'imp_a', 'notification_id is the impairment_id');
  t.equal(a.payload.operation_id, PUSH.operation_id);
  t.equal(a.payload.token, 'tok_0123456789abcdef');
  t.equal(a.payload.status, 'completed');
  t.equal(a.target.url, PUSH.url);
  t.equal(a.target.channel, 'push');
  t.equal(a.notificationType, 'impairment');
  t.equal(a.principalId, 'p_1');
  t.not(events[0]!.idempotencyKey, events[1]!.idempotencyKey);
  t.same(shapeFailures(await h.sink.events()), [], 'every payload passes the shared schemas');
});

t.test(
  'a re-emission keeps notification_id with a fresh key; resolution clears health',
  async (t) => {
    const h = await harness(t, { start: T0, coalescence: { generalSeconds: 60 } });
    await h.channels.mediaBuyChannelsConfigured({
      mediaBuyId: 'mb_2',
      pushNotificationConfig: PUSH,
    });
    await h.channels.impairmentObserved({ mediaBuyId: 'mb_2', impairment: impairment('imp_x') });
    t.equal(await h.channels.tick(T0 + 59_000), 0, 'configured shorter window respected');
    t.equal(await h.channels.tick(T0 + 60_000), 1);
    h.clock.now = T0 + 2 * MIN;
    await h.channels.impairmentObserved({
      mediaBuyId: 'mb_2',
      impairment: impairment('imp_x', 'consent_expired', { resolved_at: '2026-03-10T10:22:00Z' }),
    });
    t.equal(await h.channels.tick(T0 + 3 * MIN), 1);
    const [first, closing] = await h.sink.events();
    t.equal(first!.notificationId, 'imp_x');
    t.equal(closing!.notificationId, 'imp_x', 'same notification_id on the closing fire');
    t.not(first!.idempotencyKey, closing!.idempotencyKey, 'fresh key per fire');
    t.equal(resultOf(first!).health, 'impaired');
    t.equal(resultOf(closing!).health, 'ok');
  },
);

t.test('fraud and brand-safety impairments fire immediately', async (t) => {
  const h = await harness(t, { start: T0 });
  await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_3', pushNotificationConfig: PUSH });
  await h.channels.impairmentObserved({ mediaBuyId: 'mb_3', impairment: impairment('imp_g') });
  const ids = await h.channels.impairmentObserved({
    mediaBuyId: 'mb_3',
    impairment: impairment('imp_bs', 'policy_violation'),
  });
  t.equal(ids.length, 1, 'policy_violation (brand safety) enqueued in the call');
  const fraud = await h.channels.impairmentObserved({
    mediaBuyId: 'mb_3',
    impairment: impairment('imp_f', 'consent_expired', { category: 'fraud' }),
  });
  t.equal(fraud.length, 1, 'category fraud enqueued in the call');
  const events = await h.sink.events();
  t.same(
    events.map((e) => e.notificationId),
    ['imp_bs', 'imp_f'],
    'the general one still waits in its window',
  );
  t.equal(await h.channels.tick(T0 + 5 * MIN), 1);
});

t.test('a sub-minute latency-sensitive window coalesces within it', async (t) => {
  const h = await harness(t, { start: T0, coalescence: { latencySensitiveSeconds: 30 } });
  await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_4', pushNotificationConfig: PUSH });
  for (const reason of ['first', 'second']) {
    await h.channels.impairmentObserved({
      mediaBuyId: 'mb_4',
      impairment: impairment('imp_s', 'content_rejected', { reason }),
    });
  }
  t.equal(await h.channels.tick(T0 + 29_000), 0);
  t.equal(await h.channels.tick(T0 + 30_000), 1);
  const [only] = await h.sink.events();
  t.equal(resultOf(only!).reason, 'second');
});

t.test('windows may not exceed the defaults', async (t) => {
  await t.rejects(harness(t, { coalescence: { generalSeconds: 301 } }), RangeError);
  await t.rejects(harness(t, { coalescence: { latencySensitiveSeconds: 60 } }), RangeError);
  await t.rejects(harness(t, { coalescence: { generalSeconds: -1 } }), RangeError);
});

t.test('rotation: a pending impairment goes to the config current at fire time', async (t) => {
  const h = await harness(t, { start: T0 });
  await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_5', pushNotificationConfig: PUSH });
  await h.channels.impairmentObserved({ mediaBuyId: 'mb_5', impairment: impairment('imp_r') });
  const bearer = 'bearer-token-bearer-token-bearer-token';
  const next = {
    url: 'https://buyer.example/hooks/push-v2',
    operation_id: 'op_update_7',
    authentication: { schemes: ['Bearer'], credentials: bearer },
  };
  await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_5', pushNotificationConfig: next });
  await h.channels.tick(T0 + 5 * MIN);
  const [fire] = await h.sink.events();
  t.equal(fire!.target.url, next.url);
  t.same(fire!.target.auth, { mode: 'bearer', token: bearer });
  t.equal(fire!.payload.operation_id, 'op_update_7');
  const { rows } = await h.pool.query(
    `SELECT push_previous_url FROM ${h.schema}.channel_media_buys WHERE media_buy_id = 'mb_5'`,
  );
  t.equal(rows[0].push_previous_url, PUSH.url);
});

t.test('impairments without a push channel are recorded, not sent', async (t) => {
  const h = await harness(t, { start: T0 });
  t.same(
    await h.channels.impairmentObserved({ mediaBuyId: 'unknown', impairment: impairment('i1') }),
    [],
  );
  await h.channels.mediaBuyChannelsConfigured({ mediaBuyId: 'mb_6', reportingWebhook: REPORTING });
  t.same(
    await h.channels.impairmentObserved({
      mediaBuyId: 'mb_6',
      impairment: impairment('i2', 'policy_violation'),
    }),
    [],
  );
  await t.rejects(
    h.channels.impairmentObserved({ mediaBuyId: 'mb_6', impairment: { impairment_id: 'i3' } }),
    { code: 'VALIDATION_ERROR' },
  );
  t.equal((await h.sink.events()).length, 0);
});
