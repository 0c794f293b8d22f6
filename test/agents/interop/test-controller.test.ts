/**
 * comply_test_controller: off by default; on, it answers sandbox principals only, never
 * changes a production principal's account or creative, seeds creative formats per test
 * session, and refuses malformed requests with the published controller errors.
 */
import t from 'tap';
import { brandProfile } from '../../../shared/brand.js';
import { buyer, harness as coreHarness, pendingBuyId } from '../support/core.js';

const adcp = brandProfile('adcp');
const harness = (
  t: Parameters<typeof coreHarness>[0],
  settings: { testController?: boolean } = {},
) => coreHarness(t, { profile: adcp, settings });

const sandbox = { brand: { domain: 'acme.example' }, operator: 'acme.example', sandbox: true };

t.test('off by default: no tool, no capability', async (t) => {
  const h = await harness(t);
  t.equal(
    (await h.err('sales', 'comply_test_controller', { scenario: 'list_scenarios' }, buyer(h))).code,
    'UNSUPPORTED_FEATURE',
  );
  const caps = await h.ok('sales', 'get_adcp_capabilities', {});
  t.notOk('compliance_testing' in caps);
});

t.test('sandbox principals only; production data never changes', async (t) => {
  const h = await harness(t, { testController: true });
  const caps = await h.ok('sales', 'get_adcp_capabilities', {});
  t.same(
    caps.compliance_testing,
    {
      scenarios: [
        'force_account_status',
        'force_creative_status',
        'force_media_buy_status',
        'simulate_budget_spend',
        'simulate_delivery',
      ],
    },
    'seeding scenarios and response-arm directives are not declared',
  );
  t.match(caps.account, { sandbox: true });
  const creativeCaps = await h.ok('creative', 'get_adcp_capabilities', {});
  t.notOk('compliance_testing' in creativeCaps, 'seeding only: discovered with list_scenarios');
  t.same(
    await h.ok(
      'creative',
      'comply_test_controller',
      { scenario: 'list_scenarios', account: sandbox },
      buyer(h, 'creative'),
    ),
    {
      status: 'completed',
      success: true,
      scenarios: ['seed_creative', 'seed_creative_format', 'seed_product', 'seed_pricing_option'],
    },
  );
  t.match(
    await h.ok(
      'signals',
      'comply_test_controller',
      { scenario: 'list_scenarios' },
      buyer(h, 'signals'),
    ),
    {
      success: true,
      scenarios: [
        'force_get_signals_arm',
        'force_task_completion',
        'seed_product',
        'seed_pricing_option',
      ],
    },
    'the signal agent: its async discovery arm and completion (get_signals_async.yaml)',
  );

  // A production principal with an account and a creative of its own.
  await h.pool.query(
    `INSERT INTO ${h.schema}.accounts (agent, account_id, principal_id, name) VALUES ('sales', 'prod-acct', 'prod-buyer', 'Prod')`,
  );
  await h.pool.query(
    `INSERT INTO ${h.schema}.creatives (principal_id, creative_id, name, format_id, format_type, assets, status)
     VALUES ('prod-buyer', 'prod-creative', 'Prod', '{}', 'display', '{}', 'active')`,
  );
  const prodToken = await h.core.issueToken('sales', 'prod-buyer', { media_buys: ['write'] });
  const prod = { authorization: `Bearer ${prodToken}` };
  const forbidden = await h.ok(
    'sales',
    'comply_test_controller',
    {
      scenario: 'force_account_status',
      account: sandbox,
      params: { account_id: 'prod-acct', status: 'suspended' },
    },
    prod,
  );
  t.match(forbidden, { success: false, error: 'FORBIDDEN' }, 'a production principal is refused');
  t.match(
    await h.ok(
      'sales',
      'comply_test_controller',
      { scenario: 'list_scenarios', account: sandbox },
      prod,
    ),
    { success: false, error: 'FORBIDDEN' },
  );
  // The sandbox demo buyer cannot reach them either.
  const notMine = await h.ok(
    'sales',
    'comply_test_controller',
    {
      scenario: 'force_account_status',
      account: sandbox,
      params: { account_id: 'prod-acct', status: 'closed' },
    },
    buyer(h),
  );
  t.match(notMine, { success: false, error: 'NOT_FOUND', current_state: null });
  t.match(
    await h.ok(
      'sales',
      'comply_test_controller',
      {
        scenario: 'force_creative_status',
        account: sandbox,
        params: { creative_id: 'prod-creative', status: 'rejected' },
      },
      buyer(h),
    ),
    { success: false, error: 'NOT_FOUND' },
  );
  const { rows } = await h.pool.query<{ a: string; c: string }>(
    `SELECT (SELECT status FROM ${h.schema}.accounts WHERE account_id = 'prod-acct') AS a,
            (SELECT status FROM ${h.schema}.creatives WHERE creative_id = 'prod-creative') AS c`,
  );
  t.same(rows[0], { a: 'active', c: 'active' }, 'production account and creative unchanged');

  // The sandbox buyer's own account and creative.
  await h.pool.query(
    `INSERT INTO ${h.schema}.accounts (agent, account_id, principal_id, name) VALUES ('sales', 'test-acct', 'demo-buyer', 'Test')`,
  );
  await h.pool.query(
    `INSERT INTO ${h.schema}.creatives (principal_id, creative_id, name, format_id, format_type, assets, status)
     VALUES ('demo-buyer', 'test-creative', 'Test', '{}', 'display', '{}', 'processing')`,
  );
  const force = (params: Record<string, unknown>, scenario = 'force_account_status') =>
    h.ok('sales', 'comply_test_controller', { scenario, account: sandbox, params }, buyer(h));
  t.match(await force({ account_id: 'test-acct', status: 'suspended' }), {
    success: true,
    previous_state: 'active',
    current_state: 'suspended',
  });
  t.match(await force({ account_id: 'test-acct', status: 'closed' }), { current_state: 'closed' });
  t.match(await force({ account_id: 'test-acct', status: 'active' }), {
    success: false,
    error: 'INVALID_TRANSITION',
    current_state: 'closed',
  });
  t.match(
    await force({ creative_id: 'test-creative', status: 'approved' }, 'force_creative_status'),
    {
      success: true,
      previous_state: 'processing',
      current_state: 'approved',
    },
  );
  const { rows: cr } = await h.pool.query<{ status: string }>(
    `SELECT status FROM ${h.schema}.creatives WHERE creative_id = 'test-creative'`,
  );
  t.equal(cr[0]!.status, 'active', 'stored as the internal status of approved');
  t.match(
    await force({ creative_id: 'test-creative', status: 'processing' }, 'force_creative_status'),
    {
      success: false,
      error: 'INVALID_TRANSITION',
      current_state: 'approved',
    },
  );

  // seed_creative: a library creative of the sandbox buyer's, in the published status.
  t.match(
    await force(
      {
        creative_id: 'seeded-1',
        fixture: { status: 'approved', format_id: { id: 'display_300x250' } },
      },
      'seed_creative',
    ),
    { success: true },
  );
  const { rows: seededRows } = await h.pool.query<{ principal_id: string; status: string }>(
    `SELECT principal_id, status FROM ${h.schema}.creatives WHERE creative_id = 'seeded-1'`,
  );
  t.same(seededRows, [{ principal_id: 'demo-buyer', status: 'active' }]);
  for (const [name, params] of [
    ['no creative id', {}],
    ['bad status', { creative_id: 'seeded-2', fixture: { status: 'live' } }],
    ['fixture not an object', { creative_id: 'seeded-3', fixture: 'x' }],
  ] as Array<[string, Record<string, unknown>]>) {
    t.match(
      await force(params, 'seed_creative'),
      { success: false, error: 'INVALID_PARAMS' },
      name,
    );
  }

  // seed_product / seed_pricing_option: a product only the sandbox buyer sees.
  t.match(
    await force(
      {
        product_id: 'sb_sports_q2',
        fixture: {
          delivery_type: 'guaranteed',
          channels: ['video'],
          format_ids: [{ id: 'video_30s' }],
        },
      },
      'seed_product',
    ),
    { success: true },
  );
  t.match(
    await force(
      {
        product_id: 'sb_sports_q2',
        pricing_option_id: 'cpm_g',
        fixture: { pricing_model: 'cpm', currency: 'USD', fixed_price: 22 },
      },
      'seed_pricing_option',
    ),
    { success: true },
  );
  const { rows: seededProduct } = await h.pool.query<{
    custom_principal: string;
    pricing_options: unknown[];
  }>(
    `SELECT custom_principal, pricing_options FROM ${h.schema}.products WHERE product_id = 'sb_sports_q2'`,
  );
  t.same(seededProduct, [
    {
      custom_principal: 'demo-buyer',
      pricing_options: [
        { pricing_option_id: 'cpm_g', pricing_model: 'cpm', currency: 'USD', fixed_price: 22 },
      ],
    },
  ]);
  const { rows: before } = await h.pool.query(
    `SELECT * FROM ${h.schema}.products WHERE product_id = 'ctv_premium_sports'`,
  );
  t.match(
    await force({ product_id: 'ctv_premium_sports', fixture: { name: 'hijack' } }, 'seed_product'),
    { success: false, error: 'FORBIDDEN' },
  );
  t.match(
    await force(
      { product_id: 'ctv_premium_sports', pricing_option_id: 'free', fixture: { fixed_price: 0 } },
      'seed_pricing_option',
    ),
    { success: false, error: 'FORBIDDEN' },
  );
  const { rows: after } = await h.pool.query(
    `SELECT * FROM ${h.schema}.products WHERE product_id = 'ctv_premium_sports'`,
  );
  t.same(after, before, 'a catalog product is never changed by a seed');
  for (const [name, params, scenario, code] of [
    ['product id with spaces', { product_id: 'a b' }, 'seed_product', 'INVALID_PARAMS'],
    [
      'option before product',
      { product_id: 'sb_none', pricing_option_id: 'x', fixture: { fixed_price: 1 } },
      'seed_pricing_option',
      'NOT_FOUND',
    ],
    [
      'no price',
      { product_id: 'sb_sports_q2', pricing_option_id: 'x', fixture: {} },
      'seed_pricing_option',
      'INVALID_PARAMS',
    ],
  ] as Array<[string, Record<string, unknown>, string, string]>) {
    t.match(await force(params, scenario), { success: false, error: code }, name);
  }

  // Malformed requests: the published controller errors.
  const bad: Array<[string, Record<string, unknown>, string]> = [
    [
      'unknown scenario',
      { scenario: 'nonexistent_scenario', account: sandbox },
      'UNKNOWN_SCENARIO',
    ],
    [
      'missing params',
      { scenario: 'force_creative_status', account: sandbox, params: {} },
      'INVALID_PARAMS',
    ],
    [
      'bad status',
      {
        scenario: 'force_account_status',
        account: sandbox,
        params: { account_id: 'test-acct', status: 'gone' },
      },
      'INVALID_PARAMS',
    ],
    [
      'no sandbox assertion',
      {
        scenario: 'force_account_status',
        account: { account_id: 'test-acct' },
        params: { account_id: 'test-acct', status: 'active' },
      },
      'INVALID_PARAMS',
    ],
  ];
  for (const [name, params, code] of bad) {
    t.match(
      await h.ok('sales', 'comply_test_controller', params, buyer(h)),
      { success: false, error: code },
      name,
    );
  }
  // No account at all (protocol 3.0.6 runners): the principal's own record decides.
  t.match(
    await h.ok(
      'sales',
      'comply_test_controller',
      { scenario: 'force_creative_status', params: { creative_id: 'nope', status: 'approved' } },
      buyer(h),
    ),
    { success: false, error: 'NOT_FOUND' },
  );
  t.equal(
    (await h.err('sales', 'comply_test_controller', { account: sandbox }, buyer(h))).code,
    'VALIDATION_ERROR',
    'no scenario',
  );
  t.match(
    await h.ok(
      'creative',
      'comply_test_controller',
      {
        scenario: 'force_creative_status',
        account: sandbox,
        params: { creative_id: 'x', status: 'approved' },
      },
      buyer(h, 'creative'),
    ),
    { success: false, error: 'NOT_FOUND' },
    'the creative agent holds no creatives',
  );
});

t.test('seeded creative formats: per test session, listed under an account', async (t) => {
  const h = await harness(t, { testController: true });
  const c = buyer(h, 'creative');
  for (const id of ['pi_format_1', 'pi_format_2']) {
    t.match(
      await h.ok(
        'creative',
        'comply_test_controller',
        {
          scenario: 'seed_creative_format',
          account: sandbox,
          params: { format_id: id, fixture: { name: `Format ${id}`, type: 'display' } },
        },
        c,
      ),
      { success: true },
    );
  }
  const account = { account_id: 'acct_pagination' };
  const first = await h.ok(
    'creative',
    'list_creative_formats',
    { account, pagination: { max_results: 1 } },
    c,
  );
  t.match(first.pagination, { has_more: true, total_count: 2 });
  const second = await h.ok(
    'creative',
    'list_creative_formats',
    {
      account,
      pagination: { max_results: 1, cursor: (first.pagination as { cursor: string }).cursor },
    },
    c,
  );
  t.same(second.pagination, { has_more: false, total_count: 2 });
  t.same(
    [
      ...(first.formats as Array<{ format_id: { id: string } }>),
      ...(second.formats as Array<{ format_id: { id: string } }>),
    ].map((f) => f.format_id.id),
    ['pi_format_1', 'pi_format_2'],
  );
  const catalog = await h.ok('creative', 'list_creative_formats', {}, c);
  t.ok((catalog.formats as unknown[]).length > 2, 'without an account: the real catalog');
  const stranger = await h.core.issueToken('creative', 'prod-buyer', { creatives: ['read'] });
  const theirs = await h.ok(
    'creative',
    'list_creative_formats',
    { account },
    { authorization: `Bearer ${stranger}` },
  );
  t.ok((theirs.formats as unknown[]).length > 2, 'another principal never sees the fixtures');
  const badSeeds: Array<[string, Record<string, unknown>]> = [
    ['no format id', {}],
    ['bad format id', { format_id: 'has space' }],
    ['bad type', { format_id: 'x1', fixture: { type: 'hologram' } }],
    ['fixture not an object', { format_id: 'x2', fixture: [] }],
  ];
  for (const [name, params] of badSeeds) {
    t.match(
      await h.ok(
        'creative',
        'comply_test_controller',
        { scenario: 'seed_creative_format', account: sandbox, params },
        c,
      ),
      { success: false, error: 'INVALID_PARAMS' },
      name,
    );
  }
  t.equal(
    (await h.err('creative', 'list_creative_formats', { pagination: { cursor: 'zz' } }, c)).field,
    'pagination.cursor',
  );
});

t.test('seed_media_buy: a buy of the sandbox buyer get_media_buys finds', async (t) => {
  const h = await harness(t, { testController: true });
  const c = buyer(h);
  const seed = (params: Record<string, unknown>) =>
    h.ok(
      'sales',
      'comply_test_controller',
      { scenario: 'seed_media_buy', account: sandbox, params },
      c,
    );
  const listed = await h.ok(
    'sales',
    'comply_test_controller',
    { scenario: 'list_scenarios', account: sandbox },
    c,
  );
  t.ok((listed.scenarios as string[]).includes('seed_media_buy'), 'listed');
  for (const id of ['sb_mb_1', 'sb_mb_2']) {
    t.match(await seed({ media_buy_id: id, fixture: { status: 'active', currency: 'USD' } }), {
      success: true,
    });
  }
  t.match(await seed({ media_buy_id: 'sb_mb_2', fixture: { status: 'paused', currency: 'EUR' } }), {
    success: true,
  });
  const got = await h.ok('sales', 'get_media_buys', { media_buy_ids: ['sb_mb_1', 'sb_mb_2'] }, c);
  t.same(
    (got.media_buys as Array<{ media_buy_id: string; status: string; currency: string }>)
      .map((b) => [b.media_buy_id, b.status, b.currency])
      .sort(),
    [
      ['sb_mb_1', 'active', 'USD'],
      ['sb_mb_2', 'paused', 'EUR'],
    ],
    'seeded buys listed; a re-seed updates status and currency',
  );
  t.match(got.pagination, { has_more: false });

  // Another principal's buy is never changed.
  await h.pool.query(
    `INSERT INTO ${h.schema}.media_buys (media_buy_id, principal_id, status, brand_manifest, start_time, start_at, end_at)
     VALUES ('prod_mb', 'prod-buyer', 'active', '{}', '"asap"', now(), now() + interval '1 day')`,
  );
  t.match(await seed({ media_buy_id: 'prod_mb', fixture: { status: 'canceled' } }), {
    success: false,
    error: 'FORBIDDEN',
  });
  const { rows } = await h.pool.query<{ status: string }>(
    `SELECT status FROM ${h.schema}.media_buys WHERE media_buy_id = 'prod_mb'`,
  );
  t.equal(rows[0]!.status, 'active', 'the production buy is unchanged');

  for (const [name, params] of [
    ['no id', { fixture: {} }],
    ['id with a space', { media_buy_id: 'a b' }],
    ['id not a string', { media_buy_id: 7 }],
    ['fixture an array', { media_buy_id: 'x', fixture: [] }],
    ['unknown status', { media_buy_id: 'x', fixture: { status: 'live' } }],
    ['status not a string', { media_buy_id: 'x', fixture: { status: 1 } }],
    ['lower-case currency', { media_buy_id: 'x', fixture: { currency: 'usd' } }],
    ['bad start_time', { media_buy_id: 'x', fixture: { start_time: 'soon' } }],
    [
      'end before start',
      {
        media_buy_id: 'x',
        fixture: { start_time: '2030-02-01T00:00:00Z', end_time: '2030-01-01T00:00:00Z' },
      },
    ],
  ] as const) {
    t.match(await seed(params), { success: false, error: 'INVALID_PARAMS' }, name);
  }
  t.equal(
    (await h.pool.query(`SELECT 1 FROM ${h.schema}.media_buys WHERE media_buy_id = 'x'`)).rowCount,
    0,
    'nothing stored by a refused seed',
  );
});

/** The sales agent's controller as the sandbox buyer `c`: one scenario, its params. */
function salesControl(h: Awaited<ReturnType<typeof harness>>, c: ReturnType<typeof buyer>) {
  return (scenario: string, params: Record<string, unknown>) =>
    h.ok('sales', 'comply_test_controller', { scenario, account: sandbox, params }, c);
}

/** A CPM package on a seeded buy (seed_media_buy makes none): what delivery is booked to. */
async function addPackage(h: Awaited<ReturnType<typeof harness>>, buy: string, pkg: string) {
  await h.pool.query(
    `INSERT INTO ${h.schema}.packages (package_id, media_buy_id, product_id, pricing_option_id, pricing_model, rate, budget, position)
     VALUES ($1, $2, 'p', 'po', 'cpm', 10, 1000, 0)`,
    [pkg, buy],
  );
}

t.test('simulate_delivery: adds to what get_media_buy_delivery reports', async (t) => {
  const h = await harness(t, { testController: true });
  const c = buyer(h);
  const control = salesControl(h, c);
  t.match(await control('seed_media_buy', { media_buy_id: 'sim_mb' }), { success: true });
  t.match(
    await control('simulate_delivery', { media_buy_id: 'sim_mb', impressions: 10 }),
    { success: false, error: 'INVALID_PARAMS' },
    'a buy without packages has nothing to deliver',
  );
  await addPackage(h, 'sim_mb', 'sim_pkg');
  const first = await control('simulate_delivery', {
    media_buy_id: 'sim_mb',
    impressions: 5000,
    clicks: 150,
    reported_spend: { amount: 50, currency: 'USD' },
  });
  t.match(first, {
    success: true,
    simulated: { impressions: 5000, clicks: 150, reported_spend: { amount: 50, currency: 'USD' } },
  });
  const second = await control('simulate_delivery', { media_buy_id: 'sim_mb', impressions: 1000 });
  t.match(second.cumulative, { impressions: 6000, clicks: 150, reported_spend: { amount: 50 } });
  const report = await h.ok('sales', 'get_media_buy_delivery', { media_buy_ids: ['sim_mb'] }, c);
  const totals = (report.media_buy_deliveries as Array<{ totals: Record<string, number> }>)[0]!
    .totals;
  t.ok(totals.impressions! >= 6000, `reported impressions ${totals.impressions}`);

  const before = (await control('simulate_delivery', { media_buy_id: 'sim_mb' })).cumulative;
  for (const [name, params, error] of [
    ['unknown buy', { media_buy_id: 'nope', impressions: 1 }, 'NOT_FOUND'],
    ['no buy id', { impressions: 1 }, 'INVALID_PARAMS'],
    ['negative impressions', { media_buy_id: 'sim_mb', impressions: -1 }, 'INVALID_PARAMS'],
    ['fractional clicks', { media_buy_id: 'sim_mb', clicks: 1.5 }, 'INVALID_PARAMS'],
    ['spend not an object', { media_buy_id: 'sim_mb', reported_spend: 5 }, 'INVALID_PARAMS'],
    [
      'negative spend',
      { media_buy_id: 'sim_mb', reported_spend: { amount: -1, currency: 'USD' } },
      'INVALID_PARAMS',
    ],
    [
      'currency of another buy',
      { media_buy_id: 'sim_mb', reported_spend: { amount: 1, currency: 'EUR' } },
      'INVALID_PARAMS',
    ],
    [
      'currency not a string',
      { media_buy_id: 'sim_mb', reported_spend: { amount: 1, currency: 1 } },
      'INVALID_PARAMS',
    ],
  ] as const) {
    t.match(await control('simulate_delivery', params), { success: false, error }, name);
  }
  t.same(
    (await control('simulate_delivery', { media_buy_id: 'sim_mb' })).cumulative,
    before,
    'refused calls added nothing',
  );
});

t.test('simulate_delivery: provisional, then final delivery (3.1 billing finality)', async (t) => {
  const h = await harness(t, { testController: true });
  const c = buyer(h);
  const control = salesControl(h, c);
  t.match(await control('seed_media_buy', { media_buy_id: 'fin_mb' }), { success: true });
  await addPackage(h, 'fin_mb', 'fin_pkg');
  const row = async () => {
    const r = await h.ok('sales', 'get_media_buy_delivery', { media_buy_ids: ['fin_mb'] }, c);
    return (r.media_buy_deliveries as Array<Record<string, unknown>>)[0]!;
  };
  const silent = await row();
  t.notOk('is_final' in silent, 'nothing said yet: no finality members');

  for (const [name, params] of [
    ['is_final not a boolean', { is_final: 'no' }],
    [
      'finalized_at on provisional delivery',
      { is_final: false, finalized_at: '2099-01-01T00:00:00Z' },
    ],
    ['final without finalized_at', { is_final: true }],
    ['finalized_at not a time', { is_final: true, finalized_at: 'tomorrow' }],
    ['measurement window not an id', { is_final: false, measurement_window: 'post ivt; drop' }],
    ['measurement window not a string', { is_final: false, measurement_window: 7 }],
    ['window without is_final', { measurement_window: 'post_sivt' }],
  ] as const) {
    t.match(
      await control('simulate_delivery', { media_buy_id: 'fin_mb', impressions: 1, ...params }),
      { success: false, error: 'INVALID_PARAMS' },
      name,
    );
  }
  t.notOk('is_final' in (await row()), 'refused calls stored no finality');

  t.match(
    await control('simulate_delivery', {
      media_buy_id: 'fin_mb',
      impressions: 90000,
      is_final: false,
      measurement_window: 'post_givt',
    }),
    { success: true },
  );
  const provisional = await row();
  t.equal(provisional.is_final, false, 'the row is provisional');
  t.notOk('finalized_at' in provisional, 'with no finalized_at');
  const pkg = (provisional.by_package as Array<Record<string, unknown>>)[0]!;
  t.match(pkg, { is_final: false, measurement_window: 'post_givt' }, 'and so is its package');

  t.match(
    await control('simulate_delivery', {
      media_buy_id: 'fin_mb',
      impressions: 10000,
      is_final: true,
      finalized_at: '2099-08-03T12:00:00Z',
      measurement_window: 'post_sivt',
    }),
    { success: true },
  );
  const final = await row();
  t.match(
    final,
    { is_final: true, finalized_at: '2099-08-03T12:00:00.000Z' },
    'final, with its time',
  );
  t.match((final.by_package as Array<Record<string, unknown>>)[0], {
    is_final: true,
    finalized_at: '2099-08-03T12:00:00.000Z',
    measurement_window: 'post_sivt',
  });
});

/** A buy of the sandbox buyer, confirmed at once (a named account of a sandbox principal). */
async function sandboxBuy(
  h: Awaited<ReturnType<typeof harness>>,
  extra: Record<string, unknown> = {},
) {
  return h.ok(
    'sales',
    'create_media_buy',
    {
      idempotency_key: `ctl-${Math.random().toString(36).slice(2, 14)}`,
      brand: { domain: 'acme.example' },
      account: sandbox,
      packages: [{ product_id: 'video_olv_news', pricing_option_id: 'olv_news_cpm', budget: 4000 }],
      start_time: 'asap',
      end_time: new Date(h.clock.nowMs() + 10 * 86_400_000).toISOString(),
      ...extra,
    },
    buyer(h),
  );
}

t.test('force_media_buy_status: along the published lifecycle graph only', async (t) => {
  const h = await harness(t, { testController: true });
  const { markDemoPrincipalsSandbox } = await import('../../../agents/sandbox/fixtures.js');
  await markDemoPrincipalsSandbox(h.pool, h.schema);
  const c = buyer(h);
  const force = (params: Record<string, unknown>) =>
    h.ok(
      'sales',
      'comply_test_controller',
      { scenario: 'force_media_buy_status', account: sandbox, params },
      c,
    );
  const buy = await sandboxBuy(h);
  t.equal(buy.media_buy_status, 'pending_creatives');
  const id = buy.media_buy_id as string;
  t.match(
    await force({ media_buy_id: id, status: 'pending_start' }),
    {
      success: false,
      error: 'INVALID_TRANSITION',
      current_state: 'pending_creatives',
    },
    'pending_start follows from creatives, it is not forced',
  );
  t.match(await force({ media_buy_id: id, status: 'active' }), {
    success: true,
    previous_state: 'pending_creatives',
    current_state: 'active',
  });
  const got = await h.ok('sales', 'get_media_buys', { media_buy_ids: [id] }, c);
  t.equal((got.media_buys as Array<{ status: string }>)[0]!.status, 'active', 'reflected');
  t.match(
    await force({ media_buy_id: id, status: 'active' }),
    {
      success: true,
      previous_state: 'active',
      current_state: 'active',
    },
    'the same status again is a no-op',
  );
  t.match(await force({ media_buy_id: id, status: 'completed' }), { success: true });
  t.same(
    h.notifications.of('mediaBuyTerminal').map((x) => x.status),
    ['completed'],
  );
  t.match(
    await force({ media_buy_id: id, status: 'active' }),
    {
      success: false,
      error: 'INVALID_TRANSITION',
      current_state: 'completed',
    },
    'terminal',
  );

  for (const [name, params] of [
    ['no id', { status: 'active' }],
    ['no status', { media_buy_id: id }],
    ['unknown status', { media_buy_id: id, status: 'live' }],
    ['status not a string', { media_buy_id: id, status: 3 }],
  ] as const) {
    t.match(await force(params), { success: false, error: 'INVALID_PARAMS' }, name);
  }
  t.match(await force({ media_buy_id: 'mb_nope', status: 'active' }), {
    success: false,
    error: 'NOT_FOUND',
  });

  // A buy awaiting approval (no account named: not a sandbox account) ends its create task.
  const pending = await h.ok(
    'sales',
    'create_media_buy',
    {
      idempotency_key: 'ctl-pending-000001',
      brand: { domain: 'acme.example' },
      packages: [{ product_id: 'video_olv_news', pricing_option_id: 'olv_news_cpm', budget: 4000 }],
      start_time: 'asap',
      end_time: new Date(h.clock.nowMs() + 86_400_000).toISOString(),
    },
    c,
  );
  t.equal(pending.status, 'submitted');
  const pendingId = await pendingBuyId(h, pending.task_id);
  t.match(await force({ media_buy_id: pendingId, status: 'rejected' }), {
    success: true,
    previous_state: 'pending_creatives',
    current_state: 'rejected',
  });
  const task = await h.core.dispatcher.getTask(
    pending.task_id!,
    await h.core.dispatcher.authenticate('sales', c),
  );
  t.equal(task.status, 'rejected', 'the create task ends with the buy');

  // Another principal's buy does not exist for the controller.
  await h.pool.query(
    `INSERT INTO ${h.schema}.media_buys (media_buy_id, principal_id, status, brand_manifest, start_time, start_at, end_at)
     VALUES ('prod_mb2', 'prod-buyer', 'active', '{}', '"asap"', now(), now() + interval '1 day')`,
  );
  t.match(await force({ media_buy_id: 'prod_mb2', status: 'paused' }), {
    success: false,
    error: 'NOT_FOUND',
  });
});

t.test('force_create_media_buy_arm: the next create answers submitted, once', async (t) => {
  const h = await harness(t, { testController: true });
  const { markDemoPrincipalsSandbox } = await import('../../../agents/sandbox/fixtures.js');
  await markDemoPrincipalsSandbox(h.pool, h.schema);
  const c = buyer(h);
  const arm = (params: Record<string, unknown>) =>
    h.ok(
      'sales',
      'comply_test_controller',
      { scenario: 'force_create_media_buy_arm', account: sandbox, params },
      c,
    );
  const listed = await h.ok(
    'sales',
    'comply_test_controller',
    { scenario: 'list_scenarios', account: sandbox },
    c,
  );
  t.ok((listed.scenarios as string[]).includes('force_create_media_buy_arm'), 'listed');
  t.same(
    await arm({ arm: 'submitted', task_id: 'task_forced_io_1', message: 'Awaiting IO signature' }),
    {
      status: 'completed',
      success: true,
      forced: { arm: 'submitted', task_id: 'task_forced_io_1' },
      message:
        'the next create_media_buy of this sandbox account answers submitted as task_forced_io_1',
    },
  );
  const submitted = await sandboxBuy(h);
  t.match(submitted, {
    status: 'submitted',
    task_id: 'task_forced_io_1',
    message: 'Awaiting IO signature',
  });
  t.notOk('media_buy_id' in submitted, 'no media_buy_id on the submitted arm');
  t.equal(
    (await pendingBuyId(h, 'task_forced_io_1')).startsWith('mb_'),
    true,
    "the task is the buy's create task",
  );
  const next = await sandboxBuy(h);
  t.equal(next.status, 'completed', 'the directive applied once');

  for (const [name, params] of [
    ['no arm', {}],
    ['unknown arm', { arm: 'completed', task_id: 'x' }],
    ['input-required with a task_id', { arm: 'input-required', task_id: 'task_ir_1' }],
    ['input-required, message not a string', { arm: 'input-required', message: 5 }],
    ['submitted without task_id', { arm: 'submitted' }],
    ['task_id with a space', { arm: 'submitted', task_id: 'a b' }],
    ['task_id too long', { arm: 'submitted', task_id: 'x'.repeat(129) }],
    ['message not a string', { arm: 'submitted', task_id: 'task_ok_2', message: 5 }],
    ['task id in use', { arm: 'submitted', task_id: 'task_forced_io_1' }],
  ] as const) {
    t.match(await arm(params), { success: false, error: 'INVALID_PARAMS' }, name);
  }
  t.equal((await sandboxBuy(h)).status, 'completed', 'a refused directive forces nothing');
});

t.test('force_create_media_buy_arm input-required: answer, tasks/get, webhook', async (t) => {
  const h = await harness(t, { testController: true });
  const { markDemoPrincipalsSandbox } = await import('../../../agents/sandbox/fixtures.js');
  await markDemoPrincipalsSandbox(h.pool, h.schema);
  const c = buyer(h);
  t.same(
    await h.ok(
      'sales',
      'comply_test_controller',
      {
        scenario: 'force_create_media_buy_arm',
        account: sandbox,
        params: { arm: 'input-required', message: 'Budget over the approval limit' },
        context: { step: 'force' },
      },
      c,
    ),
    {
      status: 'completed',
      success: true,
      forced: { arm: 'input-required' },
      message: 'the next create_media_buy of this sandbox account answers input-required',
      context: { step: 'force' },
    },
  );
  const push = { url: 'https://buyer.example/hooks/ir', operation_id: 'op-ir-1' };
  // The harness checks this answer against create-media-buy-async-response-input-required.
  const answer = await sandboxBuy(h, {
    push_notification_config: push,
    context: { step: 'create' },
  });
  t.match(answer, {
    status: 'input-required',
    task_id: /^task_/,
    reason: 'APPROVAL_REQUIRED',
    message: 'Budget over the approval limit',
    context: { step: 'create' },
  });
  t.notOk('media_buy_id' in answer, 'no buy on the input-required answer');
  const polled = await h.ok(
    'sales',
    'tasks/get',
    { task_id: answer.task_id, include_result: true },
    c,
  );
  t.match(polled, {
    status: 'input-required',
    task_type: 'create_media_buy',
    message: 'Budget over the approval limit',
    result: { reason: 'APPROVAL_REQUIRED' },
  });
  const buyId = await pendingBuyId(h, answer.task_id);
  t.equal(await h.core.executor.runDue(), 0, 'it waits for approval, nothing scheduled');
  await h.core.operator.approve(buyId);
  const hooks = h.notifications.of('taskStatusChanged');
  t.match(hooks.at(-1), { taskId: answer.task_id, status: 'completed' }, 'completion webhook');
  const done = await h.ok('sales', 'tasks/get', { task_id: answer.task_id }, c);
  t.match(done, { status: 'completed', result: { media_buy_id: buyId } });
  t.equal((await sandboxBuy(h)).status, 'completed', 'the directive applied once');
});

t.test('simulate_budget_spend: reported spend up to a share of the budget', async (t) => {
  const h = await harness(t, { testController: true });
  const { markDemoPrincipalsSandbox } = await import('../../../agents/sandbox/fixtures.js');
  await markDemoPrincipalsSandbox(h.pool, h.schema);
  const c = buyer(h);
  const spend = (params: Record<string, unknown>) =>
    h.ok(
      'sales',
      'comply_test_controller',
      { scenario: 'simulate_budget_spend', account: sandbox, params },
      c,
    );
  const buy = await sandboxBuy(h);
  const id = buy.media_buy_id as string;
  t.match(await spend({ media_buy_id: id, spend_percentage: 50 }), {
    success: true,
    simulated: { spend_percentage: 50, reported_spend: { amount: 2000, currency: 'USD' } },
    cumulative: { reported_spend: { amount: 2000 } },
  });
  t.match(
    await spend({ media_buy_id: id, spend_percentage: 40 }),
    {
      success: true,
      simulated: { reported_spend: { amount: 0 } },
    },
    'spend already past the share stays',
  );
  t.match(await spend({ media_buy_id: id, spend_percentage: 100 }), {
    simulated: { reported_spend: { amount: 2000 } },
    cumulative: { reported_spend: { amount: 4000 } },
  });
  const { rows } = await h.pool.query<{ s: number }>(
    `SELECT sum(spend)::float8 AS s FROM ${h.schema}.delivery WHERE media_buy_id = $1`,
    [id],
  );
  t.equal(rows[0]!.s, 4000, 'booked as delivery');
  for (const [name, params] of [
    ['no percentage', { media_buy_id: id }],
    ['percentage over 100', { media_buy_id: id, spend_percentage: 101 }],
    ['percentage negative', { media_buy_id: id, spend_percentage: -1 }],
    ['percentage not a number', { media_buy_id: id, spend_percentage: '50' }],
    ['account only', { account_id: 'acc', spend_percentage: 50 }],
  ] as const) {
    t.match(await spend(params), { success: false, error: 'INVALID_PARAMS' }, name);
  }
  t.match(await spend({ media_buy_id: 'mb_nope', spend_percentage: 5 }), {
    success: false,
    error: 'NOT_FOUND',
  });
});

t.test(
  'seed_product: the fixture prices, policy and vendor metrics; filters see them',
  async (t) => {
    const h = await harness(t, { testController: true });
    const c = buyer(h);
    const seed = (scenario: string, params: Record<string, unknown>) =>
      h.ok('sales', 'comply_test_controller', { scenario, account: sandbox, params }, c);
    t.match(
      await seed('seed_product', {
        product_id: 'sb_vendor_metrics',
        fixture: {
          name: 'Vendor metrics display',
          delivery_type: 'guaranteed',
          channels: ['display'],
          creative_policy: {
            co_branding: 'optional',
            landing_page: 'any',
            templates_available: false,
            provenance_required: true,
            accepted_verifiers: [{ agent_url: 'https://verifier.example', feature_id: 'f1' }],
          },
          reporting_capabilities: {
            vendor_metrics: [
              { vendor: { domain: 'attention.example' }, metric_id: 'attention_units' },
            ],
          },
          // The storyboards' older `rate` is the fixed price.
          pricing_options: [
            { pricing_option_id: 'cpm_rate', pricing_model: 'cpm', rate: 5, currency: 'USD' },
          ],
        },
      }),
      { success: true },
    );
    const wanted = (required: unknown) =>
      h.ok(
        'sales',
        'get_products',
        { buying_mode: 'wholesale', filters: { required_vendor_metrics: required } },
        c,
      );
    const found = await wanted([{ vendor: { domain: 'ATTENTION.example' } }]);
    const products = found.products as Array<Record<string, unknown>>;
    t.same(
      products.map((p) => p.product_id),
      ['sb_vendor_metrics'],
      'only the product reporting the vendor metric (catalog products report none)',
    );
    t.match(products[0], {
      pricing_options: [{ pricing_option_id: 'cpm_rate', fixed_price: 5, currency: 'USD' }],
      creative_policy: {
        provenance_required: true,
        accepted_verifiers: [{ agent_url: 'https://verifier.example' }],
      },
      // The fixture's members add to the published object's required ones.
      reporting_capabilities: {
        timezone: 'UTC',
        vendor_metrics: [{ metric_id: 'attention_units' }],
      },
    });
    t.same(
      ((await wanted([{ metric_id: 'attention_units' }])).products as unknown[]).length,
      1,
      'by metric id',
    );
    t.same(
      (await wanted([{ metric_id: 'viewability' }])).products,
      [],
      'unmet: excluded, no error',
    );
    t.equal(
      (
        await h.err(
          'sales',
          'get_products',
          { buying_mode: 'wholesale', filters: { required_vendor_metrics: [{}] } },
          c,
        )
      ).code,
      'VALIDATION_ERROR',
      'an entry naming neither vendor nor metric',
    );
    for (const [name, fixture] of [
      ['options not an array', { pricing_options: {} }],
      [
        'option without a price',
        { pricing_options: [{ pricing_option_id: 'x', pricing_model: 'cpm' }] },
      ],
      ['option without an id', { pricing_options: [{ fixed_price: 1 }] }],
      ['negative price', { pricing_options: [{ pricing_option_id: 'x', rate: -1 }] }],
    ] as const) {
      t.match(
        await seed('seed_product', { product_id: 'sb_bad', fixture }),
        { success: false, error: 'INVALID_PARAMS' },
        name,
      );
    }
    t.equal(
      (await h.pool.query(`SELECT 1 FROM ${h.schema}.products WHERE product_id = 'sb_bad'`))
        .rowCount,
      0,
      'nothing stored by a refused seed',
    );
  },
);

t.test(
  'force_upstream_unavailable: the next get_products is served from cache, once',
  async (t) => {
    const h = await harness(t, { testController: true });
    const c = buyer(h);
    const force = (params: Record<string, unknown>) =>
      h.ok(
        'sales',
        'comply_test_controller',
        { scenario: 'force_upstream_unavailable', account: sandbox, params },
        c,
      );
    t.match(await force({ tool: 'get_products', upstream_name: 'inventory-service' }), {
      success: true,
    });
    const brief = { buying_mode: 'brief', brief: 'display' };
    const stale = await h.ok('sales', 'get_products', brief, c);
    t.ok((stale.products as unknown[]).length > 0, 'a populated answer');
    t.match(stale.errors, [
      {
        code: 'STALE_RESPONSE',
        field: 'products',
        recovery: 'transient',
        details: { served_from_cache: true, upstream: { name: 'inventory-service' } },
      },
    ]);
    const details = (stale.errors as Array<{ details: Record<string, number> }>)[0]!.details;
    t.ok(details.cache_age_seconds! > details.freshness_target_seconds!, 'older than the target');
    const healthy = await h.ok('sales', 'get_products', brief, c);
    t.equal(healthy.errors, undefined, 'the directive applies once: no STALE_RESPONSE after');
    for (const [name, params] of [
      ['unknown tool', { tool: 'sync_creatives' }],
      ['tool not a string', { tool: 3 }],
      ['upstream name with a slash', { upstream_name: 'a/b' }],
    ] as const) {
      t.match(await force(params), { success: false, error: 'INVALID_PARAMS' }, name);
    }
  },
);

t.test('seed_account: accounts of the sandbox buyer list_accounts pages through', async (t) => {
  const h = await harness(t, { testController: true });
  const c = buyer(h);
  const seed = (params: Record<string, unknown>) =>
    h.ok(
      'sales',
      'comply_test_controller',
      { scenario: 'seed_account', account: sandbox, params },
      c,
    );
  for (const i of [1, 2, 3]) {
    t.match(
      await seed({
        account_id: `sb_acct_${i}`,
        fixture: {
          brand: { domain: `acme-${i}.example` },
          operator: 'op.example',
          status: 'active',
        },
      }),
      { success: true },
    );
  }
  t.match(await seed({ account_id: 'sb_acct_3', fixture: { status: 'suspended' } }), {
    success: true,
  });
  const first = await h.ok('sales', 'list_accounts', { pagination: { max_results: 2 } }, c);
  const page1 = first.accounts as Array<{ account_id: string }>;
  t.same(
    page1.map((a) => a.account_id),
    ['sb_acct_1', 'sb_acct_2'],
  );
  t.match(first.pagination, { has_more: true });
  const second = await h.ok(
    'sales',
    'list_accounts',
    { pagination: { max_results: 2, cursor: (first.pagination as { cursor: string }).cursor } },
    c,
  );
  t.match(second.accounts, [{ account_id: 'sb_acct_3', status: 'suspended', name: 'sb_acct_3' }]);
  // Another principal's account is never changed.
  await h.pool.query(
    `INSERT INTO ${h.schema}.accounts (agent, account_id, principal_id, name) VALUES ('sales', 'prod_acct', 'prod-buyer', 'Prod')`,
  );
  t.match(await seed({ account_id: 'prod_acct', fixture: { status: 'closed' } }), {
    success: false,
    error: 'FORBIDDEN',
  });
  for (const [name, params] of [
    ['no id', { fixture: {} }],
    ['id with a space', { account_id: 'a b' }],
    ['unknown status', { account_id: 'x', fixture: { status: 'gone' } }],
    ['brand without a domain', { account_id: 'x', fixture: { brand: {} } }],
    ['fixture an array', { account_id: 'x', fixture: [] }],
  ] as const) {
    t.match(await seed(params), { success: false, error: 'INVALID_PARAMS' }, name);
  }
  const { rows } = await h.pool.query<{ status: string }>(
    `SELECT status FROM ${h.schema}.accounts WHERE account_id IN ('prod_acct', 'x') ORDER BY account_id`,
  );
  t.same(rows, [{ status: 'active' }], 'the production account unchanged, nothing stored for x');
});
