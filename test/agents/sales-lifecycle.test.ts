/**
 * The media-buy lifecycle as the published protocol and its compliance storyboards read it:
 * pending_creatives / pending_start before a buy is live, the buy's status in top-level
 * `status` for a buyer pinned to 3.0 (and `media_buy_status` for everyone), the required
 * idempotency_key of the published form (older forms still accepted without), a past
 * start_time and measurement terms (TERMS_REJECTED). Every answer passes the harness's strict schema check.
 */
import t from 'tap';
import { TaskError } from '../../shared/errors/task-errors.js';
import { responseDrift } from '../../agents/protocol/index.js';
import { errorResponse } from '../../agents/runtime/errors.js';
import { pinnedRelease } from '../../agents/runtime/versions.js';
import { buyer, harness, olderFormBuy, START } from './support/core.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const end = new Date(START + 10 * DAY).toISOString();
let n = 0;
const key = () => `lifecycle-key-${++n}-${Math.random().toString(36).slice(2, 10)}`;

/** A published-form create of one fixed-price package (no creatives). */
const published = (extra: Record<string, unknown> = {}) => ({
  idempotency_key: key(),
  brand: { domain: 'acme.example' },
  packages: [{ product_id: 'video_olv_news', pricing_option_id: 'olv_news_cpm', budget: 5000 }],
  start_time: 'asap',
  end_time: end,
  ...extra,
});

const noApproval = (t: Parameters<typeof harness>[0]) =>
  harness(t, { settings: { approval: 'never' } });

async function creative(h: Awaited<ReturnType<typeof harness>>, id: string) {
  const formats = await h.ok('sales', 'list_creative_formats', {}, buyer(h));
  const display = (formats.formats as Array<{ format_id: { id: string; agent_url: string } }>).find(
    (f) => f.format_id.id === 'display_300x250',
  )!;
  const r = await h.ok(
    'sales',
    'sync_creatives',
    {
      idempotency_key: key(),
      creatives: [
        {
          creative_id: id,
          name: id,
          format_id: display.format_id,
          assets: {
            image: {
              asset_type: 'image',
              url: 'https://cdn.example/a.png',
              width: 300,
              height: 250,
            },
            click_url: { asset_type: 'url', url: 'https://acme.example/landing' },
          },
        },
      ],
    },
    buyer(h),
  );
  const action = (r.creatives as Array<{ action: string }>)[0]!.action;
  if (action === 'failed') throw new Error(`creative refused: ${JSON.stringify(r.creatives)}`);
}

t.test('pinnedRelease: what a request pins', async (t) => {
  t.equal(pinnedRelease({}, 'adcp'), null, 'unpinned');
  t.equal(pinnedRelease({ adcp_major_version: 3 }, 'adcp'), '3.0', 'the integer alone is 3.0');
  t.equal(pinnedRelease({ adcp_major_version: 3, adcp_version: '3.1' }, 'adcp'), '3.1');
  t.equal(pinnedRelease({ adcp_version: '3.2-beta.5' }, 'adcp'), '3.2');
  t.equal(pinnedRelease({ svc_major_version: 3 }, 'svc'), '3.0', 'neutral brand');
  t.equal(pinnedRelease({ adcp_version: 'x' }, 'adcp'), null, 'malformed: none');
});

t.test('pending_creatives until creatives, pending_start until the flight starts', async (t) => {
  const h = await noApproval(t);
  const c = buyer(h);
  const bare = await h.ok('sales', 'create_media_buy', published(), c);
  t.equal(bare.status, 'completed', 'top-level status is the task status (3.1+)');
  t.equal(bare.media_buy_status, 'pending_creatives', 'approved, no creatives yet');

  await creative(h, 'cr_life_1');
  const later = await h.ok(
    'sales',
    'create_media_buy',
    published({ start_time: new Date(START + DAY).toISOString() }),
    c,
  );
  t.equal(later.media_buy_status, 'pending_creatives');
  const pkg = (later.packages as Array<{ package_id: string }>)[0]!.package_id;
  const assigned = await h.ok(
    'sales',
    'update_media_buy',
    {
      idempotency_key: key(),
      media_buy_id: later.media_buy_id,
      packages: [{ package_id: pkg, creative_assignments: [{ creative_id: 'cr_life_1' }] }],
    },
    c,
  );
  t.equal(assigned.media_buy_status, 'pending_start', 'creatives assigned, flight not started');
  h.clock.advance(DAY + HOUR);
  const listed = await h.ok('sales', 'get_media_buys', { media_buy_ids: [later.media_buy_id] }, c);
  t.equal((listed.media_buys as Array<{ status: string }>)[0]!.status, 'active', 'in flight');

  // A pause makes a buy live: resumed without creatives it is active, not pending again.
  const paused = await h.ok(
    'sales',
    'update_media_buy',
    { idempotency_key: key(), media_buy_id: bare.media_buy_id, paused: true },
    c,
  );
  t.equal(paused.media_buy_status, 'paused');
  const resumed = await h.ok(
    'sales',
    'update_media_buy',
    { idempotency_key: key(), media_buy_id: bare.media_buy_id, paused: false },
    c,
  );
  t.equal(resumed.media_buy_status, 'active');

  // Awaiting approval, with creatives: pending_start (provisional, never active).
  const h2 = await harness(t);
  await creative(h2, 'cr_life_2');
  const submitted = await h2.ok(
    'sales',
    'create_media_buy',
    published({
      packages: [
        {
          product_id: 'video_olv_news',
          pricing_option_id: 'olv_news_cpm',
          budget: 5000,
          creative_ids: ['cr_life_2'],
        },
      ],
    }),
    buyer(h2),
  );
  t.equal(submitted.status, 'submitted');
  const pending = await h2.ok('sales', 'get_media_buys', {}, buyer(h2));
  t.match((pending.media_buys as unknown[])[0], { status: 'pending_start', confirmed_at: null });
});

t.test('a buyer pinned to 3.0 reads the buy status from top-level status', async (t) => {
  const h = await noApproval(t);
  const c = buyer(h);
  const v30 = await h.ok('sales', 'create_media_buy', published({ svc_major_version: 3 }), c);
  t.equal(v30.status, 'pending_creatives', '3.0: the buy status');
  t.equal(v30.media_buy_status, 'pending_creatives', 'and media_buy_status, the same value');
  const v31 = await h.ok(
    'sales',
    'create_media_buy',
    published({ svc_major_version: 3, svc_version: '3.1' }),
    c,
  );
  t.equal(v31.status, 'completed', '3.1: the task status');
  const upd = await h.ok(
    'sales',
    'update_media_buy',
    { idempotency_key: key(), media_buy_id: v30.media_buy_id, paused: true, svc_major_version: 3 },
    c,
  );
  t.equal(upd.status, 'paused', '3.0 update: the buy status');
  const canceled = await h.ok(
    'sales',
    'update_media_buy',
    { idempotency_key: key(), media_buy_id: v30.media_buy_id, canceled: true },
    c,
  );
  t.equal(canceled.status, 'completed', 'unpinned: the task status');
  t.equal(canceled.media_buy_status, 'canceled');
});

t.test(
  'idempotency_key: required by the published form, echoed, optional in older forms',
  async (t) => {
    const h = await noApproval(t);
    const c = buyer(h);
    const { idempotency_key: _k, ...noKey } = published();
    const missing = await h.err(
      'sales',
      'create_media_buy',
      { ...noKey, packages: [{ product_id: 'nope', pricing_option_id: 'x', budget: -1 }] },
      c,
    );
    t.equal(missing.code, 'VALIDATION_ERROR', 'refused before any product lookup');
    t.same(
      (missing.issues ?? []).map((i) => i.pointer).sort(),
      ['/idempotency_key', '/packages/0/budget'],
      'every offending field at once',
    );
    t.equal(
      missing.issues?.find((i) => i.pointer === '/idempotency_key')?.keyword,
      'required',
      'the schema keyword of a missing key',
    );
    const withKey = published();
    const made = await h.ok('sales', 'create_media_buy', withKey, c);
    t.equal(made.idempotency_key, withKey.idempotency_key, 'the key is echoed');

    const older = await h.ok('sales', 'create_media_buy', olderFormBuy('older-form', end), c);
    t.equal(older.media_buy_status, 'pending_creatives', 'the older form needs no key');

    const upd = await h.err(
      'sales',
      'update_media_buy',
      { media_buy_id: made.media_buy_id, paused: true },
      c,
    );
    t.match(upd, { code: 'VALIDATION_ERROR', field: 'idempotency_key' });
    await h.ok(
      'sales',
      'update_media_buy',
      { media_buy_id: made.media_buy_id, updates: { status: 'paused' } },
      c,
    );
    const badKey = await h.err('sales', 'create_media_buy', published({ idempotency_key: 5 }), c);
    t.equal(badKey.code, 'VALIDATION_ERROR', 'a key that is not a string');
  },
);

t.test('a past start_time is refused; earlier today is accepted', async (t) => {
  const h = await noApproval(t);
  const c = buyer(h);
  const past = await h.err(
    'sales',
    'create_media_buy',
    published({ start_time: '2020-01-01T00:00:00Z' }),
    c,
  );
  t.match(past, { code: 'INVALID_REQUEST', field: 'start_time' });
  t.ok(past instanceof TaskError);
  const today = await h.ok(
    'sales',
    'create_media_buy',
    published({ start_time: new Date(START - 2 * HOUR).toISOString() }),
    c,
  );
  t.ok(today.media_buy_id, 'two hours ago (clock skew, a date-only start) is accepted');
});

t.test(
  'measurement_terms: malformed, rejected (TERMS_REJECTED), accepted and echoed',
  async (t) => {
    const h = await noApproval(t);
    const c = buyer(h);
    const withTerms = (terms: unknown, extra: Record<string, unknown> = {}) =>
      published({
        packages: [
          {
            product_id: 'video_olv_news',
            pricing_option_id: 'olv_news_cpm',
            budget: 5000,
            measurement_terms: terms,
            ...extra,
          },
        ],
      });
    for (const [name, terms] of [
      ['not an object', 'c7'],
      ['vendor missing', { billing_measurement: { max_variance_percent: 10 } }],
      [
        'variance not a number',
        { billing_measurement: { vendor: { domain: 'v.example' }, max_variance_percent: 'x' } },
      ],
      [
        'variance 100',
        { billing_measurement: { vendor: { domain: 'v.example' }, max_variance_percent: 100 } },
      ],
      ['unknown remedy', { makegood_policy: { available_remedies: ['refund'] } }],
      ['empty remedies', { makegood_policy: { available_remedies: [] } }],
      ['repeated remedy', { makegood_policy: { available_remedies: ['credit', 'credit'] } }],
    ] as const) {
      const e = await h.err('sales', 'create_media_buy', withTerms(terms), c);
      t.equal(e.code, 'VALIDATION_ERROR', name);
      t.match(e.issues?.[0]?.pointer, /^\/packages\/0\/measurement_terms/, `${name}: named`);
    }
    const tight = await h.err(
      'sales',
      'create_media_buy',
      withTerms(
        { billing_measurement: { vendor: { domain: 'v.example' }, max_variance_percent: 0 } },
        // TERMS_REJECTED comes before the package's own budget checks.
        { budget: 1 },
      ),
      c,
    );
    t.match(tight, {
      code: 'TERMS_REJECTED',
      field: 'packages[0].measurement_terms.billing_measurement.max_variance_percent',
      details: { acceptable: { min_variance_percent: 5 } },
    });
    const window = await h.err(
      'sales',
      'create_media_buy',
      withTerms({
        billing_measurement: { vendor: { domain: 'v.example' }, measurement_window: 'c30' },
      }),
      c,
    );
    t.match(window, { code: 'TERMS_REJECTED', field: /measurement_window$/ });
    const terms = {
      billing_measurement: {
        vendor: { domain: 'v.example' },
        measurement_window: 'c7',
        max_variance_percent: 10,
      },
      makegood_policy: { available_remedies: ['additional_delivery', 'credit'] },
    };
    const ok = await h.ok('sales', 'create_media_buy', withTerms(terms), c);
    t.same((ok.packages as Array<{ measurement_terms: unknown }>)[0]!.measurement_terms, terms);
    const got = await h.ok('sales', 'get_media_buys', { media_buy_ids: [ok.media_buy_id] }, c);
    t.same(
      (got.media_buys as Array<{ packages: Array<{ measurement_terms: unknown }> }>)[0]!
        .packages[0]!.measurement_terms,
      terms,
      'kept on the package',
    );
  },
);

t.test('a create that completed at once sends no webhook (the result went inline)', async (t) => {
  const h = await noApproval(t);
  const push = { url: 'https://b.example/h', operation_id: 'op-sync' };
  await h.ok('sales', 'create_media_buy', published({ push_notification_config: push }), buyer(h));
  t.same(h.notifications.of('taskStatusChanged'), []);
});

t.test(
  'a replay with a new context is the replay; a conflict tells nothing of the first',
  async (t) => {
    const h = await noApproval(t);
    const c = buyer(h);
    const first = published({ context: { correlation_id: 'first' } });
    const made = await h.ok('sales', 'create_media_buy', first, c);
    const again = await h.ok(
      'sales',
      'create_media_buy',
      { ...first, context: { correlation_id: 'second' } },
      c,
    );
    t.equal(again.media_buy_id, made.media_buy_id, 'the echo context is not part of the request');
    t.equal(again.replayed, true);
    t.same(again.context, { correlation_id: 'second' }, "the replaying request's context");
    const conflict = await h.err(
      'sales',
      'create_media_buy',
      { ...first, packages: [{ ...first.packages[0]!, budget: 6000 }] },
      c,
    );
    t.equal(conflict.code, 'IDEMPOTENCY_CONFLICT');
    const wire = errorResponse(conflict, { brand: 'adcp' }).body as {
      errors: Array<Record<string, unknown>>;
    };
    t.same(Object.keys(wire.errors[0]!).sort(), ['code', 'message'], 'code and message only');
  },
);

t.test('the 3.0 answer is checked as 3.1 reads it; a divergent status is drift', async (t) => {
  const body = {
    media_buy_id: 'mb_1',
    packages: [],
    confirmed_at: '2026-03-02T10:00:00Z',
    revision: 1,
    currency: 'USD',
  };
  t.same(
    responseDrift('sales', 'create_media_buy', {
      ...body,
      status: 'pending_creatives',
      media_buy_status: 'pending_creatives',
    }),
    [],
    'identical values: the deprecated 3.0/3.1 form',
  );
  const divergent = responseDrift('sales', 'create_media_buy', {
    ...body,
    status: 'active',
    media_buy_status: 'pending_creatives',
  });
  t.ok(divergent.length > 0, 'status and media_buy_status differ: not the legacy form');
  t.same(
    responseDrift('sales', 'update_media_buy', {
      ...body,
      status: 'completed',
      media_buy_status: 'completed',
    }),
    [],
    'completed is the task status of every release',
  );
});
