/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * The adcp brand switches every branded name on the wire (capabilities task, OAuth
 * scopes, server names); malformed protocol input gets a specific protocol error, never
 * a 500 or a hang.
 */
import t from 'tap';
import { AgentClient } from '../../../agents/client/agent-client.js';
import { brandProfile } from '../../../shared/brand.js';
import { postJson, startAgents } from './support.js';

t.test('adcp brand on the wire', async (t) => {
  const { urls } = await startAgents(t, { profile: brandProfile('adcp'), oauth: true });
  const c = new AgentClient({ agentUrl: urls.sales });
  t.teardown(() => c.close());
  const tools = await c.listTasks();
  t.ok(tools.includes('get_adcp_capabilities'));
  t.notOk(tools.includes('get_svc_capabilities'));
  const caps = await c.call('get_adcp_capabilities', {});
  t.equal(caps.ok, true);
  const a2a = new AgentClient({ agentUrl: urls.sales, transport: 'a2a' });
  t.ok((await a2a.listTasks()).includes('get_adcp_capabilities'));
  const meta = (await (
    await fetch(`${urls.sales}/oauth/.well-known/openid-configuration`)
  ).json()) as any;
  t.ok(meta.scopes_supported.includes('adcp:media_buys'));
  t.notOk(meta.scopes_supported.includes('svc:media_buys'));
});

t.test('malformed protocol input', async (t) => {
  const { h, urls } = await startAgents(t);
  const mcpHeaders = { accept: 'application/json, text/event-stream' };
  const notJson = await postJson(`${urls.sales}/mcp`, '{"jsonrpc":', mcpHeaders);
  t.equal(notJson.status, 400);
  t.equal(notJson.body.error.code, -32700);
  const noMethod = await postJson(`${urls.sales}/mcp`, { jsonrpc: '2.0', id: 1 }, mcpHeaders);
  t.equal(noMethod.status, 400);
  const badArgs = await postJson(
    `${urls.sales}/mcp`,
    {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'get_products', arguments: 'brief' },
    },
    mcpHeaders,
  );
  t.not(badArgs.status, 500);
  t.ok(badArgs.body.error || badArgs.body.result?.isError, 'arguments that are not an object');

  const badAuth = new AgentClient({ agentUrl: urls.sales, token: 'x y z' });
  t.teardown(() => badAuth.close());
  const badAuthRes = await badAuth.call('list_authorized_properties', {});
  t.equal(badAuthRes.httpStatus, 401);
  t.match(badAuthRes.body, { errors: [{ code: 'AUTH_INVALID' }] });

  // An unknown method: credentials first (an anonymous probe learns nothing), then -32601.
  const teleport = { jsonrpc: '2.0', id: 3, method: 'tasks/teleport', params: {} };
  const anonUnknown = await postJson(`${urls.sales}/a2a`, teleport);
  t.equal(anonUnknown.status, 401);
  t.match(anonUnknown.body.error.data, { errors: [{ code: 'AUTH_REQUIRED' }] });
  const unknownMethod = await postJson(`${urls.sales}/a2a`, teleport, {
    'x-api-key': h.keys['sales:demo-buyer']!,
  });
  t.equal(unknownMethod.body.error.code, -32601);
  const noParams = await postJson(`${urls.sales}/a2a`, {
    jsonrpc: '2.0',
    id: 4,
    method: 'message/send',
  });
  t.ok(noParams.body.error, 'message/send without params');
  // No method at all is the SDK's JSON-RPC refusal (not an auth one), credentials or not.
  const noMethod10 = await postJson(`${urls.sales}/a2a`, { jsonrpc: '2.0', id: 5 });
  t.equal(noMethod10.status, 200, JSON.stringify(noMethod10.body));
  t.equal(noMethod10.body.error.message, 'Invalid JSON-RPC Request.');
  const arrayBody = await postJson(`${urls.sales}/a2a`, [1, 2]);
  t.equal(arrayBody.body.error.code, -32600);
  const wrongType = await fetch(`${urls.sales}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: 'hello',
  });
  t.equal(wrongType.status, 415);
  const big = await postJson(`${urls.sales}/a2a`, `{"x":"${'a'.repeat(1024 * 1024 + 10)}"}`);
  t.equal(big.status, 413);
  const get = await fetch(`${urls.sales}/a2a`);
  t.equal(get.status, 405);
  const stream = await postJson(`${urls.sales}/a2a`, {
    jsonrpc: '2.0',
    id: 5,
    method: 'message/stream',
    params: {
      message: {
        kind: 'message',
        messageId: 'm',
        role: 'user',
        parts: [{ kind: 'data', data: { skill: 'list_authorized_properties', parameters: {} } }],
      },
    },
  });
  t.ok(stream.body.error, 'streaming is refused with a JSON-RPC error');
  const badParams = await postJson(`${urls.sales}/a2a`, {
    jsonrpc: '2.0',
    id: 6,
    method: 'SendMessage',
    params: {
      message: { messageId: 'm', role: 'ROLE_USER', parts: [{ data: { skill: 42 } }] },
    },
  });
  t.equal(badParams.status, 200);
  t.match(JSON.stringify(badParams.body), /VALIDATION_ERROR/);
});
