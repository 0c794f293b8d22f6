/**
 * Request idempotency (same key + same canonical request -> stored response, replayed,
 * no second webhook; changed request -> IDEMPOTENCY_CONFLICT) and X-Dry-Run (a result,
 * no rows, no webhooks).
 */
import t from 'tap';
import type { Pool } from '../../shared/infra/pg.js';
import { buyer, harness, START } from './support/core.js';

const CREATIVE = 'http://127.0.0.1:3002';
const buy = (extra: Record<string, unknown> = {}) => ({
  buyer_ref: 'idem-buy',
  brand_manifest: { url: 'https://acme.example' },
  packages: [
    {
      buyer_ref: 'p1',
      product_id: 'audio_podcast_network',
      pricing_option_id: 'podcast_cpm',
      budget: 3000,
    },
  ],
  start_time: { type: 'asap' },
  end_time: new Date(START + 7 * 86400_000).toISOString(),
  ...extra,
});

async function count(h: { pool: Pool; schema: string }, table: string): Promise<number> {
  const { rows } = await h.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${h.schema}.${table}`,
  );
  return Number(rows[0]!.n);
}

t.test('idempotent replay returns the stored response and fires nothing more', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  const push = {
    url: 'https://b.example/h',
    operation_id: 'op_webhook_idempotency_replay',
    authentication: { schemes: ['HMAC-SHA256'], credentials: 'x'.repeat(16) + 'y'.repeat(16) },
  };
  const first = await h.ok(
    'sales',
    'create_media_buy',
    buy({ idempotency_key: 'req-key-000001', push_notification_config: push }),
    c,
  );
  t.equal(first.replayed, undefined);
  const channelCalls = h.notifications.calls.length;
  // Same request, credential rotated: credentials are outside the canonical hash.
  const rotated = {
    ...push,
    authentication: { schemes: ['HMAC-SHA256'], credentials: 'z'.repeat(40) },
  };
  const replay = await h.ok(
    'sales',
    'create_media_buy',
    buy({ idempotency_key: 'req-key-000001', push_notification_config: rotated }),
    c,
  );
  t.equal(replay.replayed, true);
  t.equal(replay.task_id, first.task_id);
  t.equal(await count(h, 'media_buys'), 1, 'no second buy');
  t.equal(h.notifications.calls.length, channelCalls, 'no notification on replay');
  h.clock.advance(1000);
  await h.core.executor.runDue();
  t.equal(
    h.notifications.of('taskStatusChanged').length,
    1,
    'one logical webhook per status change',
  );

  // Changed URL: a different request.
  const conflict = await h.err(
    'sales',
    'create_media_buy',
    buy({
      idempotency_key: 'req-key-000001',
      push_notification_config: { ...push, url: 'https://b.example/other' },
    }),
    c,
  );
  t.equal(conflict.code, 'IDEMPOTENCY_CONFLICT');
  // Keys are per principal: another principal may use the same key.
  const other = await h.core.issueToken('sales', 'other-principal', { media_buys: ['write'] });
  const theirs = await h.ok(
    'sales',
    'create_media_buy',
    buy({ idempotency_key: 'req-key-000001' }),
    { authorization: `Bearer ${other}` },
  );
  t.not(theirs.task_id, first.task_id);
  // Key order and whitespace do not matter (canonical JSON).
  const reordered = JSON.parse(
    JSON.stringify(buy({ push_notification_config: push, idempotency_key: 'req-key-000001' })),
  );
  t.equal((await h.ok('sales', 'create_media_buy', reordered, c)).replayed, true);
  // Expired record: the key binds again.
  h.clock.advance(86400_000 + 1000);
  const fresh = await h.err(
    'sales',
    'create_media_buy',
    buy({ idempotency_key: 'req-key-000001' }),
    c,
  );
  t.equal(
    fresh.code,
    'VALIDATION_ERROR',
    'the key is free again; buyer_ref reuse is what fails now',
  );
  t.equal(fresh.field, 'buyer_ref');
});

t.test('a refused request does not bind its key', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  const bad = await h.err(
    'sales',
    'create_media_buy',
    buy({
      idempotency_key: 'req-key-000002',
      packages: [{ buyer_ref: 'p', product_id: 'ghost', pricing_option_id: 'x', budget: 1 }],
    }),
    c,
  );
  t.equal(bad.code, 'PRODUCT_NOT_FOUND');
  const ok = await h.ok('sales', 'create_media_buy', buy({ idempotency_key: 'req-key-000002' }), c);
  t.equal(ok.status, 'submitted');
  t.equal(ok.replayed, undefined);
});

t.test('concurrent twins: one creates, the other replays', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  const [a, b] = await Promise.all([
    h.ok('sales', 'create_media_buy', buy({ idempotency_key: 'req-key-000003' }), c),
    h.ok('sales', 'create_media_buy', buy({ idempotency_key: 'req-key-000003' }), c),
  ]);
  t.equal(a.task_id, b.task_id);
  t.equal([a.replayed, b.replayed].filter(Boolean).length, 1);
  t.equal(await count(h, 'media_buys'), 1);
});

t.test('X-Dry-Run changes nothing and notifies nothing', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  const dry = { dryRun: true };
  const tables = [
    'media_buys',
    'packages',
    'tasks',
    'idempotency',
    'creatives',
    'accounts',
    'signal_deployments',
    'previews',
    'agent_notification_configs',
  ];
  const before = await Promise.all(tables.map((x) => count(h, x)));

  const r = await h.call(
    'sales',
    'create_media_buy',
    buy({
      idempotency_key: 'dry-key-0001',
      push_notification_config: { url: 'https://b.example/h', operation_id: 'op-dry' },
      reporting_webhook: { url: 'https://b.example/r', reporting_frequency: 'daily' },
    }),
    c,
    dry,
  );
  t.notOk(r instanceof Error);
  const res = r as Record<string, unknown>;
  t.equal(res.dry_run, true);
  t.equal(res.status, 'submitted', 'the result a real call would give');
  t.ok(res.task_id);
  // Validation still runs.
  const refused = await h.call('sales', 'create_media_buy', buy({ packages: [] }), c, dry);
  t.ok(refused instanceof Error && (refused as { code: string }).code === 'VALIDATION_ERROR');
  // Without credentials a dry run of an authenticated task is still AUTH_REQUIRED.
  const noCreds = await h.call('sales', 'create_media_buy', buy(), {}, dry);
  t.equal((noCreds as { code: string }).code, 'AUTH_REQUIRED');

  await h.call(
    'sales',
    'sync_creatives',
    {
      creatives: [
        {
          creative_id: 'c',
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
    dry,
  );
  await h.call(
    'sales',
    'sync_accounts',
    {
      accounts: [
        {
          name: 'Acme',
          notification_configs: [
            {
              subscriber_id: 's1',
              url: 'https://b.example/a',
              event_types: ['creative.status_changed'],
            },
          ],
        },
      ],
    },
    c,
    dry,
  );
  await h.call(
    'signals',
    'activate_signal',
    {
      signal_agent_segment_id: 'sig_luxury_auto_intenders',
      deployments: [{ type: 'platform', platform: 'amazon-dsp' }],
    },
    buyer(h, 'signals'),
    dry,
  );
  const preview = await h.call(
    'creative',
    'preview_creative',
    {
      request_type: 'single',
      format_id: { agent_url: CREATIVE, id: 'display_728x90' },
      creative_manifest: {
        assets: {
          image: { asset_type: 'image', url: 'https://x.example/i.png' },
          click_url: { asset_type: 'url', url: 'https://x.example' },
        },
      },
    },
    buyer(h, 'creative'),
    dry,
  );
  t.equal((preview as unknown as { dry_run: boolean }).dry_run, true);
  await h.call(
    'sales',
    'sync_agent_notification_configs',
    {
      notification_configs: [
        { subscriber_id: 'a1', url: 'https://b.example/c', event_types: ['capabilities.changed'] },
      ],
    },
    c,
    dry,
  );

  const after = await Promise.all(tables.map((x) => count(h, x)));
  t.same(after, before, 'no rows anywhere');
  t.same(h.notifications.calls, [], 'no notifications');
  h.clock.advance(3600_000);
  t.equal(await h.core.executor.runDue(), 0, 'no task left behind');

  // The same key used for real afterwards is not bound by the dry run.
  const real = await h.ok('sales', 'create_media_buy', buy({ idempotency_key: 'dry-key-0001' }), c);
  t.equal(real.replayed, undefined);

  // The sync_creatives dry_run parameter previews without applying.
  const preview2 = await h.ok(
    'sales',
    'sync_creatives',
    {
      dry_run: true,
      creatives: [
        {
          creative_id: 'c9',
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
  t.equal(preview2.dry_run, true);
  t.equal((preview2.creatives as Array<{ action: string }>)[0]!.action, 'created');
  t.equal(await count(h, 'creatives'), 0);
  t.same(h.notifications.of('accountNotification'), []);
});

t.test('expired idempotency records and previews are purged', async (t) => {
  const { purgeExpired } = await import('../../agents/service.js');
  const h = await harness(t);
  await h.ok('sales', 'create_media_buy', buy({ idempotency_key: 'purge-key-0001' }), buyer(h));
  await h.ok(
    'creative',
    'preview_creative',
    {
      request_type: 'single',
      format_id: { agent_url: CREATIVE, id: 'display_728x90' },
      creative_manifest: {
        assets: {
          image: { asset_type: 'image', url: 'https://x.example/i.png' },
          click_url: { asset_type: 'url', url: 'https://x.example' },
        },
      },
    },
    buyer(h, 'creative'),
  );
  t.same(await purgeExpired(h.pool, h.schema, h.clock), {
    idempotency: 0,
    previews: 0,
    answered: 0,
  });
  h.clock.advance(86400_000 + 1);
  t.same(await purgeExpired(h.pool, h.schema, h.clock), {
    idempotency: 1,
    previews: 1,
    answered: 0,
  });
  t.equal(await count(h, 'idempotency'), 0);
});
