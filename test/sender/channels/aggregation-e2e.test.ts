/**
 * Aggregated reports through the real path: MediaBuyChannels (aggregation on) -> outbox ->
 * BullMQ worker -> signed POST -> our WebhookReceiver (signature, strict parse, envelope,
 * dedup), whose published event is checked against the shared report schema.
 */
import t from 'tap';
import { brandProfile } from '../../../shared/brand.js';
import { DeliveryReportSchema } from '../../../shared/envelope/index.js';
import { KeySet } from '../../../sender/keys/key-set.js';
import { WebhookReceiver } from '../../../receiver/pipeline/receiver.js';
import { HandlerPublisher } from '../../../receiver/publish/handler.js';
import type { ReceivedEvent } from '../../../receiver/publish/types.js';
import { testDatabase } from '../../helpers/db.js';
import { MemoryReplayStore } from '../../receiver/support/fixtures.js';
import { listen } from '../../receiver/support/server.js';
import { senderHarness } from '../harness.js';
import { outboxChannels, REPORTING } from './helpers.js';

const profile = brandProfile('svc');

t.test('an aggregated report is delivered, verified and accepted by our receiver', async (t) => {
  const h = await senderHarness(t);
  const rx = testDatabase(t, 'rcv');
  const jwks = new KeySet([h.key]).jwks(profile);
  const published: ReceivedEvent[] = [];
  const receiver = new WebhookReceiver({
    pool: rx.pool,
    schema: rx.schema,
    profile,
    protocolVersion: '3.2',
    keys: {
      resolve: async (kid) => {
        const jwk = jwks.keys.find((k) => k.kid === kid);
        return jwk ? { jwk, senderId: 'seller' } : null;
      },
    },
    replay: new MemoryReplayStore(),
    publisher: new HandlerPublisher(async (e) => void published.push(e)),
  });
  await receiver.migrate();
  const { url, server } = await listen(receiver);
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));

  const clock = { now: Date.parse('2026-03-10T10:20:00Z') };
  const { channels } = await outboxChannels(h, clock, { aggregateReports: true });
  h.startWorker();
  const registration = {
    ...REPORTING,
    url: `${url}/reports`,
    operation_id: 'op_reports_acme',
    token: 'tok_reports_acme_0123456789',
  };
  for (const id of ['mb_1', 'mb_2', 'mb_3']) {
    await channels.mediaBuyChannelsConfigured({
      mediaBuyId: id,
      principalId: 'p_acme',
      reportingWebhook: registration,
      context: { agency: 'acme' },
    });
  }
  t.equal(await channels.tick(Date.parse('2026-03-10T11:00:01Z')), 1, 'one payload for three');
  const { rows } = await h.pool.query<{ id: string }>(`SELECT id::text FROM ${h.schema}.outbox`);
  t.equal(rows.length, 1);
  t.equal(await h.waitForState(rows[0]!.id), 'delivered');
  t.same(
    h.attempts.map((a) => [a.result.kind === 'response' ? a.result.status : a.result.kind]),
    [[200]],
    'accepted at the first attempt',
  );
  t.equal(published.length, 1);
  const event = published[0]!;
  t.equal(event.sender, 'seller', 'identity from the verified signature');
  t.equal(event.auth.mode, 'rfc9421');
  t.equal(event.operationId, 'op_reports_acme');
  t.equal(event.taskType, 'media_buy_delivery');
  t.match(event.taskId, /^reporting\./);
  const body = JSON.parse(event.body.toString()) as Record<string, unknown>;
  t.same(body.context, { agency: 'acme' }, 'context echoed verbatim');
  const report = DeliveryReportSchema.safeParse(body.result);
  t.ok(report.success, 'the aggregated result passes the report schema');
  t.same(report.data?.media_buy_deliveries.map((r) => r.media_buy_id).sort(), [
    'mb_1',
    'mb_2',
    'mb_3',
  ]);
  t.equal(report.data?.sequence_number, 1);

  // The stream's next payload (same task_id, envelope status `completed`).
  t.equal(await channels.tick(Date.parse('2026-03-10T12:00:01Z')), 1);
  const next = await h.pool.query<{ id: string }>(
    `SELECT id::text FROM ${h.schema}.outbox ORDER BY id`,
  );
  const state = await h.waitForState(next.rows[1]!.id);
  // Reports are not task results: the stream's second report is no terminal conflict.
  t.equal(state, 'delivered', 'the second report of a stream is accepted too');
  t.equal(published.length, 2);

  // Each attempt is in webhook_activity under every buy the payload covers.
  const activity = async (principalId: string, mediaBuyId: string, want: number) => {
    for (let i = 0; i < 100; i++) {
      await h.activity.flush();
      const list = await h.activity.list({ principalId, mediaBuyId });
      if (list.length >= want || i === 99) {
        return list.map((r) => [r.notification_type, r.sequence_number, r.status, r.attempt]);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return [];
  };
  for (const id of ['mb_1', 'mb_2', 'mb_3']) {
    t.same(
      await activity('p_acme', id, 2),
      [
        ['scheduled', 2, 'success', 1],
        ['scheduled', 1, 'success', 1],
      ],
      `${id}: both aggregated attempts, newest first`,
    );
  }
  t.same(await activity('p_other', 'mb_1', 0), [], 'another principal sees none');

  // A buy outside the stream gets its own report, listed under it alone.
  clock.now = Date.parse('2026-03-10T12:20:00Z');
  await channels.mediaBuyChannelsConfigured({
    mediaBuyId: 'mb_4',
    principalId: 'p_acme',
    reportingWebhook: { ...registration, operation_id: 'op_reports_mb4' },
  });
  t.equal(await channels.tick(Date.parse('2026-03-10T13:00:01Z')), 2, 'the stream and mb_4');
  const third = await h.pool.query<{ id: string }>(
    `SELECT id::text FROM ${h.schema}.outbox ORDER BY id`,
  );
  t.equal(third.rows.length, 4);
  for (const r of third.rows.slice(2)) t.equal(await h.waitForState(r.id), 'delivered');
  const own = await activity('p_acme', 'mb_4', 1);
  t.equal(own.length, 1, 'mb_4 sees its own report only, none of the stream');
  t.match(own[0], ['scheduled', Number, 'success', 1]);
  for (const id of ['mb_1', 'mb_2', 'mb_3']) {
    t.same(
      (await activity('p_acme', id, 3)).map((r) => r[1]),
      [3, 2, 1],
      `${id}: the stream's three payloads, not mb_4's report`,
    );
  }
});
