/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * A2A task methods of both versions over real HTTP: agent-card security requirements,
 * tasks/get for answers given at once and for async tasks, tasks/cancel, and the task
 * push-notification config set/get/list/delete, with their malformed variants (unknown
 * task ids, another principal's task, unknown config ids, configs the sender refuses).
 */
import { demoBuy } from '../e2e/demo-buy.js';
import t from 'tap';
import { parseA2aPushConfig } from '../../../sender/core/registration.js';
import { purgeExpired } from '../../../agents/service.js';
import { RecordingNotifications } from '../../../agents/runtime/recording-notifications.js';
import { buyer, START } from '../support/core.js';
import { ANSWERED, taskOf } from '../../../agents/transport/a2a-task-shape.js';
import { postJson, startAgents } from './support.js';

/** The recording notifications with the sender's own A2A registration check. */
class CheckedNotifications extends RecordingNotifications {
  validateRegistration(input: { a2aConfig?: { version: '0.3' | '1.0'; config: unknown } }) {
    if (input.a2aConfig) parseA2aPushConfig(input.a2aConfig.config);
  }
}

const buy = (creative: string) => demoBuy('a2a-tasks', START + 86400_000, { _creative: creative });

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
  t.match(got.result.artifacts[0].parts[0].data, { status: 'completed', creatives: [], context });
  t.same(got.result.artifacts, sync.result.artifacts, 'polled: the answer as it was sent');
  // A refusal: the call completed, its AdCP status is failed (two lifecycles), polled as such.
  const refused = await rpc('message/send', send03('get_media_buys', { media_buy_ids: 'x' }));
  t.equal(refused.result.status.state, 'completed');
  t.match(refused.result.artifacts[0].parts[0].data, {
    status: 'failed',
    errors: [{ code: 'VALIDATION_ERROR' }],
  });
  const gotRefused = await rpc('tasks/get', { id: refused.result.id });
  t.equal(gotRefused.result.status.state, 'completed');
  t.match(gotRefused.result.artifacts[0].parts[0].data, {
    status: 'failed',
    errors: [{ code: 'VALIDATION_ERROR' }],
  });
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
  // The call's task completed; the AdCP work is the task named by adcp_task_id (= task_id).
  const created = await rpc('message/send', send03('create_media_buy', buy(urls.creative)));
  const taskId = created.result.artifacts[0].metadata.adcp_task_id as string;
  t.match(taskId, /^task_/);
  t.not(taskId, created.result.id);
  t.equal(created.result.status.state, 'completed');
  t.match(created.result.artifacts[0].parts[0].data, { status: 'submitted', task_id: taskId });
  t.equal(created.result.contextId, taskId, 'one context for the call and its work');
  const call = await rpc('tasks/get', { id: created.result.id });
  t.equal(call.result.status.state, 'completed', 'the call is pollable too');
  t.equal(call.result.artifacts[0].metadata.adcp_task_id, taskId);
  t.equal((await rpc('tasks/get', { id: taskId })).result.status.state, 'submitted');
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
  t.equal(created.result.task.status.state, 'TASK_STATE_COMPLETED');
  const taskId = created.result.task.artifacts[0].metadata.adcp_task_id as string;
  t.match(taskId, /^task_/);
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

t.test(
  'AdCP tasks/get over MCP and A2A: every id handed out; unknown and malformed ids',
  async (t) => {
    const { h, urls } = await startAgents(t, { notifications: new CheckedNotifications() });
    const key = h.keys['sales:demo-buyer']!;
    const rpc = rpcAt(`${urls.sales}/a2a`, { 'x-api-key': key });
    let n = 0;
    /** The AdCP `tasks/get` tool over MCP: the tool result's structured body and flags. */
    const mcpGet = async (args: unknown) => {
      const r = await postJson(
        `${urls.sales}/mcp`,
        {
          jsonrpc: '2.0',
          id: ++n,
          method: 'tools/call',
          params: { name: 'tasks/get', arguments: args },
        },
        { accept: 'application/json', 'x-api-key': key },
      );
      t.equal(r.status, 200, 'the JSON-RPC exchange itself worked');
      return (r.body as any).result;
    };
    /** The AdCP `tasks/get` skill over A2A 0.3 (how the reference SDK polls): the body. */
    const a2aGet = async (args: unknown) => {
      const r = await rpc('message/send', send03('tasks/get', args));
      t.equal(r.result.status.state, 'completed', 'the poll call itself completed');
      return r.result.artifacts[0].parts[0].data;
    };

    // Ids handed out: an A2A answer given at once (a sync task), its refusal, an async task.
    const sync = await rpc('message/send', send03('list_creatives', { context: { c: 1 } }));
    const refused = await rpc('message/send', send03('get_media_buys', { media_buy_ids: 'x' }));
    const created = await rpc('message/send', send03('create_media_buy', buy(urls.creative)));
    const asyncId = created.result.artifacts[0].metadata.adcp_task_id as string;
    for (const [get, via] of [
      [mcpGet, 'MCP'],
      [a2aGet, 'A2A skill'],
    ] as const) {
      const s = await get({ task_id: sync.result.id, include_result: true });
      const body = via === 'MCP' ? s.structuredContent : s;
      t.match(
        body,
        {
          task_id: sync.result.id,
          task_type: 'list_creatives',
          status: 'completed',
          result: { creatives: [], context: { c: 1 } },
        },
        `${via}: a task that finished synchronously`,
      );
      const f = await get({ task_id: refused.result.id, include_result: true });
      t.match(
        via === 'MCP' ? f.structuredContent : f,
        {
          task_id: refused.result.id,
          status: 'failed',
          result: { errors: [{ code: 'VALIDATION_ERROR' }] },
        },
        `${via}: a refusal is polled as failed`,
      );
      // The call that handed out the async task polls as that work.
      const viaCall = await get({ task_id: created.result.id });
      t.match(
        via === 'MCP' ? viaCall.structuredContent : viaCall,
        { task_id: asyncId, task_type: 'create_media_buy', status: 'submitted' },
        `${via}: the call of an async answer polls as its work`,
      );
      const a = await get({ task_id: asyncId });
      t.match(
        via === 'MCP' ? a.structuredContent : a,
        {
          task_id: asyncId,
          task_type: 'create_media_buy',
          status: 'submitted',
        },
        `${via}: an async task`,
      );

      // Unknown: the published generic not-found code, field task_id, context echoed.
      const context = { correlation_id: `poll-${via}` };
      const unknown = await get({ task_id: 'task_nope', context });
      const ub = via === 'MCP' ? unknown.structuredContent : unknown;
      if (via === 'MCP') {
        t.equal(unknown.isError, true);
        t.equal(unknown._meta.http_status, 404);
      }
      t.match(
        ub,
        {
          status: 'failed',
          errors: [{ code: 'REFERENCE_NOT_FOUND', field: 'task_id' }],
          context,
        },
        `${via}: unknown id`,
      );
      t.notOk(JSON.stringify(ub).includes('TASK_NOT_FOUND'));
      // Another principal's task reads exactly like an unknown one.
      const other = await h.core.issueToken('sales', 'someone-else', { reports: ['read'] });
      const foreign = await postJson(
        `${urls.sales}/mcp`,
        {
          jsonrpc: '2.0',
          id: ++n,
          method: 'tools/call',
          params: { name: 'tasks/get', arguments: { task_id: asyncId, context } },
        },
        { accept: 'application/json', authorization: `Bearer ${other}` },
      );
      t.same(
        (foreign.body as any).result.structuredContent.errors.map((e: any) => [e.code, e.field]),
        [['REFERENCE_NOT_FOUND', 'task_id']],
        "another principal's task is not found",
      );

      // Malformed ids: every one a validation error naming task_id, context echoed.
      for (const bad of [
        {},
        { task_id: '' },
        { task_id: 'x'.repeat(300) },
        { task_id: 42 },
        { task_id: { id: 'x' } },
        { task_id: asyncId, include_result: 'yes' },
      ]) {
        const r = await get({ ...bad, context });
        const b = via === 'MCP' ? r.structuredContent : r;
        t.match(
          b,
          { status: 'failed', errors: [{ code: 'VALIDATION_ERROR' }], context },
          `${via}: ${JSON.stringify(bad).slice(0, 60)}`,
        );
        t.ok(
          b.errors.some((e: any) => /task_id|include_result/.test(String(e.field))),
          `${via}: the field is named (${JSON.stringify(b.errors[0].field)})`,
        );
      }
    }
    // A2A JSON-RPC tasks/get with malformed ids: A2A errors, never a 500.
    for (const params of [{}, { id: 42 }, { id: '' }, { id: 'x'.repeat(400) }]) {
      const r = await rpc('tasks/get', params);
      t.equal(r.status, 200, JSON.stringify(params));
      t.ok(
        r.error && [-32001, -32602].includes(r.error.code),
        `tasks/get ${JSON.stringify(params).slice(0, 40)}: ${r.error?.code}`,
      );
    }
  },
);

t.test(
  'A2A: a 3.0 buy answer whose top-level status is the buy status reads as a completed task',
  async (t) => {
    const { h, urls } = await startAgents(t, { settings: { approval: 'never' } as never });
    const key = h.keys['sales:demo-buyer']!;
    const rpc = rpcAt(`${urls.sales}/a2a`, { 'x-api-key': key });
    const created = await rpc(
      'message/send',
      send03('create_media_buy', { ...buy(urls.creative), svc_major_version: 3 }),
    );
    const createData = created.result.artifacts[0].parts.at(-1).data;
    t.equal(createData.status, 'pending_creatives', JSON.stringify(created));
    // The 3.1 form (top-level status is the task's) keeps the data part first.
    const v31 = await rpc(
      'message/send',
      send03('update_media_buy', {
        media_buy_id: createData.media_buy_id,
        paused: true,
        idempotency_key: 'a2a-v31-update-0001',
      }),
    );
    t.equal(v31.result.artifacts[0].parts.length, 1);
    t.match(v31.result.artifacts[0].parts[0], { kind: 'data', data: { status: 'completed' } });

    const cancel = {
      media_buy_id: createData.media_buy_id,
      canceled: true,
      idempotency_key: 'a2a-v30-cancel-0001',
      svc_major_version: 3,
      context: { correlation_id: 'v30' },
    };
    const shape = (task: any, what: string) => {
      t.equal(task.status.state, 'completed', `${what}: the task completed`);
      const parts = task.artifacts[0].parts;
      // A client reads the first part's data status as the task's (adcp-client#899): a text
      // part naming the task status leads; the body (last data part) keeps the 3.0 form.
      t.same(parts[0], { kind: 'text', text: 'update_media_buy completed' }, what);
      t.equal(parts.length, 2, what);
      t.match(parts[1].data, {
        status: 'canceled',
        media_buy_status: 'canceled',
        context: { correlation_id: 'v30' },
      });
      t.notOk('$task_status' in parts[1].data, `${what}: nothing internal on the wire`);
    };
    const canceled = await rpc('message/send', send03('update_media_buy', cancel));
    shape(canceled.result, 'answer');
    shape((await rpc('tasks/get', { id: canceled.result.id })).result, 'tasks/get');
    const replay = await rpc('message/send', send03('update_media_buy', cancel));
    shape(replay.result, 'replay');
    t.equal(replay.result.artifacts[0].parts[1].data.replayed, true);

    // Over MCP the same replay is the published body alone.
    const mcp = await h.ok('sales', 'update_media_buy', cancel, buyer(h));
    t.equal(mcp.status, 'canceled');
    t.notOk('$task_status' in mcp);
  },
);

t.test('taskOf: only a body with another top-level status is led by a text part', async (t) => {
  const of = (body: Record<string, unknown>) =>
    taskOf({
      taskId: 't',
      contextId: 'c',
      skill: 's',
      state: ANSWERED,
      body,
      taskStatus: 'failed',
    }).artifacts[0]!.parts.map((p) => p.content?.$case);
  t.same(of({ errors: [{ code: 'X' }] }), ['data'], 'no top-level status: nothing to mistake');
  t.same(of({ status: 'failed' }), ['data'], 'the task status itself');
  t.same(of({ status: 'canceled' }), ['text', 'data'], 'another status');
});
