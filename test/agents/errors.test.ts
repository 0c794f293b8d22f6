/**
 * Every error code of the spec (and the agent's 404-class codes) reached through the
 * dispatcher, with its status and field; malformed inputs of each task get a specific
 * error, never a fault.
 */
import t from 'tap';
import {
  contextOf,
  errorResponse,
  fieldOfPointer,
  plainErrorBody,
  pointerOf,
  TaskErrors,
  validationError,
} from '../../agents/runtime/errors.js';
import { TaskError } from '../../shared/errors/task-errors.js';
import { buyer, harness, pendingBuyId, START } from './support/core.js';

const CREATIVE = 'http://127.0.0.1:3002';
const end = new Date(START + 86400_000).toISOString();
const pkg = (extra: Record<string, unknown> = {}) => ({
  buyer_ref: 'p1',
  product_id: 'video_olv_news',
  pricing_option_id: 'olv_news_cpm',
  budget: 5000,
  ...extra,
});
const buy = (extra: Record<string, unknown> = {}) => ({
  buyer_ref: 'b1',
  brand_manifest: { url: 'https://acme.example' },
  packages: [pkg()],
  start_time: { type: 'asap' },
  end_time: end,
  ...extra,
});

t.test('spec error codes', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  const expect = async (p: Promise<TaskError>, code: string, status: number, field?: string) => {
    const e = await p;
    t.equal(e.code, code, `${code}: ${e.message}`);
    t.equal(e.status, status);
    if (field !== undefined) t.equal(e.field, field);
    return e;
  };
  /** create_media_buy with `extra` merged into a valid buy: refused with `code` at `field`. */
  const badBuy = (extra: Record<string, unknown>, code: string, field: string) =>
    expect(h.err('sales', 'create_media_buy', buy(extra), c), code, 400, field);

  await expect(h.err('sales', 'no_such_task', {}), 'UNSUPPORTED_FEATURE', 404);
  await expect(h.err('creative', 'get_products', {}), 'UNSUPPORTED_FEATURE', 404);

  await expect(
    h.err('sales', 'create_media_buy', buy({ packages: [pkg({ budget: 0 })] }), c),
    'VALIDATION_ERROR',
    400,
    'packages[0].budget',
  );
  const neg = await h.err(
    'sales',
    'create_media_buy',
    buy({ packages: [pkg(), pkg({ buyer_ref: 'p2', budget: -5 })] }),
    c,
  );
  t.equal(neg.field, 'packages[1].budget');
  t.match(neg.message, /greater than 0/);
  await expect(
    h.err('sales', 'create_media_buy', buy({ packages: [pkg({ budget: '100' })] }), c),
    'VALIDATION_ERROR',
    400,
    'packages[0].budget',
  );
  await expect(
    // buyer_ref is optional (the published request has none), but not of any type.
    h.err('sales', 'create_media_buy', buy({ buyer_ref: 5 }), c),
    'VALIDATION_ERROR',
    400,
    'buyer_ref',
  );
  await expect(
    h.err('sales', 'create_media_buy', buy({ packages: [] }), c),
    'VALIDATION_ERROR',
    400,
    'packages',
  );
  await expect(
    h.err('sales', 'create_media_buy', buy({ end_time: 'tomorrow' }), c),
    'VALIDATION_ERROR',
    400,
    'end_time',
  );
  await expect(
    h.err('sales', 'create_media_buy', buy({ end_time: new Date(START - 1000).toISOString() }), c),
    'VALIDATION_ERROR',
    400,
    'end_time',
  );
  await expect(
    h.err('sales', 'create_media_buy', buy({ start_time: { type: 'later' } }), c),
    'VALIDATION_ERROR',
    400,
    'start_time',
  );
  await expect(
    h.err('sales', 'create_media_buy', buy({ brand_manifest: 'acme' }), c),
    'VALIDATION_ERROR',
    400,
    'brand_manifest',
  );
  await expect(
    h.err('sales', 'create_media_buy', buy({ packages: [pkg({ pricing_option_id: 'nope' })] }), c),
    'VALIDATION_ERROR',
    400,
    'packages[0].pricing_option_id',
  );
  await badBuy(
    { packages: [pkg({ pricing_option_id: 'olv_news_auction' })] },
    'VALIDATION_ERROR',
    'packages[0].bid_price',
  );
  await badBuy(
    { packages: [pkg({ pricing_option_id: 'olv_news_auction', bid_price: 1 })] },
    'VALIDATION_ERROR',
    'packages[0].bid_price',
  );
  await expect(
    h.err('sales', 'create_media_buy', buy({ packages: [pkg({ budget: 10 })] }), c),
    'VALIDATION_ERROR',
    400,
    'packages[0].budget',
  );
  await expect(
    h.err('sales', 'create_media_buy', buy({ packages: [pkg(), pkg()] }), c),
    'VALIDATION_ERROR',
    400,
    'packages[1].buyer_ref',
  );
  await expect(
    h.err('sales', 'get_products', { filters: { channels: ['radio'] } }),
    'VALIDATION_ERROR',
    400,
    'filters.channels[0]',
  );
  await expect(
    h.err('sales', 'get_products', { filters: { budget_range: { min: 10, max: 1 } } }),
    'VALIDATION_ERROR',
    400,
  );
  await expect(
    h.err('sales', 'get_products', { context: 'x' }),
    'VALIDATION_ERROR',
    400,
    'context',
  );
  await expect(h.err('sales', 'get_products', [] as unknown), 'VALIDATION_ERROR', 400);
  await expect(h.err('sales', 'get_products', 'brief' as unknown), 'VALIDATION_ERROR', 400);

  await expect(
    h.err('sales', 'create_media_buy', buy({ packages: [pkg({ product_id: 'ghost' })] }), c),
    'PRODUCT_NOT_FOUND',
    404,
    'packages[0].product_id',
  );
  // Another principal's custom product is invisible.
  const other = await h.core.issueToken('sales', 'someone-else', { media_buys: ['write'] });
  await expect(
    h.err(
      'sales',
      'create_media_buy',
      buy({
        packages: [
          pkg({
            product_id: 'custom_demo_buyer_sports_bundle',
            pricing_option_id: 'custom_sports_cpm',
          }),
        ],
      }),
      { authorization: `Bearer ${other}` },
    ),
    'PRODUCT_NOT_FOUND',
    404,
  );

  // Webhook registration without operation_id (the published buyer sends none): accepted,
  // its operation_id is the call's task id. A bad URL or reporting webhook is refused.
  const noOp = await h.call(
    'sales',
    'create_media_buy',
    buy({ buyer_ref: 'no-op-id', push_notification_config: { url: 'https://b.example/h' } }),
    c,
  );
  t.notOk(noOp instanceof TaskError, 'no operation_id: accepted');
  const noOpTask = (noOp as { task_id?: string }).task_id;
  t.match(noOpTask, /^task_/);
  const { rows: pushRows } = await h.pool.query(
    `SELECT push_notification_config AS p FROM ${h.schema}.tasks WHERE task_id = $1`,
    [noOpTask],
  );
  t.same(pushRows[0].p, { url: 'https://b.example/h', operation_id: noOpTask });
  await badBuy(
    { push_notification_config: { url: 'not a url', operation_id: 'x' } },
    'INVALID_REQUEST',
    'push_notification_config.url',
  );
  await badBuy(
    {
      push_notification_config: {
        url: 'https://b.example/h',
        operation_id: 'o',
        authentication: { schemes: ['HMAC-SHA256'], credentials: 'short' },
      },
    },
    'INVALID_REQUEST',
    'push_notification_config.authentication.credentials',
  );
  await badBuy(
    { reporting_webhook: { url: 'https://b.example/r', reporting_frequency: 'weekly' } },
    'INVALID_REQUEST',
    'reporting_webhook.reporting_frequency',
  );
  await expect(
    h.err('sales', 'get_products', { push_notification_config: 'https://b.example' }),
    'INVALID_REQUEST',
    400,
    'push_notification_config',
  );

  // Format ids: a plain string is INVALID_FORMAT_ID wherever it appears.
  const creative = (format_id: unknown) => ({
    creatives: [{ creative_id: 'c1', name: 'n', format_id, assets: {} }],
  });
  await expect(
    h.err('sales', 'sync_creatives', creative('display_300x250'), c),
    'INVALID_FORMAT_ID',
    400,
    'creatives[0].format_id',
  );
  await expect(
    h.err('sales', 'sync_creatives', creative({ id: 'display_300x250' }), c),
    'INVALID_FORMAT_ID',
    400,
  );
  await expect(
    h.err('sales', 'sync_creatives', creative({ agent_url: 'ftp://x', id: 'display_300x250' }), c),
    'INVALID_FORMAT_ID',
    400,
  );
  await expect(
    h.err(
      'creative',
      'build_creative',
      { target_format_id: 'display_300x250', message: 'hi' },
      buyer(h, 'creative'),
    ),
    'INVALID_FORMAT_ID',
    400,
    'target_format_id',
  );
  await expect(
    h.err(
      'creative',
      'preview_creative',
      { request_type: 'single', format_id: 'video_30s', creative_manifest: { assets: {} } },
      buyer(h, 'creative'),
    ),
    'INVALID_FORMAT_ID',
    400,
    'format_id',
  );
  await expect(
    h.err('creative', 'list_creative_formats', { format_ids: ['display_300x250'] }),
    'INVALID_FORMAT_ID',
    400,
    'format_ids[0]',
  );
  // A creative whose format is unknown or whose manifest does not match fails alone
  // (action failed with its errors, published per-item result); the others are applied.
  const failedItem = async (
    body: Record<string, unknown>,
    code: string,
    field: string | undefined,
    why: string,
  ) => {
    const r = await h.ok('sales', 'sync_creatives', body, c);
    const item = (r.creatives as Array<Record<string, unknown>>)[0]!;
    t.equal(item.action, 'failed', why);
    t.notOk('status' in item, `${why}: a failed creative has no review status`);
    const errors = item.errors as Array<Record<string, unknown>>;
    t.equal(errors.length, 1, why);
    t.equal(errors[0]!.code, code, why);
    if (field !== undefined) t.equal(errors[0]!.field, field, why);
    t.equal(errors[0]!.recovery, 'correctable', why);
    return r;
  };
  await failedItem(
    creative({ agent_url: CREATIVE, id: 'display_1x1' }),
    'FORMAT_NOT_SUPPORTED',
    'creatives[0].format_id.id',
    'unknown format at the creative agent',
  );
  await failedItem(
    creative({ agent_url: 'https://other-creative.example', id: 'display_300x250' }),
    'FORMAT_NOT_SUPPORTED',
    undefined,
    'format of another creative agent',
  );
  await failedItem(
    creative({ agent_url: CREATIVE, id: 'display_300x250' }),
    'VALIDATION_ERROR',
    'creatives[0].assets.image',
    'a required asset missing',
  );
  await failedItem(
    {
      creatives: [
        {
          creative_id: 'c1',
          name: 'n',
          format_id: { agent_url: CREATIVE, id: 'audio_30s' },
          assets: {
            audio: { asset_type: 'video', url: 'https://x.example/a.mp4' },
            click_url: { asset_type: 'url', url: 'https://x.example' },
          },
        },
      ],
    },
    'VALIDATION_ERROR',
    'creatives[0].assets.audio.asset_type',
    'an asset of the wrong type',
  );
  // Mixed: the bad one fails, the good one is created and listed; the failed one is not.
  const goodDisplay = {
    creative_id: 'mixed_good',
    name: 'n',
    format_id: { agent_url: CREATIVE, id: 'display_300x250' },
    assets: {
      image: { asset_type: 'image', url: 'https://x.example/i.png' },
      click_url: { asset_type: 'url', url: 'https://x.example' },
    },
  };
  const mixed = await h.ok(
    'sales',
    'sync_creatives',
    {
      creatives: [
        {
          ...goodDisplay,
          creative_id: 'mixed_bad',
          format_id: { agent_url: CREATIVE, id: 'nope' },
        },
        goodDisplay,
      ],
    },
    c,
  );
  t.same(
    (mixed.creatives as Array<Record<string, unknown>>).map((x) => [x.creative_id, x.action]),
    [
      ['mixed_bad', 'failed'],
      ['mixed_good', 'created'],
    ],
  );
  const listed = await h.ok('sales', 'list_creatives', {}, c);
  const ids = (listed.creatives as Array<{ creative_id: string }>).map((x) => x.creative_id);
  t.ok(ids.includes('mixed_good'), 'the good creative is stored');
  t.notOk(ids.includes('mixed_bad'), 'the failed creative is not stored');
  // A package may name a creative not synced yet: kept pending, not refused
  // (sales-pending-creatives.test.ts); sync_creatives' own assignments still must name one.
  await h.ok(
    'sales',
    'create_media_buy',
    buy({ buyer_ref: 'ghost-ref', packages: [pkg({ creative_ids: ['ghost'] })] }),
    c,
  );
  await expect(
    h.err(
      'sales',
      'sync_creatives',
      {
        creatives: [
          {
            creative_id: 'c1',
            name: 'n',
            format_id: { agent_url: CREATIVE, id: 'display_300x250' },
            assets: {
              image: { asset_type: 'image', url: 'https://x.example/i.png' },
              click_url: { asset_type: 'url', url: 'https://x.example' },
            },
          },
        ],
        assignments: { c1: ['pkg_nope'] },
      },
      c,
    ),
    'PACKAGE_NOT_FOUND',
    404,
    'assignments.c1[0]',
  );
  await expect(
    h.err('sales', 'get_task_status', { task_id: 'task_nope' }, c),
    'REFERENCE_NOT_FOUND',
    404,
    'task_id',
  );

  // A media buy of another principal is not found; its task neither.
  const mine = await h.ok('sales', 'create_media_buy', buy(), c);
  const mineId = await pendingBuyId(h, mine.task_id);
  await expect(
    h.err(
      'sales',
      'update_media_buy',
      { media_buy_id: mineId, updates: {} },
      { authorization: `Bearer ${other}` },
    ),
    'MEDIA_BUY_NOT_FOUND',
    404,
  );
  const otherReader = await h.core.issueToken('sales', 'someone-else', { reports: ['read'] });
  await expect(
    h.err(
      'sales',
      'get_task_status',
      { task_id: mine.task_id },
      { authorization: `Bearer ${otherReader}` },
    ),
    'REFERENCE_NOT_FOUND',
    404,
  );
  await expect(
    h.err('sales', 'update_media_buy', { media_buy_id: mineId, updates: { status: 'paused' } }, c),
    'INVALID_STATE',
    409,
    'updates.status',
  );
  await expect(
    h.err(
      'sales',
      'update_media_buy',
      { media_buy_id: mineId, updates: { status: 'completed' } },
      c,
    ),
    'VALIDATION_ERROR',
    400,
    'updates.status',
  );
  await expect(
    h.err(
      'sales',
      'update_media_buy',
      { media_buy_id: mineId, updates: { budget_change: -999999 } },
      c,
    ),
    'VALIDATION_ERROR',
    400,
    'updates.budget_change',
  );
  await expect(
    h.err(
      'sales',
      'update_media_buy',
      { media_buy_id: mineId, updates: { packages: [{ package_id: 'pkg_x' }] } },
      c,
    ),
    'PACKAGE_NOT_FOUND',
    404,
    'updates.packages[0].package_id',
  );
  await expect(h.err('sales', 'create_media_buy', buy(), c), 'VALIDATION_ERROR', 400, 'buyer_ref');

  // Delivery granularity outside the declared windowed granularities.
  await expect(
    h.err(
      'sales',
      'get_media_buy_delivery',
      { media_buy_id: mineId, time_granularity: '15min' },
      c,
    ),
    'UNSUPPORTED_GRANULARITY',
    400,
    'time_granularity',
  );
  await expect(
    h.err(
      'sales',
      'get_media_buy_delivery',
      { media_buy_id: mineId, date_range: { start: '2026-03-05', end: '2026-03-01' } },
      c,
    ),
    'VALIDATION_ERROR',
    400,
  );

  // Idempotency conflict.
  const key = 'key-0001-conflict';
  await h.ok('sales', 'create_media_buy', buy({ buyer_ref: 'idem', idempotency_key: key }), c);
  await expect(
    h.err('sales', 'create_media_buy', buy({ buyer_ref: 'idem-2', idempotency_key: key }), c),
    'IDEMPOTENCY_CONFLICT',
    409,
    'idempotency_key',
  );
  await expect(
    h.err('sales', 'create_media_buy', buy({ idempotency_key: 'short' }), c),
    'VALIDATION_ERROR',
    400,
    'idempotency_key',
  );

  // Accounts: another principal's account id.
  await h.ok('sales', 'sync_accounts', { accounts: [{ account_id: 'acct-1', name: 'Acme' }] }, c);
  await expect(
    h.err(
      'sales',
      'sync_accounts',
      { accounts: [{ account_id: 'acct-1', name: 'Mine' }] },
      { authorization: `Bearer ${other}` },
    ),
    'ACCOUNT_NOT_FOUND',
    404,
    'accounts[0].account_id',
  );
});

t.test('signal agent refusals: several errors[] at once', async (t) => {
  const h = await harness(t);
  const c = buyer(h, 'signals');
  const ttd = { type: 'platform', platform: 'the-trade-desk' };
  const body = async (p: Promise<TaskError>) => errorResponse(await p, { brand: 'svc' });

  const nf = await body(
    h.err(
      'signals',
      'activate_signal',
      { signal_agent_segment_id: 'sig_nope', deployments: [ttd] },
      c,
    ),
  );
  t.equal(nf.status, 404);
  t.equal(
    (nf.body.errors as Array<{ code: string; field: string; suggestion: string }>)[0]!.code,
    'SIGNAL_AGENT_SEGMENT_NOT_FOUND',
  );
  t.ok((nf.body.errors as Array<{ suggestion: string }>)[0]!.suggestion);

  const already = await body(
    h.err(
      'signals',
      'activate_signal',
      { signal_agent_segment_id: 'sig_adults_18_plus', deployments: [ttd] },
      c,
    ),
  );
  t.equal(already.status, 409);
  t.match(already.body, { errors: [{ code: 'ALREADY_ACTIVATED', field: 'deployments[0]' }] });

  const failed = await body(
    h.err(
      'signals',
      'activate_signal',
      { signal_agent_segment_id: 'sig_legacy_segment_unavailable', deployments: [ttd] },
      c,
    ),
  );
  t.equal(failed.status, 422);
  t.match(failed.body, { errors: [{ code: 'ACTIVATION_FAILED' }] });

  const unauth = await body(
    h.err(
      'signals',
      'activate_signal',
      {
        signal_agent_segment_id: 'sig_sports_enthusiasts',
        deployments: [
          { type: 'platform', platform: 'dv360', account: 'someone-elses' },
          { type: 'platform', platform: 'unknown-dsp' },
        ],
      },
      c,
    ),
  );
  t.equal(unauth.status, 403);
  t.match(unauth.body, {
    errors: [
      { code: 'DEPLOYMENT_UNAUTHORIZED', field: 'deployments[0].account' },
      { code: 'DEPLOYMENT_UNAUTHORIZED', field: 'deployments[1].platform' },
    ],
  });

  // A principal the signals agent knows (an unknown one has no signal access at all).
  await h.core.onboardPrincipal({
    agent: 'signals',
    principalId: 'someone',
    permissions: { products: ['read'], media_buys: ['write'] },
  });
  const viewer = await h.core.issueToken('signals', 'someone', {
    products: ['read'],
    media_buys: ['write'],
  });
  const hidden = await body(
    h.err(
      'signals',
      'get_signals',
      {
        signal_spec: 'sports',
        deliver_to: {
          deployments: [{ type: 'agent', agent_url: 'https://private-sales.example' }],
          countries: ['US'],
        },
      },
      { authorization: `Bearer ${viewer}` },
    ),
  );
  t.equal(hidden.status, 404);
  t.match(hidden.body, { errors: [{ code: 'AGENT_NOT_FOUND' }] });
  // ...while the principal it is visible to sees it.
  t.ok(
    (
      await h.ok(
        'signals',
        'get_signals',
        {
          signal_spec: 'sports',
          deliver_to: {
            deployments: [{ type: 'agent', agent_url: 'https://private-sales.example/' }],
            countries: ['US'],
          },
        },
        c,
      )
    ).signals,
  );

  // Owned and custom signals of another principal are not found.
  const foreign = await body(
    h.err(
      'signals',
      'activate_signal',
      { signal_agent_segment_id: 'sig_demo_buyer_loyalists', deployments: [ttd] },
      { authorization: `Bearer ${viewer}` },
    ),
  );
  t.match(foreign.body, { errors: [{ code: 'SIGNAL_AGENT_SEGMENT_NOT_FOUND' }] });

  // signal_spec is optional in the published request (a catalog browse); empty is refused.
  const invalid = await body(
    h.err(
      'signals',
      'get_signals',
      { signal_spec: '', deliver_to: { deployments: [ttd], countries: ['US'] } },
      c,
    ),
  );
  t.equal(invalid.status, 400);
  t.match(invalid.body, { errors: [{ code: 'VALIDATION_ERROR', field: 'signal_spec' }] });
  t.match(
    (
      await body(
        h.err(
          'signals',
          'get_signals',
          { signal_spec: 'x', deliver_to: { deployments: [ttd], countries: ['usa'] } },
          c,
        ),
      )
    ).body,
    { errors: [{ field: 'deliver_to.countries[0]' }] },
  );
  t.match(
    (
      await body(
        h.err(
          'signals',
          'get_signals',
          { signal_spec: 'x', deliver_to: { deployments: [{ type: 'tv' }], countries: ['US'] } },
          c,
        ),
      )
    ).body,
    { errors: [{ field: 'deliver_to.deployments[0]' }] },
  );
  t.match(
    (
      await body(
        h.err(
          'signals',
          'get_signals',
          {
            signal_spec: 'x',
            deliver_to: { deployments: [ttd], countries: ['US'] },
            max_results: 0,
          },
          c,
        ),
      )
    ).body,
    { errors: [{ field: 'max_results' }] },
  );
});

t.test('malformed inputs of every task give a specific error, never a fault', async (t) => {
  const h = await harness(t);
  const junk: unknown[] = [
    { brief: 5 },
    { filters: 'x' },
    { media_buy_id: 7 },
    { creatives: 'x' },
    { packages: {} },
    { request_type: 'triple' },
    { signal_agent_segment_id: ['x'] },
    { notification_configs: [{ url: 'https://x.example' }] },
    { accounts: [{}] },
    { task_id: '' },
    { limit: -1 },
    { format_types: ['hologram'] },
  ];
  for (const agent of ['sales', 'creative', 'signals'] as const) {
    for (const def of h.core.registry.list(agent)) {
      for (const params of junk) {
        const r = await h.call(agent, def.name, params, buyer(h, agent));
        if (r instanceof TaskError) {
          t.ok(
            r.status >= 400 && r.status < 500,
            `${agent}/${def.name} ${JSON.stringify(params)} -> ${r.code}`,
          );
        } else {
          t.ok(
            ['completed', 'submitted', 'working'].includes(r.status),
            `${agent}/${def.name} accepted ${JSON.stringify(params)}`,
          );
        }
      }
    }
  }
});

t.test('the published error envelope: issues, recovery, context, brand names', async (t) => {
  t.equal(
    fieldOfPointer('/packages/0/targeting/geo_countries/2'),
    'packages[0].targeting.geo_countries[2]',
  );
  t.equal(fieldOfPointer('/a~1b/c~0d'), 'a/b.c~d');
  t.equal(fieldOfPointer(''), '');
  t.equal(pointerOf(['packages', 0, 'a/b~']), '/packages/0/a~1b~0');

  const issues = [
    { pointer: '/packages/0/budget', message: 'must be > 0', keyword: 'exclusiveMinimum' },
    { pointer: '/end_time', message: 'must be a date-time', keyword: 'format' },
  ];
  const v = validationError(issues);
  t.equal(v.code, 'VALIDATION_ERROR');
  t.equal(v.status, 400);
  t.equal(v.field, 'packages[0].budget', 'field is the first issue, JSONPath-lite');
  t.match(v.message, /packages\[0\]\.budget: must be > 0; end_time: must be a date-time/);
  const ctx = { correlation_id: 'c-1', nested: { a: [1, 2] } };
  const { status, body } = errorResponse(v, { brand: 'adcp', context: ctx });
  t.equal(status, 400);
  t.same(body, {
    status: 'failed',
    errors: [
      {
        code: 'VALIDATION_ERROR',
        message: v.message,
        recovery: 'correctable',
        field: 'packages[0].budget',
        issues,
      },
    ],
    adcp_error: (body.errors as unknown[])[0],
    context: ctx,
  });
  t.equal(body.context, ctx, 'context echoed as given');
  t.notOk('svc_error' in body);
  t.equal(validationError([]).message, 'invalid parameters');
  t.equal(validationError([], 'whole body').message, 'whole body');

  t.same(plainErrorBody('svc', 'NOT_FOUND', 'no route'), {
    status: 'failed',
    errors: [{ code: 'NOT_FOUND', message: 'no route', recovery: 'correctable' }],
    svc_error: { code: 'NOT_FOUND', message: 'no route', recovery: 'correctable' },
  });
  t.equal(
    (plainErrorBody('svc', 'INTERNAL_ERROR', 'x').svc_error as { recovery: string }).recovery,
    'transient',
  );
  t.equal(contextOf({ context: [1] }), undefined, 'a non-object context is not echoed');
  t.equal(contextOf(null), undefined);
  t.throws(() => new TaskErrors([]), RangeError);
});

t.test('version pins: VERSION_UNSUPPORTED for another major, context echoed', async (t) => {
  const h = await harness(t);
  const context = { correlation_id: 'v-99' };
  const e = await h.err('sales', 'list_authorized_properties', { svc_major_version: 99, context });
  t.equal(e.code, 'VERSION_UNSUPPORTED');
  t.equal(e.status, 400);
  t.equal(e.field, 'svc_major_version');
  t.same(e.details, { supported_versions: ['3.0', '3.1', '3.2'], supported_majors: [3] });
  const wire = errorResponse(e, { brand: 'svc', context }).body;
  t.match(wire, {
    status: 'failed',
    errors: [
      { code: 'VERSION_UNSUPPORTED', details: { supported_versions: ['3.0', '3.1', '3.2'] } },
    ],
    svc_error: { code: 'VERSION_UNSUPPORTED' },
    context,
  });
  t.equal(
    (await h.err('sales', 'list_authorized_properties', { svc_version: '4.0' })).code,
    'VERSION_UNSUPPORTED',
  );
  for (const [params, field] of [
    [{ svc_major_version: '3' }, 'svc_major_version'],
    [{ svc_major_version: 0 }, 'svc_major_version'],
    [{ svc_major_version: 3.5 }, 'svc_major_version'],
    [{ svc_version: 'three' }, 'svc_version'],
    [{ svc_version: 3.1 }, 'svc_version'],
  ] as const) {
    const bad = await h.err('sales', 'list_authorized_properties', params);
    t.equal(bad.code, 'VALIDATION_ERROR', JSON.stringify(params));
    t.equal(bad.field, field, JSON.stringify(params));
  }
  // Supported pins are served (and do not reach the task's own schema).
  const ok = await h.call('sales', 'list_authorized_properties', {
    svc_major_version: 3,
    svc_version: '3.1',
  });
  t.notOk(ok instanceof TaskError, 'major 3 pin accepted');
  const beta = await h.call('sales', 'list_authorized_properties', { svc_version: '3.2-beta.5' });
  t.notOk(beta instanceof TaskError, 'a 3.x pre-release pin accepted');
  // The adcp brand's names are not ours under svc: they reach the task as unknown members.
  const other = await h.call('sales', 'list_authorized_properties', { adcp_major_version: 99 });
  t.ok(!(other instanceof TaskError) || String(other.code) !== 'VERSION_UNSUPPORTED');
});
