/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * A2A task methods of both versions over real HTTP: agent-card security requirements,
 * tasks/get for answers given at once and for async tasks, tasks/cancel, and the task
 * push-notification config set/get/list/delete, with their malformed variants (unknown
 * task ids, another principal's task, unknown config ids, configs the sender refuses).
 */
import t from 'tap';
import { parseA2aPushConfig } from '../../../sender/core/registration.js';
import { purgeExpired } from '../../../agents/service.js';
import { RecordingNotifications } from '../../../agents/runtime/recording-notifications.js';
import { START } from '../support/core.js';
import { postJson, startAgents } from './support.js';

/** The recording notifications with the sender's own A2A registration check. */
class CheckedNotifications extends RecordingNotifications {
  validateRegistration(input: { a2aConfig?: { version: '0.3' | '1.0'; config: unknown } }) {
    if (input.a2aConfig) parseA2aPushConfig(input.a2aConfig.config);
  }
}

const buy = (creative: string) => ({
  buyer_ref: 'a2a-tasks',
  brand_manifest: { url: 'https://acme.example' },
  packages: [
    {
      buyer_ref: 'p',
      product_id: 'video_olv_news',
      pricing_option_id: 'olv_news_cpm',
      budget: 5000,
    },
  ],
  start_time: { type: 'asap' },
  end_time: new Date(START + 86400_000).toISOString(),
  _creative: creative,
});

type Rpc = (method: string, params: unknown, headers?: Record<string, string>) => Promise<any>;

function rpcAt(url: string, defaults: Record<string, string>): Rpc {
  let n = 0;
  return async (method, params, headers = {}) => {
    const r = await postJson(
      url,
      { jsonrpc: '2.0', id: ++n, method, params },
      {
        ...defaults,
        ...headers,
      },
    );
    return { status: r.status, ...(r.body as object) };
  };
}

function send03(skill: string, parameters: unknown) {
  return {
    message: {
      kind: 'message',
      messageId: `m-${skill}`,
      role: 'user',
      parts: [{ kind: 'data', data: { skill, parameters } }],
    },
  };
}

function send10(skill: string, input: unknown) {
  return {
    message: { messageId: `m-${skill}`, role: 'ROLE_USER', parts: [{ data: { skill, input } }] },
  };
}

t.test('agent cards declare a security requirement of their schemes', async (t) => {
  const { urls } = await startAgents(t);
  const c03 = (await (await fetch(`${urls.sales}/.well-known/agent-card.json`)).json()) as any;
  t.same(c03.security, [{ bearer: [] }, { apiKey: [] }]);
  for (const req of c03.security) {
    for (const name of Object.keys(req)) t.ok(c03.securitySchemes[name], `0.3 ${name} declared`);
  }
  const c10 = (await (
    await fetch(`${urls.signals}/.well-known/agent-card.json`, {
      headers: { 'A2A-Version': '1.0' },
    })
  ).json()) as any;
  // An empty scope list is `{}` in the 1.0 JSON form.
  t.same(c10.securityRequirements, [{ schemes: { bearer: {} } }, { schemes: { apiKey: {} } }]);
  for (const req of c10.securityRequirements) {
    for (const name of Object.keys(req.schemes)) t.ok(c10.securitySchemes[name], `1.0 ${name}`);
  }
});

t.test('A2A 0.3: tasks/get, tasks/cancel, push-notification configs', async (t) => {
  const { h, urls } = await startAgents(t, { notifications: new CheckedNotifications() });
  const key = h.keys['sales:demo-buyer']!;
  const rpc = rpcAt(`${urls.sales}/a2a`, { 'x-api-key': key });
  const context = { correlation_id: 'sync-1' };

  // An answer given at once can be polled under the id it came with.
  const sync = await rpc('message/send', send03('list_creatives', { context }));
  t.equal(sync.result.status.state, 'completed');
  const got = await rpc('tasks/get', { id: sync.result.id });
  t.equal(got.result.id, sync.result.id);
  t.equal(got.result.status.state, 'completed');
  t.match(got.result.artifacts[0].parts[0].data, {
    status: 'completed',
    task_id: sync.result.id,
    creatives: [],
    context,
  });
  // A refusal is a failed task, polled as such.
  const refused = await rpc('message/send', send03('get_media_buys', { media_buy_ids: 'x' }));
  t.equal(refused.result.status.state, 'failed');
  const gotRefused = await rpc('tasks/get', { id: refused.result.id });
  t.equal(gotRefused.result.status.state, 'failed');
  t.match(gotRefused.result.artifacts[0].parts[0].data, { errors: [{ code: 'VALIDATION_ERROR' }] });
  // Without credentials: a public answer is pollable without credentials; nobody else's.
  const anonRpc = rpcAt(`${urls.sales}/a2a`, {});
  const anon = await anonRpc('message/send', send03('list_authorized_properties', {}));
  t.equal((await anonRpc('tasks/get', { id: anon.result.id })).result.status.state, 'completed');
  t.equal((await anonRpc('tasks/get', { id: sync.result.id })).error.code, -32001);
  // Dry runs keep nothing, not even the task.
  const dry = await rpc('message/send', send03('list_creatives', {}), { 'x-dry-run': 'true' });
  t.equal((await rpc('tasks/get', { id: dry.result.id })).error.code, -32001);

  t.equal((await rpc('tasks/get', { id: 'task_nope' })).error.code, -32001, 'unknown id');
  t.equal((await rpc('tasks/get', { id: 'x'.repeat(400) })).error.code, -32001, 'overlong id');
  const other = await h.core.issueToken('sales', 'someone-else', { creatives: ['read'] });
  t.equal(
    (
      await rpc(
        'tasks/get',
        { id: sync.result.id },
        { 'x-api-key': '', authorization: `Bearer ${other}` },
      )
    ).error.code,
    -32001,
    "another principal's task is not found",
  );

  // An async task: push config CRUD, then cancel.
  const created = await rpc('message/send', send03('create_media_buy', buy(urls.creative)));
  const taskId = created.result.id as string;
  t.match(taskId, /^task_/);
  t.equal(created.result.status.state, 'submitted');
  t.same((await rpc('tasks/pushNotificationConfig/list', { id: taskId })).result, []);
  const set = await rpc('tasks/pushNotificationConfig/set', {
    taskId,
    pushNotificationConfig: {
      url: 'https://buyer.example/a2a-hook',
      token: 'tok-1',
      authentication: {
        schemes: ['Bearer'],
        credentials: 'secret-credential-0123456789abcdef0123456789',
      },
    },
  });
  t.equal(set.status, 200, JSON.stringify(set));
  t.equal(set.result.taskId, taskId);
  t.equal(set.result.pushNotificationConfig.url, 'https://buyer.example/a2a-hook');
  const configId = set.result.pushNotificationConfig.id as string;
  t.ok(configId, 'an id is assigned');
  t.notOk(
    JSON.stringify(set.result).includes('secret-credential'),
    'credentials are never read back',
  );
  const { rows } = await h.pool.query(`SELECT a2a_push FROM ${h.schema}.tasks WHERE task_id = $1`, [
    taskId,
  ]);
  t.equal(rows[0].a2a_push.version, '0.3');
  t.equal(rows[0].a2a_push.config.url, 'https://buyer.example/a2a-hook', 'stored for the sender');
  const one = await rpc('tasks/pushNotificationConfig/get', {
    id: taskId,
    pushNotificationConfigId: configId,
  });
  t.equal(one.result.pushNotificationConfig.id, configId);
  t.equal(
    (await rpc('tasks/pushNotificationConfig/get', { id: taskId })).result.pushNotificationConfig
      .id,
    configId,
  );
  t.equal((await rpc('tasks/pushNotificationConfig/list', { id: taskId })).result.length, 1);
  const wrongId = await rpc('tasks/pushNotificationConfig/get', {
    id: taskId,
    pushNotificationConfigId: 'nope',
  });
  t.equal(wrongId.error.code, -32602, 'unknown config id');
  const badUrl = await rpc('tasks/pushNotificationConfig/set', {
    taskId,
    pushNotificationConfig: { url: 'ftp://buyer.example/x' },
  });
  t.equal(badUrl.error.code, -32602, 'a config the sender refuses');
  t.match(badUrl.error.message, /INVALID_REQUEST/);
  const noConfig = await rpc('tasks/pushNotificationConfig/set', { taskId });
  t.ok(noConfig.error, 'set without a config is refused');
  const unknownTask = await rpc('tasks/pushNotificationConfig/set', {
    taskId: 'task_nope',
    pushNotificationConfig: { url: 'https://buyer.example/a2a-hook' },
  });
  t.equal(unknownTask.error.code, -32001);
  t.equal((await rpc('tasks/pushNotificationConfig/list', { id: 'task_nope' })).error.code, -32001);
  const del = await rpc('tasks/pushNotificationConfig/delete', {
    id: taskId,
    pushNotificationConfigId: configId,
  });
  t.equal(del.result, null);
  t.same((await rpc('tasks/pushNotificationConfig/list', { id: taskId })).result, []);
  const delAgain = await rpc('tasks/pushNotificationConfig/delete', {
    id: taskId,
    pushNotificationConfigId: configId,
  });
  t.equal(delAgain.error.code, -32602, 'deleting a config that is gone');

  const canceled = await rpc('tasks/cancel', { id: taskId });
  t.equal(canceled.result.status.state, 'canceled', JSON.stringify(canceled));
  t.equal((await rpc('tasks/get', { id: taskId })).result.status.state, 'canceled');
  t.equal((await rpc('tasks/cancel', { id: taskId })).error.code, -32002, 'already canceled');
  t.equal(
    (await rpc('tasks/cancel', { id: sync.result.id })).error.code,
    -32002,
    'a finished answer',
  );
  t.equal((await rpc('tasks/cancel', { id: 'task_nope' })).error.code, -32001);
  const othersCancel = await rpc(
    'tasks/cancel',
    { id: sync.result.id },
    {
      'x-api-key': '',
      authorization: `Bearer ${other}`,
    },
  );
  t.equal(othersCancel.error.code, -32001, "another principal's task cannot be canceled");

  // Answers given at once are kept a day, then purged; async tasks stay.
  await h.pool.query(
    `UPDATE ${h.schema}.tasks SET updated_at = now() - interval '25 hours' WHERE task_id = ANY($1)`,
    [[sync.result.id, taskId]],
  );
  const purged = await purgeExpired(h.pool, h.schema, h.clock);
  t.equal(purged.answered, 1, 'the answered-at-once task is purged');
  t.equal((await rpc('tasks/get', { id: sync.result.id })).error.code, -32001);
  t.equal((await rpc('tasks/get', { id: taskId })).result.status.state, 'canceled', 'async kept');
});

t.test('A2A 1.0: GetTask, CancelTask, push-notification configs', async (t) => {
  const { h, urls } = await startAgents(t, { notifications: new CheckedNotifications() });
  const key = h.keys['sales:demo-buyer']!;
  const rpc = rpcAt(`${urls.sales}/a2a`, { authorization: `Bearer ${key}`, 'A2A-Version': '1.0' });

  const sync = await rpc('SendMessage', send10('list_creatives', {}));
  const syncTask = sync.result.task;
  t.equal(syncTask.status.state, 'TASK_STATE_COMPLETED');
  const got = await rpc('GetTask', { id: syncTask.id });
  t.equal(got.result.id, syncTask.id);
  t.equal(got.result.status.state, 'TASK_STATE_COMPLETED');
  t.equal((await rpc('GetTask', { id: 'task_nope' })).error.code, -32001);

  const created = await rpc('SendMessage', send10('create_media_buy', buy(urls.creative)));
  const taskId = created.result.task.id as string;
  const set = await rpc('CreateTaskPushNotificationConfig', {
    taskId,
    id: 'cfg-1',
    url: 'https://buyer.example/a2a-hook',
    token: 'tok',
  });
  t.equal(set.status, 200, JSON.stringify(set));
  t.equal(set.result.id, 'cfg-1');
  t.equal(set.result.url, 'https://buyer.example/a2a-hook');
  const { rows } = await h.pool.query(`SELECT a2a_push FROM ${h.schema}.tasks WHERE task_id = $1`, [
    taskId,
  ]);
  t.same(rows[0].a2a_push, {
    version: '1.0',
    config: { taskId, id: 'cfg-1', url: 'https://buyer.example/a2a-hook', token: 'tok' },
  });
  t.equal((await rpc('GetTaskPushNotificationConfig', { taskId, id: 'cfg-1' })).result.id, 'cfg-1');
  t.equal((await rpc('GetTaskPushNotificationConfig', { taskId, id: 'cfg-2' })).error.code, -32602);
  t.equal((await rpc('ListTaskPushNotificationConfigs', { taskId })).result.configs.length, 1);
  const bad = await rpc('CreateTaskPushNotificationConfig', { taskId, url: 'not a url' });
  t.equal(bad.error.code, -32602);
  t.equal((await rpc('DeleteTaskPushNotificationConfig', { taskId, id: 'cfg-1' })).status, 200);
  t.same((await rpc('ListTaskPushNotificationConfigs', { taskId })).result.configs ?? [], []);

  const canceled = await rpc('CancelTask', { id: taskId });
  t.equal(canceled.result.status.state, 'TASK_STATE_CANCELED', JSON.stringify(canceled));
  t.equal((await rpc('CancelTask', { id: taskId })).error.code, -32002);
  t.equal((await rpc('CancelTask', { id: 'task_nope' })).error.code, -32001);

  // Over MCP, the SDK's `tasks/get` tool name polls the same store.
  const mcp = await postJson(
    `${urls.sales}/mcp`,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'tasks/get', arguments: { task_id: syncTask.id, include_result: true } },
    },
    { accept: 'application/json', authorization: `Bearer ${key}` },
  );
  t.equal(mcp.status, 200);
  t.match((mcp.body as any).result.structuredContent, {
    task_id: syncTask.id,
    status: 'completed',
  });
});
