/**
 * force_get_products_arm (agents/testing/discovery-arms.ts): the next brief-mode
 * get_products of a sandbox account answers the forced arm once: submitted under the
 * given task id (a stored task get_task_status finds, its push registration kept), or
 * 3.2's GetProductsRejected to a request pinned to 3.2 only. Wholesale requests, requests
 * without an account and other pins never take it; every malformed directive is refused
 * with nothing stored. force_task_completion completes such a submitted task with the
 * harness's payload (a completed get_products answer), its webhook firing. Every answer
 * passes the strict schema hook of its pinned release.
 */
import t from 'tap';
import { brandProfile } from '../../../shared/brand.js';
import { markDemoPrincipalsSandbox } from '../../../agents/sandbox/fixtures.js';
import { buyer, harness as coreHarness } from '../support/core.js';

const sandbox = { brand: { domain: 'acme.example' }, operator: 'acme.example', sandbox: true };
const REASON = 'The requested budget is below the minimum for this inventory.';

async function setup(t: Parameters<typeof coreHarness>[0]) {
  const h = await coreHarness(t, {
    profile: brandProfile('adcp'),
    settings: { testController: true },
  });
  await markDemoPrincipalsSandbox(h.pool, h.schema);
  const c = buyer(h);
  const arm = (params: Record<string, unknown>) =>
    h.ok(
      'sales',
      'comply_test_controller',
      { scenario: 'force_get_products_arm', account: sandbox, params },
      c,
    );
  const discover = (extra: Record<string, unknown> = {}) =>
    h.ok(
      'sales',
      'get_products',
      { buying_mode: 'brief', brief: 'premium video', account: sandbox, ...extra },
      c,
    );
  return { h, c, arm, discover };
}

t.test('rejected arm: once, to a 3.2 brief-mode request only', async (t) => {
  const { h, c, arm, discover } = await setup(t);
  const listed = await h.ok(
    'sales',
    'comply_test_controller',
    { scenario: 'list_scenarios', account: sandbox },
    c,
  );
  t.ok((listed.scenarios as string[]).includes('force_get_products_arm'), 'listed');
  const suggestions = ['Increase the campaign budget.', 'Consider display inventory.'];
  t.same(await arm({ arm: 'rejected', reason: REASON, suggestions }), {
    status: 'completed',
    success: true,
    forced: { arm: 'rejected', reason: REASON, suggestions },
    message: 'the next 3.2 brief-mode get_products of this sandbox account answers rejected',
  });
  // Neither an unpinned nor a 3.1 answer has a rejected branch; wholesale never takes it.
  t.equal((await discover()).status, 'completed', 'unpinned: served as usual');
  t.equal((await discover({ adcp_version: '3.1' })).status, 'completed', '3.1: as usual');
  const wholesale = await h.ok(
    'sales',
    'get_products',
    { buying_mode: 'wholesale', account: sandbox, adcp_version: '3.2' },
    c,
  );
  t.equal(wholesale.status, 'completed', 'wholesale: as usual');
  const pinned = { adcp_version: '3.2-beta.4', adcp_major_version: 3 };
  t.equal(
    (await h.ok('sales', 'get_products', { brief: 'video', adcp_version: '3.2' }, c)).status,
    'completed',
    'no account: as usual',
  );
  const rejected = await discover({ ...pinned, context: { correlation_id: 'r' } });
  t.same(rejected, {
    status: 'rejected',
    reason: REASON,
    suggestions,
    adcp_version: '3.2',
    context: { correlation_id: 'r' },
  });
  t.equal((await discover(pinned)).status, 'completed', 'the directive applied once');
  // Without suggestions: the reason alone.
  await arm({ arm: 'rejected', reason: 'Not for this brief.' });
  t.same(await discover(pinned), {
    status: 'rejected',
    reason: 'Not for this brief.',
    adcp_version: '3.2',
  });
});

t.test('submitted arm: the forced task id, a stored task, once', async (t) => {
  const { h, c, arm, discover } = await setup(t);
  t.same(await arm({ arm: 'submitted', task_id: 'task_products_1', message: 'Curating' }), {
    status: 'completed',
    success: true,
    forced: { arm: 'submitted', task_id: 'task_products_1' },
    message:
      'the next brief-mode get_products of this sandbox account answers submitted as task_products_1',
  });
  const submitted = await discover({
    push_notification_config: { url: 'https://buyer.example/hooks', operation_id: 'op_1' },
  });
  t.same(submitted, { status: 'submitted', task_id: 'task_products_1', message: 'Curating' });
  const status = await h.ok('sales', 'get_task_status', { task_id: 'task_products_1' }, c);
  t.match(status, { task_id: 'task_products_1', task_type: 'get_products', status: 'submitted' });
  const { rows } = await h.pool.query<{ push_notification_config: { url: string } }>(
    `SELECT push_notification_config FROM ${h.schema}.tasks WHERE task_id = $1`,
    ['task_products_1'],
  );
  t.equal(rows[0]?.push_notification_config.url, 'https://buyer.example/hooks', 'kept');
  t.equal((await discover()).status, 'completed', 'the directive applied once');
  t.match(
    await arm({ arm: 'submitted', task_id: 'task_products_1' }),
    { success: false, error: 'INVALID_PARAMS' },
    'a task id in use is refused',
  );
});

t.test('malformed directives are refused; nothing is forced', async (t) => {
  const { arm, discover } = await setup(t);
  for (const [name, params] of [
    ['no arm', {}],
    ['unknown arm', { arm: 'completed', task_id: 'x' }],
    ['input-required is create_media_buy only', { arm: 'input-required' }],
    ['submitted without task_id', { arm: 'submitted' }],
    ['task_id with a space', { arm: 'submitted', task_id: 'a b' }],
    ['task_id too long', { arm: 'submitted', task_id: 'x'.repeat(129) }],
    ['message not a string', { arm: 'submitted', task_id: 'task_ok', message: 5 }],
    ['empty message', { arm: 'submitted', task_id: 'task_ok', message: '' }],
    ['rejected without reason', { arm: 'rejected' }],
    ['empty reason', { arm: 'rejected', reason: '' }],
    ['reason too long', { arm: 'rejected', reason: 'x'.repeat(2001) }],
    ['rejected with a task_id', { arm: 'rejected', reason: 'r', task_id: 'task_ok' }],
    ['suggestions not an array', { arm: 'rejected', reason: 'r', suggestions: 'more' }],
    ['no suggestions', { arm: 'rejected', reason: 'r', suggestions: [] }],
    ['an empty suggestion', { arm: 'rejected', reason: 'r', suggestions: [''] }],
    ['a suggestion not a string', { arm: 'rejected', reason: 'r', suggestions: [5] }],
    ['21 suggestions', { arm: 'rejected', reason: 'r', suggestions: Array(21).fill('s') }],
  ] as const) {
    t.match(await arm(params), { success: false, error: 'INVALID_PARAMS' }, name);
  }
  t.equal(
    (await discover({ adcp_version: '3.2' })).status,
    'completed',
    'a refused directive forces nothing',
  );
});

t.test(
  'force_task_completion: a submitted discovery task completes with the payload',
  async (t) => {
    const { h, c, arm, discover } = await setup(t);
    const complete = (params: Record<string, unknown>) =>
      h.ok(
        'sales',
        'comply_test_controller',
        { scenario: 'force_task_completion', account: sandbox, params },
        c,
      );
    await arm({ arm: 'submitted', task_id: 'task_products_2' });
    await discover({
      push_notification_config: { url: 'https://buyer.example/hooks', operation_id: 'op_2' },
    });
    const result = { products: [], cache_scope: 'public', context: { correlation_id: 'done' } };
    for (const [name, params, error] of [
      ['no task_id', { result }, 'INVALID_PARAMS'],
      ['task_id with a space', { task_id: 'a b', result }, 'INVALID_PARAMS'],
      ['no result', { task_id: 'task_products_2' }, 'INVALID_PARAMS'],
      ['result not an object', { task_id: 'task_products_2', result: [1] }, 'INVALID_PARAMS'],
      [
        'result not a get_products answer',
        { task_id: 'task_products_2', result: { products: 'none' } },
        'INVALID_PARAMS',
      ],
      [
        'result over 256 KB',
        { task_id: 'task_products_2', result: { ...result, pad: 'x'.repeat(262_145) } },
        'INVALID_PARAMS',
      ],
      ['unknown task', { task_id: 'task_nope', result }, 'NOT_FOUND'],
    ] as const) {
      t.match(await complete(params), { success: false, error }, name);
    }
    h.notifications.calls.length = 0;
    t.same(await complete({ task_id: 'task_products_2', result }), {
      status: 'completed',
      success: true,
      previous_state: 'submitted',
      current_state: 'completed',
    });
    const status = await h.ok(
      'sales',
      'get_task_status',
      { task_id: 'task_products_2', include_result: true },
      c,
    );
    t.match(status, { status: 'completed', result: { products: [], cache_scope: 'public' } });
    const [fired] = h.notifications.calls.filter((x) => x.method === 'taskStatusChanged');
    t.match(fired?.input, {
      taskId: 'task_products_2',
      taskType: 'get_products',
      status: 'completed',
      pushNotificationConfig: { url: 'https://buyer.example/hooks' },
      result: { products: [], status: 'completed' },
    });
    t.match(
      await complete({ task_id: 'task_products_2', result }),
      { success: false, error: 'INVALID_TRANSITION', current_state: 'completed' },
      'a completed task stays completed',
    );
    // Another principal's task is not found; a task of another type is not completed here.
    const { rows } = await h.pool.query<{ task_id: string }>(
      `INSERT INTO ${h.schema}.tasks (task_id, agent, task_type, principal_id, status, initial_status, params, state)
     VALUES ('task_other', 'sales', 'get_products', 'someone-else', 'submitted', 'submitted', '{}', '{}'),
            ('task_buy', 'sales', 'create_media_buy', 'demo-buyer', 'submitted', 'submitted', '{}', '{}')
     RETURNING task_id`,
    );
    t.equal(rows.length, 2);
    t.match(await complete({ task_id: 'task_other', result }), {
      success: false,
      error: 'NOT_FOUND',
    });
    t.match(await complete({ task_id: 'task_buy', result }), {
      success: false,
      error: 'INVALID_PARAMS',
    });
  },
);

t.test(
  'force_get_signals_arm: a brief-mode get_signals answers submitted, completed by the harness (get_signals_async.yaml)',
  async (t) => {
    const h = await coreHarness(t, {
      profile: brandProfile('adcp'),
      settings: { testController: true },
    });
    await markDemoPrincipalsSandbox(h.pool, h.schema);
    const c = buyer(h, 'signals');
    const nova = { brand: { domain: 'novamotors.example' }, operator: 'pinnacle-agency.example' };
    const control = (scenario: string, params: Record<string, unknown>) =>
      h.ok(
        'signals',
        'comply_test_controller',
        { scenario, account: { ...nova, sandbox: true }, params },
        c,
      );
    for (const [name, params] of [
      ['no arm', { task_id: 'task_s' }],
      ['rejected is not a signals arm', { arm: 'rejected', reason: 'no' }],
      ['no task_id', { arm: 'submitted' }],
      ['a bad task_id', { arm: 'submitted', task_id: 'a b' }],
    ] as const) {
      t.match(
        await control('force_get_signals_arm', params),
        { success: false, error: 'INVALID_PARAMS' },
        name,
      );
    }
    t.match(
      await control('force_get_signals_arm', {
        arm: 'submitted',
        task_id: 'task_async_signals_nova_ev',
        message: 'Signal discovery queued; typical turnaround 10 minutes',
      }),
      { success: true, forced: { arm: 'submitted', task_id: 'task_async_signals_nova_ev' } },
    );
    const request = {
      discovery_mode: 'brief',
      account: { ...nova, sandbox: true },
      signal_spec: 'In-market EV buyers near dealerships with high purchase intent',
      pagination: { max_results: 5 },
      push_notification_config: { url: 'https://buyer.example/hooks', operation_id: 'op_s' },
    };
    const wholesale = await h.ok(
      'signals',
      'get_signals',
      { ...request, discovery_mode: 'wholesale', signal_spec: undefined },
      c,
    );
    t.equal(wholesale.status, 'completed', 'a wholesale feed request does not take it');
    const submitted = await h.ok('signals', 'get_signals', request, c);
    t.match(submitted, { status: 'submitted', task_id: 'task_async_signals_nova_ev' });
    t.notOk('signals' in submitted, 'no signals on the envelope');
    const again = await h.ok('signals', 'get_signals', request, c);
    t.equal(again.status, 'completed', 'once');
    const listed = await h.ok(
      'signals',
      'list_tasks',
      {
        account: { ...nova, sandbox: true },
        filters: {
          task_ids: ['task_async_signals_nova_ev'],
          task_type: 'get_signals',
          has_webhook: true,
        },
      },
      c,
    );
    t.match(listed.tasks, [
      {
        task_id: 'task_async_signals_nova_ev',
        domain: 'signals',
        status: 'submitted',
        has_webhook: true,
      },
    ]);
    const elsewhere = await h.ok(
      'signals',
      'list_tasks',
      {
        account: { brand: { domain: 'otherbrand.example' }, operator: 'other-operator.example' },
        filters: { task_ids: ['task_async_signals_nova_ev'] },
      },
      c,
    );
    t.same(elsewhere.tasks, [], 'not listed under another account');
    t.match(
      await control('force_task_completion', {
        task_id: 'task_async_signals_nova_ev',
        result: { signals: 'none' },
      }),
      { success: false, error: 'INVALID_PARAMS' },
      'not a get_signals answer',
    );
    h.notifications.calls.length = 0;
    const result = {
      signals: [],
      cache_scope: 'public',
      context: { correlation_id: 'get_signals_async--terminal' },
    };
    t.match(
      await control('force_task_completion', { task_id: 'task_async_signals_nova_ev', result }),
      {
        success: true,
        current_state: 'completed',
      },
    );
    const polled = await h.ok(
      'signals',
      'get_task_status',
      { task_id: 'task_async_signals_nova_ev', include_result: true },
      c,
    );
    t.match(polled, {
      status: 'completed',
      task_type: 'get_signals',
      protocol: 'signals',
      result: { signals: [] },
    });
    const [fired] = h.notifications.calls.filter((x) => x.method === 'taskStatusChanged');
    t.match(fired?.input, {
      taskId: 'task_async_signals_nova_ev',
      taskType: 'get_signals',
      status: 'completed',
      pushNotificationConfig: { url: 'https://buyer.example/hooks' },
    });
  },
);
