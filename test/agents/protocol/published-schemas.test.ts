/** The vendored published schemas: loading, request/response validation, issue paths. */
import t from 'tap';
import {
  asPublishedBrand,
  checkResponse,
  hasPublishedTask,
  issuesFromAjv,
  publishedTaskName,
  RELEASES,
  releasesOf,
  ResponseSchemaDrift,
  responseDrift,
  validateRequest,
  validateResponse,
} from '../../../agents/protocol/index.js';

t.test(
  'every release publishes the tasks we vendored; 3.2 adds agent notification configs',
  async (t) => {
    for (const release of RELEASES) {
      t.ok(hasPublishedTask(release, 'sales', 'create_media_buy'), `${release} create_media_buy`);
      t.ok(
        hasPublishedTask(release, 'creative', 'preview_creative'),
        `${release} preview_creative`,
      );
      t.ok(hasPublishedTask(release, 'signals', 'get_task_status'), `${release} shared task`);
      t.notOk(hasPublishedTask(release, 'sales', 'list_authorized_properties'), 'not published');
    }
    t.notOk(hasPublishedTask('3.1.19', 'sales', 'sync_agent_notification_configs'));
    t.ok(hasPublishedTask('3.2.0-beta.5', 'sales', 'sync_agent_notification_configs'));
    t.equal(validateResponse('sales', 'list_authorized_properties', {}, '3.1.19'), null);
  },
);

t.test('the brand capabilities task is the protocol get_adcp_capabilities', async (t) => {
  t.equal(publishedTaskName('get_svc_capabilities'), 'get_adcp_capabilities');
  t.equal(publishedTaskName('get_adcp_capabilities'), 'get_adcp_capabilities');
  t.equal(publishedTaskName('get_products'), 'get_products');
  t.equal(
    publishedTaskName('get_agent_capabilities'),
    'get_agent_capabilities',
    'ours, unpublished',
  );
});

t.test('a response is checked per release; the same task differs by agent', async (t) => {
  const submitted = { status: 'submitted', task_id: 'task_1', message: 'queued' };
  for (const release of RELEASES) {
    t.same(validateResponse('sales', 'create_media_buy', submitted, release), [], release);
  }
  const leaking = { ...submitted, media_buy_id: 'mb_1' };
  t.ok(validateResponse('sales', 'create_media_buy', leaking, '3.1.19')!.length > 0);
  // The sales agent's format listing and the creative agent's are different schemas.
  t.ok(responseDrift('sales', 'list_creative_formats', { status: 'completed' }).length === 2);
});

t.test('a failed task: its own error branch, or the protocol error envelope', async (t) => {
  const failed = {
    status: 'failed',
    errors: [{ code: 'VALIDATION_ERROR', message: 'bad', field: 'packages[0].budget' }],
    adcp_error: { code: 'VALIDATION_ERROR', message: 'bad' },
    context: { trace: 'x' },
  };
  for (const [agent, task] of [
    ['sales', 'create_media_buy'],
    ['sales', 'list_creatives'],
    ['sales', 'get_media_buys'],
    ['creative', 'preview_creative'],
  ] as const) {
    t.same(responseDrift(agent, task, failed), [], `${agent} ${task}`);
  }
  const noCode = { status: 'failed', errors: [{ message: 'bad' }] };
  const drift = responseDrift('sales', 'list_creatives', noCode);
  t.equal(drift.length, 2, 'both releases flag an error without a code');
  t.ok(drift[0]!.issues.some((i) => i.pointer === '/errors/0/code' && i.keyword === 'required'));
});

t.test('checkResponse: off does nothing, warn warns, strict throws naming the drift', async (t) => {
  const bad = { status: 'completed', media_buys: 'not a list' };
  t.doesNotThrow(() => checkResponse('off', 'sales', 'get_media_buys', bad));
  t.doesNotThrow(() => checkResponse(undefined, 'sales', 'get_media_buys', bad));
  const warnings: unknown[] = [];
  checkResponse('warn', 'sales', 'get_media_buys', bad, {
    logger: { warn: (o) => warnings.push(o) },
  });
  t.equal(warnings.length, 1);
  const err = t.throws(() => checkResponse('strict', 'sales', 'get_media_buys', bad)) as unknown;
  t.ok(err instanceof ResponseSchemaDrift);
  t.match((err as Error).message, /get_media_buys.*\/media_buys must be array/);
  t.doesNotThrow(() =>
    checkResponse('strict', 'sales', 'get_media_buys', { status: 'completed', media_buys: [] }),
  );
  t.doesNotThrow(() => checkResponse('strict', 'sales', 'list_authorized_properties', bad));
});

t.test('request issues name every offending field as RFC 6901 pointers', async (t) => {
  const issues = validateRequest(
    'sales',
    'get_media_buy_delivery',
    { media_buy_ids: 'mb_1', start_date: 7 },
    '3.1.19',
  )!;
  const pointers = issues.map((i) => i.pointer);
  t.ok(pointers.includes('/media_buy_ids'), pointers.join(' '));
  t.ok(pointers.includes('/start_date'), pointers.join(' '));
  t.same(validateRequest('sales', 'get_media_buy_delivery', {}, '3.1.19'), []);
});

t.test(
  'issuesFromAjv: missing and extra members point at the member; summaries fold',
  async (t) => {
    const issues = issuesFromAjv([
      {
        instancePath: '/a',
        schemaPath: '#/r',
        keyword: 'required',
        params: { missingProperty: 'b/c' },
        message: 'm1',
      },
      {
        instancePath: '',
        schemaPath: '#/x',
        keyword: 'additionalProperties',
        params: { additionalProperty: 'z~' },
        message: 'm2',
      },
      { instancePath: '', schemaPath: '#/oneOf', keyword: 'oneOf', params: {}, message: 'summary' },
      {
        instancePath: '/a',
        schemaPath: '#/r',
        keyword: 'required',
        params: { missingProperty: 'b/c' },
        message: 'm1',
      },
    ]);
    t.same(issues, [
      { pointer: '/a/b~1c', keyword: 'required', message: 'm1' },
      { pointer: '/z~0', keyword: 'additionalProperties', message: 'm2' },
    ]);
    t.same(
      issuesFromAjv([
        { instancePath: '/q', schemaPath: '#', keyword: 'anyOf', params: {}, message: 'only' },
      ]),
      [{ pointer: '/q', keyword: 'anyOf', message: 'only' }],
    );
    t.same(issuesFromAjv(null), []);
  },
);

t.test('releasesOf: the request adcp_version picks the release it is answered in', async (t) => {
  t.same(releasesOf({ adcp_version: '3.1.0' }), ['3.1.19']);
  t.same(releasesOf({ adcp_version: '3.2' }), ['3.2.0-beta.5']);
  t.same(releasesOf({ adcp_version: '3.2-beta.4' }), ['3.2.0-beta.5'], 'a prerelease pin');
  t.same(releasesOf({ adcp_version: '3.1' }), ['3.1.19']);
  t.same(releasesOf({ adcp_version: '3.21' }), RELEASES, 'not 3.2');
  t.same(releasesOf({ adcp_version: 'v3.2' }), RELEASES, 'malformed: every release');
  t.same(releasesOf({ adcp_version: '9.9' }), RELEASES, 'unknown: every release');
  t.same(releasesOf({}), RELEASES);
  t.same(releasesOf(null), RELEASES);
  const only32 = { status: 'completed', notification_configs: [], action: 'x' };
  t.ok(
    responseDrift('sales', 'sync_agent_notification_configs', only32, ['3.1.19']).length === 0,
    'a task a release does not publish is not checked there',
  );
});

t.test('a neutral-brand answer is checked under the protocol names', async (t) => {
  const body = {
    svc: { major_versions: [3] },
    webhook_signing: { profile: 'svc/webhook-signing/v1' },
    svc_error: { code: 'X' },
    context: { note: 'svc/kept only when it is a value under svc/' },
  };
  t.same(asPublishedBrand('get_svc_capabilities', body), {
    adcp: { major_versions: [3] },
    webhook_signing: { profile: 'adcp/webhook-signing/v1' },
    adcp_error: { code: 'X' },
    context: { note: 'adcp/kept only when it is a value under svc/' },
  });
  // An error envelope of any task carries the brand in its own member name.
  t.match(asPublishedBrand('get_products', { status: 'failed', svc_error: {} }), {
    adcp_error: {},
  });
  // A body without a neutral-brand member is left as it is.
  const plain = { products: [] };
  t.equal(asPublishedBrand('get_products', plain), plain);
  const list = [1];
  t.equal(asPublishedBrand('get_products', list), list);
});

t.test('a working / input-required answer is its status-specific published payload', async (t) => {
  for (const release of RELEASES) {
    const ok = { status: 'input-required', task_id: 'task_1', reason: 'APPROVAL_REQUIRED' };
    t.same(validateResponse('sales', 'create_media_buy', ok, release), [], release);
    const bad = { ...ok, reason: 'awaiting seller approval' };
    t.match(
      validateResponse('sales', 'create_media_buy', bad, release),
      [{ pointer: '/reason' }],
      `${release}: reason outside the published enum`,
    );
    // A task without a status-specific payload keeps its own response schema.
    t.ok(
      (validateResponse('sales', 'get_media_buys', { status: 'input-required' }, release) ?? [])
        .length > 0,
      `${release}: get_media_buys has no input-required payload`,
    );
  }
});
