import t, { type Test } from 'tap';
import { createHmac } from 'node:crypto';
import { brandProfile } from '../../shared/brand.js';
import {
  ChannelsNotConfiguredError,
  NotificationCore,
  NotificationInputError,
} from '../../sender/core/notification-core.js';
import { RegistrationError } from '../../sender/core/registration.js';
import { DuplicateKeyInputError, TaskError } from '../../shared/errors/task-errors.js';
import { senderHarness, startReceiver, verifyReceived } from './harness.js';

const profile = brandProfile('svc');

async function setup(t: Test) {
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const core = new NotificationCore({
    pool: h.pool,
    schema: h.schema,
    queue: h.queue,
    profile,
    protocolVersion: '3.2',
    allowHosts: ['127.0.0.1'],
  });
  return { h, rx, core };
}

const push = (url: string, extra: Record<string, unknown> = {}) => ({
  url,
  operation_id: 'op-123',
  ...extra,
});

t.test('terminal initial response: no webhook, nothing in the outbox', async (t) => {
  const { h, rx, core } = await setup(t);
  for (const initial of ['completed', 'failed', 'rejected', 'canceled'] as const) {
    const ids = await core.taskStatusChanged({
      taskId: 't1',
      taskType: 'create_media_buy',
      status: 'completed',
      initialStatus: initial,
      pushNotificationConfig: push(rx.url),
    });
    t.same(ids, [], `initial ${initial}`);
  }
  const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.outbox`);
  t.equal(rows[0].n, 0);
});

t.test(
  'one event per status change, fresh key each, operation_id and context verbatim; every attempt verifies',
  async (t) => {
    const { h, rx, core } = await setup(t);
    h.startWorker();
    const context = { trace: 'abc', nested: { n: 1, list: [1, 'two', null] }, ü: true };
    const ids: string[] = [];
    for (const status of ['working', 'input-required', 'completed'] as const) {
      ids.push(
        ...(await core.taskStatusChanged({
          taskId: 'task_9',
          taskType: 'create_media_buy',
          status,
          initialStatus: 'submitted',
          pushNotificationConfig: push(rx.url, { token: 'tok_0123456789abcdef' }),
          context,
          result: status === 'completed' ? { media_buy_id: 'mb_7' } : { percentage: 50 },
          message: `now ${status}`,
        })),
      );
    }
    t.equal(ids.length, 3);
    for (const id of ids) t.equal(await h.waitForState(id), 'delivered');
    const bodies = rx.received.map((r) => JSON.parse(r.body.toString()));
    t.same(
      new Set(bodies.map((b) => b.status)),
      new Set(['working', 'input-required', 'completed']),
    );
    t.equal(new Set(bodies.map((b) => b.idempotency_key)).size, 3, 'a fresh key per event');
    // One assertion over every body (a retried delivery adds one: the count may vary).
    t.match(
      bodies,
      bodies.map(() => ({
        operation_id: 'op-123',
        context,
        task_id: 'task_9',
        token: 'tok_0123456789abcdef',
        idempotency_key: /^[A-Za-z0-9_.:-]{16,255}$/,
      })),
    );
    // Verify every delivery with the receiver-side verifier over the published JWKS.
    const kids: unknown[] = [];
    for (const r of rx.received) kids.push((await verifyReceived(rx, r, h.key, profile)).keyid);
    t.same([...new Set(kids)], [h.key.kid], 'every delivery verifies');
  },
);

t.test('both registrations: MCP envelope and A2A shape, each with its own key', async (t) => {
  const { h, rx, core } = await setup(t);
  const a2a = await startReceiver();
  t.teardown(() => a2a.close());
  h.startWorker();
  const ids = await core.taskStatusChanged({
    taskId: 'task_a',
    taskType: 'create_media_buy',
    status: 'completed',
    initialStatus: 'working',
    pushNotificationConfig: push(rx.url),
    a2aConfig: { version: '1.0', config: { url: a2a.url, id: 'cfg1' }, contextId: 'ctx_1' },
    result: { media_buy_id: 'mb_1' },
  });
  t.equal(ids.length, 2);
  for (const id of ids) await h.waitForState(id);
  const mcp = JSON.parse(rx.received[0]!.body.toString());
  const task = JSON.parse(a2a.received[0]!.body.toString());
  t.equal(mcp.status, 'completed');
  t.equal(task.task.status.state, 'TASK_STATE_COMPLETED');
  t.same(task.task.artifacts[0].parts.at(-1).data, { media_buy_id: 'mb_1' });
  t.match(task.task.metadata.idempotency_key, /^whk_/);
  t.not(task.task.metadata.idempotency_key, mcp.idempotency_key);

  const interim = await core.taskStatusChanged({
    taskId: 'task_b',
    taskType: 'create_media_buy',
    status: 'working',
    initialStatus: 'submitted',
    a2aConfig: { version: '0.3', config: { url: a2a.url } },
    result: { percentage: 10 },
  });
  await h.waitForState(interim[0]!);
  const upd = JSON.parse(a2a.received[1]!.body.toString());
  t.equal(upd.kind, 'status-update');
  t.equal(upd.status.state, 'working');
  t.equal(upd.final, false);
});

t.test('registration checks refuse with INVALID_REQUEST', async (t) => {
  const { core } = await setup(t);
  const bad: Array<[unknown, string]> = [
    [{ url: 'https://buyer.example/hook' }, 'push_notification_config.operation_id'],
    [
      { url: 'https://buyer.example/hook', operation_id: 'has space' },
      'push_notification_config.operation_id',
    ],
    [{ url: 'not a url', operation_id: 'op' }, 'push_notification_config.url'],
    [{ url: 'http://buyer.example/hook', operation_id: 'op' }, 'push_notification_config.url'],
    [{ url: 'https://10.0.0.1/hook', operation_id: 'op' }, 'push_notification_config.url'],
    [{ url: 'https://u:p@buyer.example/hook', operation_id: 'op' }, 'push_notification_config.url'],
    [
      { url: 'https://buyer.example/h', operation_id: 'op', token: 'short' },
      'push_notification_config.token',
    ],
    [
      {
        url: 'https://buyer.example/h',
        operation_id: 'op',
        authentication: { schemes: ['HMAC-SHA256'], credentials: 'x'.repeat(31) },
      },
      'push_notification_config.authentication.credentials',
    ],
    [
      {
        url: 'https://buyer.example/h',
        operation_id: 'op',
        authentication: { schemes: ['HMAC-SHA256'], credentials: 'a'.repeat(40) },
      },
      'push_notification_config.authentication.credentials',
    ],
    [
      {
        url: 'https://buyer.example/h',
        operation_id: 'op',
        authentication: { schemes: ['Basic'], credentials: 'k7'.repeat(20) + 'xyz' },
      },
      'push_notification_config.authentication.schemes',
    ],
    ['a string', 'push_notification_config'],
  ];
  for (const [config, field] of bad) {
    const run = core.taskStatusChanged({
      taskId: 't',
      taskType: 'create_media_buy',
      status: 'completed',
      initialStatus: 'working',
      pushNotificationConfig: config,
    });
    await t.rejects(run, {
      name: 'RegistrationError',
      code: 'INVALID_REQUEST',
      status: 400,
      field,
    });
    t.throws(
      () => core.validateRegistration({ pushNotificationConfig: config }),
      RegistrationError,
    );
    try {
      core.validateRegistration({ pushNotificationConfig: config });
      t.fail('accepted');
    } catch (err) {
      t.ok(err instanceof TaskError, 'a TaskError');
    }
  }
  t.doesNotThrow(() =>
    core.validateRegistration({ pushNotificationConfig: push('https://buyer.example/hook') }),
  );
});

t.test('raw JSON input with a duplicate key is refused (duplicate_key_input)', async (t) => {
  const { h, rx, core } = await setup(t);
  const base = {
    taskId: 't',
    taskType: 'create_media_buy' as const,
    status: 'completed' as const,
    initialStatus: 'working' as const,
    pushNotificationConfig: push(rx.url),
  };
  await t.rejects(core.taskStatusChanged({ ...base, context: '{"a":1,"b":{"c":1,"c":2}}' }), {
    name: 'DuplicateKeyInError',
    code: 'duplicate_key_input',
    field: 'context',
    duplicateKeys: ['c'],
  });
  const dup = await core
    .taskStatusChanged({ ...base, result: '[{"x":1,"x":1}]' })
    .catch((e: unknown) => e);
  t.ok(dup instanceof DuplicateKeyInputError, 'a DuplicateKeyInputError (the In subclass)');
  await t.rejects(core.taskStatusChanged({ ...base, result: '"text"' }), NotificationInputError);
  await t.rejects(core.taskStatusChanged({ ...base, result: '{"x":' }), {
    name: 'NotificationInputError',
    code: 'invalid_json_input',
    id: 'invalid_json_input', // the deprecated alias
  });
  await t.rejects(core.taskStatusChanged({ ...base, result: '[1]' }), {
    name: 'NotificationInputError',
    id: 'invalid_json_input',
  });
  const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.outbox`);
  t.equal(rows[0].n, 0, 'nothing enqueued');
  const ids = await core.taskStatusChanged({ ...base, context: '{"a":1,"b":{"c":1}}' });
  t.equal(ids.length, 1, 'well-formed raw JSON is accepted');
});

t.test('events join the caller transaction: rollback sends nothing, commit delivers', async (t) => {
  const { h, rx, core } = await setup(t);
  h.startWorker({ visibilityWaitMs: 500 });
  const change = {
    taskId: 'tx',
    taskType: 'create_media_buy' as const,
    status: 'completed' as const,
    initialStatus: 'working' as const,
    pushNotificationConfig: push(rx.url),
  };
  const c1 = await h.pool.connect();
  await c1.query('BEGIN');
  const [rolled] = await core.taskStatusChanged({ ...change, client: c1 });
  await new Promise((r) => setTimeout(r, 300));
  await c1.query('ROLLBACK');
  c1.release();
  const c2 = await h.pool.connect();
  await c2.query('BEGIN');
  const [committed] = await core.taskStatusChanged({ ...change, client: c2 });
  await new Promise((r) => setTimeout(r, 300));
  t.equal(rx.received.length, 0, 'nothing sent before commit');
  await c2.query('COMMIT');
  c2.release();
  t.equal(await h.waitForState(committed!), 'delivered');
  t.equal(await h.outbox.state(rolled!), null, 'rolled-back row never existed');
  await new Promise((r) => setTimeout(r, 700));
  t.equal(rx.received.length, 1, 'only the committed event was delivered');
});

t.test('legacy HMAC and Bearer deliveries', async (t) => {
  const { h, rx, core } = await setup(t);
  h.startWorker();
  const secret = 'S3cr3t-shared-between-buyer-seller!';
  const [a, b] = [
    ...(await core.taskStatusChanged({
      taskId: 'h',
      taskType: 'create_media_buy',
      status: 'completed',
      initialStatus: 'working',
      pushNotificationConfig: push(rx.url, {
        authentication: { schemes: ['HMAC-SHA256'], credentials: secret },
      }),
    })),
    ...(await core.taskStatusChanged({
      taskId: 'b',
      taskType: 'create_media_buy',
      status: 'completed',
      initialStatus: 'working',
      pushNotificationConfig: push(rx.url, {
        authentication: { schemes: ['Bearer'], credentials: secret },
      }),
    })),
  ];
  await h.waitForState(a!);
  await h.waitForState(b!);
  const hm = rx.received.find((r) => JSON.parse(r.body.toString()).task_id === 'h')!;
  const ts = String(hm.headers['x-svc-timestamp']);
  const expected =
    'sha256=' + createHmac('sha256', secret).update(`${ts}.`).update(hm.body).digest('hex');
  t.equal(hm.headers['x-svc-signature'], expected);
  t.equal(hm.headers['signature'], undefined, 'no 9421 signature in legacy mode');
  const br = rx.received.find((r) => JSON.parse(r.body.toString()).task_id === 'b')!;
  t.equal(br.headers.authorization, `Bearer ${secret}`);
});

t.test('agent and account events', async (t) => {
  const { h, rx, core } = await setup(t);
  h.startWorker();
  const [cap] = await core.agentEvent({
    configs: [{ url: rx.url, subscriber_id: 'sub_1' }],
    agentUrl: 'https://seller.example/mcp',
    capabilitiesVersion: '2026-01-01T00:00:00Z',
    reason: 'formats_changed',
  });
  await h.waitForState(cap!);
  const p = JSON.parse(rx.received[0]!.body.toString());
  t.equal(p.notification_type, 'capabilities.changed');
  t.equal(p.subscriber_id, 'sub_1');
  t.equal(p.capabilities_version, '2026-01-01T00:00:00Z');
  t.match(p.notification_id, /^[A-Za-z0-9_.:-]+$/);
  t.notOk('document' in p);

  const [acc] = await core.accountNotification({
    configs: [{ url: rx.url, subscriber_id: 'sub_2' }],
    notificationType: 'account.status_changed',
    notificationId: 'acct_1.active',
    fields: '{"account_id":"acct_1","previous_status":"pending","status":"active"}',
  });
  await h.waitForState(acc!);
  const q = JSON.parse(rx.received[1]!.body.toString());
  t.equal(q.account_id, 'acct_1');
  t.equal(q.notification_type, 'account.status_changed');
  await t.rejects(
    core.accountNotification({
      configs: [{ url: rx.url, subscriber_id: 's' }],
      notificationType: 'capabilities.changed' as never,
      notificationId: 'x',
      fields: {},
    }),
    { code: 'INVALID_REQUEST', field: 'notification_type' },
  );
  await t.rejects(
    core.agentEvent({
      configs: [{ url: rx.url }],
      agentUrl: 'x',
      capabilitiesVersion: '1',
      reason: 'r',
    }),
    { code: 'INVALID_REQUEST', field: 'configs[0].subscriber_id' },
  );
});

t.test('a refused subscriber of a broadcast is skipped; the others get their event', async (t) => {
  const { h, rx, core } = await setup(t);
  h.startWorker();
  const ids = await core.accountNotification({
    configs: [
      { url: 'http://169.254.169.254/latest', subscriber_id: 'metadata' },
      { url: rx.url },
      { url: rx.url, subscriber_id: 'good' },
    ],
    notificationType: 'account.status_changed',
    notificationId: 'acct_9.active',
    fields: { account_id: 'acct_9', previous_status: 'pending', status: 'active' },
  });
  t.equal(ids.length, 1, 'one event: the good subscriber');
  await h.waitForState(ids[0]!);
  t.same(
    rx.received.map((r) => JSON.parse(r.body.toString()).subscriber_id),
    ['good'],
    'delivered to the good subscriber only',
  );
  const caps = await core.agentEvent({
    configs: [
      { url: 'http://10.0.0.1/hook', subscriber_id: 'private' },
      { url: rx.url, subscriber_id: 'ok' },
    ],
    agentUrl: 'https://seller.example/mcp',
    capabilitiesVersion: '2026-01-02T00:00:00Z',
    reason: 'formats_changed',
  });
  t.equal(caps.length, 1, 'capabilities.changed: the same isolation');
  await t.rejects(
    core.accountNotification({
      configs: [{ url: 'http://169.254.169.254/latest', subscriber_id: 'metadata' }],
      notificationType: 'account.status_changed',
      notificationId: 'acct_9.x',
      fields: {},
    }),
    { code: 'INVALID_REQUEST' },
    'every subscriber refused: the caller hears why',
  );
});

t.test('media-buy methods need injected channels, and forward to them', async (t) => {
  const { h } = await setup(t);
  const bare = new NotificationCore({
    pool: h.pool,
    schema: h.schema,
    queue: h.queue,
    profile,
    protocolVersion: '3.2',
  });
  await t.rejects(
    bare.impairmentObserved({ mediaBuyId: 'm', principalId: 'p', impairment: {} }),
    ChannelsNotConfiguredError,
  );
  await t.rejects(
    bare.mediaBuyTerminal({ mediaBuyId: 'm', principalId: 'p', status: 'completed' }),
    ChannelsNotConfiguredError,
  );
  const calls: string[] = [];
  const core = new NotificationCore({
    pool: h.pool,
    queue: h.queue,
    schema: h.schema,
    profile,
    protocolVersion: '3.2',
    channels: {
      mediaBuyChannelsConfigured: async (i) => void calls.push(`configured:${i.mediaBuyId}`),
      deliveryReportDue: async (i) => (calls.push(`report:${i.mediaBuyId}`), ['1']),
      impairmentObserved: async (i) => (calls.push(`impairment:${i.mediaBuyId}`), []),
      mediaBuyTerminal: async (i) => (calls.push(`terminal:${i.status}`), ['2']),
    },
  });
  await core.mediaBuyChannelsConfigured({ mediaBuyId: 'm1', principalId: 'p' });
  t.same(await core.deliveryReportDue({ mediaBuyId: 'm1', principalId: 'p', report: {} }), ['1']);
  await core.impairmentObserved({ mediaBuyId: 'm1', principalId: 'p', impairment: {} });
  t.same(await core.mediaBuyTerminal({ mediaBuyId: 'm1', principalId: 'p', status: 'canceled' }), [
    '2',
  ]);
  t.same(calls, ['configured:m1', 'report:m1', 'impairment:m1', 'terminal:canceled']);
});
