/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * Transport-level behaviour a buyer of the published protocol relies on, over real HTTP:
 * MCP with `Accept: application/json`, auth refusals as HTTP 401/403 with RFC 6750
 * challenges (and RFC 9728 `resource_metadata` when OAuth runs) on MCP and A2A, API keys
 * as bearer tokens, and the OAuth discovery documents.
 */
import t from 'tap';
import { issueToken } from '../../../agents/auth/authenticate.js';
import { bindClient } from '../../../agents/oauth/bindings.js';
import { a2aSend, mcpCall, postJson, startAgents } from './support.js';

const JSON_ONLY = { accept: 'application/json' };

t.test('MCP answers Accept: application/json; auth refusals are HTTP 401/403', async (t) => {
  const { h, urls } = await startAgents(t);
  const mcp = `${urls.sales}/mcp`;
  const key = h.keys['sales:demo-buyer']!;
  const context = { correlation_id: 'probe-1' };

  // The SDK's probes accept JSON only; no initialize handshake is needed (stateless).
  const pub = await postJson(mcp, mcpCall('list_authorized_properties', { context }), JSON_ONLY);
  t.equal(pub.status, 200, JSON.stringify(pub.body));
  t.match(pub.headers.get('content-type'), /application\/json/);
  t.same(pub.body.result.structuredContent.context, context, 'context echoed');
  for (const accept of ['*/*', 'application/*']) {
    t.equal(
      (await postJson(mcp, mcpCall('list_authorized_properties', {}), { accept })).status,
      200,
    );
  }
  const noAccept = await fetch(mcp, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(mcpCall('list_authorized_properties', {})),
  });
  t.equal(noAccept.status, 200, 'no Accept header: served');
  const html = await postJson(mcp, mcpCall('list_authorized_properties', {}), {
    accept: 'text/html',
  });
  t.equal(html.status, 406, 'a client that accepts no JSON still gets 406');

  // No credentials on a protected task: 401, challenge without an error code.
  const unauth = await postJson(mcp, mcpCall('list_creatives', { context }, 7), JSON_ONLY);
  t.equal(unauth.status, 401);
  t.equal(
    unauth.headers.get('www-authenticate'),
    `Bearer realm="${mcp}"`,
    'no resource_metadata without OAuth',
  );
  t.equal(unauth.body.id, 7);
  t.equal(unauth.body.error.code, -32010);
  t.match(unauth.body.error.data, {
    status: 'failed',
    errors: [{ code: 'AUTH_REQUIRED', recovery: 'correctable' }],
    svc_error: { code: 'AUTH_REQUIRED' },
    context,
  });

  // A key that is not ours, as X-API-Key and as a bearer: 401 invalid_token.
  for (const headers of [
    { 'x-api-key': 'invalid-0123456789abcdef' },
    { authorization: 'Bearer invalid-0123456789abcdef' },
  ] as Array<Record<string, string>>) {
    const bad = await postJson(mcp, mcpCall('list_creatives', {}), { ...JSON_ONLY, ...headers });
    t.equal(bad.status, 401, JSON.stringify(headers));
    t.match(
      bad.headers.get('www-authenticate'),
      /^Bearer realm="[^"]+", error="invalid_token", error_description="[^"]+"$/,
    );
    t.match(bad.body.error.data.errors[0], { code: 'AUTH_INVALID', recovery: 'terminal' });
  }
  // Bad credentials are refused even on a public task.
  const badOnPublic = await postJson(mcp, mcpCall('list_authorized_properties', {}), {
    ...JSON_ONLY,
    authorization: 'Bearer nope-nope',
  });
  t.equal(badOnPublic.status, 401);

  // A JWT-shaped bearer with a bad signature, an expired token, another agent's token,
  // a wrong scheme, a repeated header.
  const secret = new TextEncoder().encode('x'.repeat(32));
  const forged = await issueToken({ secret, agent: 'sales', sub: 'demo-buyer' });
  const expired = await h.core.issueToken('sales', 'demo-buyer', { creatives: ['read'] }, -7200);
  const creativeToken = await h.core.issueToken('creative', 'demo-buyer', { creatives: ['read'] });
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['forged', { authorization: `Bearer ${forged}` }, /signature/],
    ['expired', { authorization: `Bearer ${expired}` }, /expired/],
    ['other agent', { authorization: `Bearer ${creativeToken}` }, /another agent|signature/],
    ['basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }, /Bearer/],
  ];
  for (const [name, headers, message] of cases) {
    const r = await postJson(mcp, mcpCall('list_creatives', {}), { ...JSON_ONLY, ...headers });
    t.equal(r.status, 401, name);
    t.match(r.headers.get('www-authenticate'), /error="invalid_token"/, name);
    t.match(r.body.error.data.errors[0].message, message, name);
  }
  const twice = await fetch(mcp, {
    method: 'POST',
    headers: [
      ['content-type', 'application/json'],
      ['accept', 'application/json'],
      ['x-api-key', key],
      ['x-api-key', key],
    ],
    body: JSON.stringify(mcpCall('list_creatives', {})),
  });
  t.equal(twice.status, 401, 'a credential header sent twice is refused');

  // The demo key works as X-API-Key and as Authorization: Bearer.
  for (const headers of [{ 'x-api-key': key }, { authorization: `Bearer ${key}` }] as Array<
    Record<string, string>
  >) {
    const ok = await postJson(mcp, mcpCall('list_creatives', { context }), {
      ...JSON_ONLY,
      ...headers,
    });
    t.equal(ok.status, 200, JSON.stringify(Object.keys(headers)));
    t.notOk(ok.body.result.isError, 'accepted');
    t.same(ok.body.result.structuredContent.context, context);
  }

  // Authenticated without the right: 403 insufficient_scope.
  const viewer = await h.core.issueToken('sales', 'demo-buyer', { products: ['read'] });
  const forbidden = await postJson(mcp, mcpCall('list_creatives', {}), {
    ...JSON_ONLY,
    authorization: `Bearer ${viewer}`,
  });
  t.equal(forbidden.status, 403);
  t.match(forbidden.headers.get('www-authenticate'), /error="insufficient_scope"/);
  t.equal(forbidden.body.error.code, -32011);
  t.match(forbidden.body.error.data.errors[0], { code: 'INSUFFICIENT_PERMISSIONS' });

  // A batch with one refused call is refused whole; tools/list stays public.
  const batch = await postJson(
    mcp,
    [mcpCall('list_authorized_properties', {}, 1), mcpCall('list_creatives', {}, 2)],
    JSON_ONLY,
  );
  t.equal(batch.status, 401);
  t.equal(batch.body.id, 2, 'the refused call is named');
  const list = await postJson(mcp, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, JSON_ONLY);
  t.equal(list.status, 200);
  t.ok(list.body.result.tools.length > 3);

  // Unknown task: without credentials it is a 401 like any protected task (an anonymous
  // probe learns nothing); with them, the call itself refuses it (a tool result).
  const unknownAnon = await postJson(mcp, mcpCall('no_such_task', { context }), JSON_ONLY);
  t.equal(unknownAnon.status, 401);
  t.match(unknownAnon.body.error.data, { errors: [{ code: 'AUTH_REQUIRED' }], context });
  const unknown = await postJson(mcp, mcpCall('no_such_task', { context }), {
    ...JSON_ONLY,
    'x-api-key': key,
  });
  t.equal(unknown.status, 200);
  t.match(unknown.body.result.structuredContent, {
    errors: [{ code: 'UNSUPPORTED_FEATURE' }],
    context,
  });
  t.equal(unknown.body.result._meta.http_status, 404);
  const noName = await postJson(
    mcp,
    { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { arguments: {} } },
    JSON_ONLY,
  );
  t.not(noName.status, 401, 'a call without a tool name is a protocol error, not an auth one');
  t.not(noName.status, 500);

  // Malformed bodies: JSON-RPC errors with the right HTTP status.
  const notJson = await postJson(mcp, '{"jsonrpc":', JSON_ONLY);
  t.equal(notJson.status, 400);
  t.equal(notJson.body.error.code, -32700);
  const wrongType = await fetch(mcp, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', ...JSON_ONLY },
    body: 'x',
  });
  t.equal(wrongType.status, 415);
});

t.test('A2A auth refusals are HTTP 401/403 with a challenge, both versions', async (t) => {
  const { h, urls } = await startAgents(t);
  const a2a = `${urls.sales}/a2a`;
  const key = h.keys['sales:demo-buyer']!;
  const context = { correlation_id: 'a2a-1' };

  const unauth = await postJson(a2a, a2aSend('list_creatives', { context }, 'x1'));
  t.equal(unauth.status, 401);
  t.equal(unauth.headers.get('www-authenticate'), `Bearer realm="${a2a}"`);
  t.equal(unauth.body.id, 'x1');
  t.match(unauth.body.error.data, { errors: [{ code: 'AUTH_REQUIRED' }], context });

  const v10 = await postJson(
    a2a,
    {
      jsonrpc: '2.0',
      id: 2,
      method: 'SendMessage',
      params: {
        message: {
          messageId: 'm',
          role: 'ROLE_USER',
          parts: [{ data: { skill: 'list_creatives', input: {} } }],
        },
      },
    },
    { authorization: 'Bearer invalid-key', 'A2A-Version': '1.0' },
  );
  t.equal(v10.status, 401);
  t.match(v10.headers.get('www-authenticate'), /error="invalid_token"/);

  // Without credentials only A2A's methods pass; any other JSON-RPC method (here an MCP
  // tools/call, as the SDK runner's auth probes send to the URL they are given) asks for
  // credentials first, so an anonymous probe learns nothing about the endpoint.
  const mcpShaped = await postJson(a2a, mcpCall('list_creatives', { context }, 7));
  t.equal(mcpShaped.status, 401, JSON.stringify(mcpShaped.body));
  t.equal(mcpShaped.headers.get('www-authenticate'), `Bearer realm="${a2a}"`);
  t.equal(mcpShaped.body.id, 7);
  t.match(mcpShaped.body.error.data, { errors: [{ code: 'AUTH_REQUIRED' }] });
  const badKeyMcp = await postJson(a2a, mcpCall('list_creatives', {}), {
    authorization: 'Bearer invalid-0123',
  });
  t.equal(badKeyMcp.status, 401);
  t.match(badKeyMcp.headers.get('www-authenticate'), /error="invalid_token"/);
  // With good credentials the method is the SDK's to answer: A2A has no tools/call.
  const keyedMcp = await postJson(a2a, mcpCall('list_creatives', {}, 8), {
    authorization: `Bearer ${key}`,
  });
  t.equal(keyedMcp.status, 200);
  t.equal(keyedMcp.body.error.code, -32601, 'method not found');
  // An anonymous A2A task method still reaches the task store (tasks of no principal).
  const anonGet = await postJson(a2a, {
    jsonrpc: '2.0',
    id: 9,
    method: 'tasks/get',
    params: { id: 'task_none' },
  });
  t.equal(anonGet.status, 200);
  t.equal(anonGet.body.error.code, -32001, 'task not found');

  // Any method with rejected credentials: 401 (tasks/get too).
  const get = await postJson(
    a2a,
    { jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { id: 'task_x' } },
    { 'x-api-key': 'nope' },
  );
  t.equal(get.status, 401);

  const viewer = await h.core.issueToken('sales', 'demo-buyer', { products: ['read'] });
  const forbidden = await postJson(a2a, a2aSend('list_creatives', {}), {
    authorization: `Bearer ${viewer}`,
  });
  t.equal(forbidden.status, 403);
  t.match(forbidden.headers.get('www-authenticate'), /insufficient_scope/);

  // Bearer API key over A2A; a public skill needs nothing.
  const ok = await postJson(a2a, a2aSend('list_creatives', { context }), {
    authorization: `Bearer ${key}`,
  });
  t.equal(ok.status, 200);
  t.equal(ok.body.result.status.state, 'completed');
  t.same(ok.body.result.artifacts[0].parts[0].data.context, context);
  const pub = await postJson(a2a, a2aSend('list_authorized_properties', {}));
  t.equal(pub.status, 200);

  // A refusal that is not about auth is an answered call (A2A completed) carrying the
  // envelope, AdCP status failed.
  const refused = await postJson(
    a2a,
    a2aSend('list_authorized_properties', { svc_major_version: 99, context }),
  );
  t.equal(refused.status, 200);
  t.equal(refused.body.result.status.state, 'completed');
  t.match(refused.body.result.artifacts[0].parts[0].data, {
    status: 'failed',
    errors: [{ code: 'VERSION_UNSUPPORTED', details: { supported_majors: [3] } }],
    svc_error: { code: 'VERSION_UNSUPPORTED' },
    context,
  });
});

t.test('OAuth discovery: RFC 9728 resource metadata and RFC 8414 server metadata', async (t) => {
  const { urls, oauth, h } = await startAgents(t, { oauth: true });
  const origin = urls.sales;
  const get = async (path: string) => {
    const r = await fetch(`${origin}${path}`, { headers: JSON_ONLY });
    return { status: r.status, body: (await r.json()) as any };
  };
  for (const [path, resource] of [
    ['/.well-known/oauth-protected-resource', origin],
    ['/.well-known/oauth-protected-resource/mcp', `${origin}/mcp`],
    ['/.well-known/oauth-protected-resource/a2a', `${origin}/a2a`],
  ] as const) {
    const prm = await get(path);
    t.equal(prm.status, 200, path);
    t.equal(prm.body.resource, resource, `${path}: resource is the endpoint`);
    t.same(prm.body.authorization_servers, [`${origin}/oauth`]);
    t.same(prm.body.bearer_methods_supported, ['header']);
  }
  t.equal((await get('/.well-known/oauth-protected-resource/nope')).status, 404);
  for (const path of [
    '/oauth/.well-known/oauth-authorization-server',
    '/.well-known/oauth-authorization-server/oauth',
    '/.well-known/oauth-authorization-server',
    '/oauth/.well-known/openid-configuration',
  ]) {
    const as = await get(path);
    t.equal(as.status, 200, path);
    t.equal(as.body.issuer, `${origin}/oauth`, path);
    t.equal(as.body.token_endpoint, `${origin}/oauth/token`, path);
    t.ok(as.body.grant_types_supported.includes('client_credentials'), path);
  }

  // With OAuth mounted, challenges name the endpoint's metadata document.
  const mcp = await postJson(`${origin}/mcp`, mcpCall('list_creatives', {}), JSON_ONLY);
  t.equal(mcp.status, 401);
  t.equal(
    mcp.headers.get('www-authenticate'),
    `Bearer realm="${origin}/mcp", resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
  );
  const a2a = await postJson(`${origin}/a2a`, a2aSend('list_creatives', {}));
  t.match(
    a2a.headers.get('www-authenticate'),
    `resource_metadata="${origin}/.well-known/oauth-protected-resource/a2a"`,
  );

  // A client_credentials token bound to the /mcp resource is accepted there.
  const reg = await postJson(
    `${origin}/oauth/register`,
    {
      client_name: 'bound',
      grant_types: ['client_credentials'],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'svc:creatives',
    },
    { authorization: `Bearer ${oauth!.initialAccessToken}` },
  );
  t.equal(reg.status, 201, JSON.stringify(reg.body));
  // The seller's operator binds the client to the principal it acts as (issue 21).
  await bindClient(
    h.pool,
    h.schema,
    { agent: 'sales', clientId: reg.body.client_id, principalId: 'demo-buyer' },
    { actor: 'test', via: 'cli' },
  );
  const basic = Buffer.from(`${reg.body.client_id}:${reg.body.client_secret}`).toString('base64');
  const tokenFor = async (resource: string) =>
    fetch(`${origin}/oauth/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        scope: 'svc:creatives',
        resource,
      }).toString(),
    });
  const bound = await tokenFor(`${origin}/mcp`);
  t.equal(bound.status, 200);
  const { access_token } = (await bound.json()) as { access_token: string };
  const call = await postJson(`${origin}/mcp`, mcpCall('list_creatives', {}), {
    ...JSON_ONLY,
    authorization: `Bearer ${access_token}`,
  });
  t.equal(call.status, 200, JSON.stringify(call.body));
  const foreign = await tokenFor('https://elsewhere.example/mcp');
  t.equal(foreign.status, 400, 'a resource of another origin is refused');
  const atCreative = await postJson(`${urls.creative}/mcp`, mcpCall('list_creative_formats', {}), {
    ...JSON_ONLY,
    authorization: `Bearer ${access_token}`,
  });
  t.equal(atCreative.status, 401, 'a token bound to the sales /mcp fails at the creative agent');
});
