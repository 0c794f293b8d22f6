/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * The protocol surface over the wire with the official client SDKs: MCP tools and errors,
 * A2A 0.3 and 1.0 (raw JSON-RPC shapes and the SDK clients), agent cards, polling, the
 * registry endpoint, dry-run and malformed headers, unknown routes.
 */
import t from 'tap';
import { AgentClient } from '../../../agents/client/agent-client.js';
import { START } from '../support/core.js';
import { postJson, startAgents } from './support.js';

const HOUR = 3600_000;

function buyParams(creative: string, extra: Record<string, unknown> = {}) {
  return {
    buyer_ref: 'wire-1',
    brand_manifest: { url: 'https://acme.example' },
    packages: [
      {
        buyer_ref: 'pkg-ctv',
        product_id: 'ctv_premium_sports',
        pricing_option_id: 'ctv_sports_cpm',
        budget: 24000,
      },
    ],
    start_time: { type: 'asap' },
    end_time: new Date(START + 24 * HOUR).toISOString(),
    ...extra,
    _creative: creative,
  };
}

t.test('MCP: tools, public and authenticated calls, errors in the spec shapes', async (t) => {
  const { h, urls } = await startAgents(t);
  const buyerKey = h.keys['sales:demo-buyer']!;
  const anon = new AgentClient({ agentUrl: urls.sales });
  t.teardown(() => anon.close());
  const tools = await anon.listTasks();
  for (const name of [
    'get_products',
    'create_media_buy',
    'get_task_status',
    'get_svc_capabilities',
  ]) {
    t.ok(tools.includes(name), `tool ${name}`);
  }

  const partial = await anon.call('get_products', {
    brief: 'sports fans on CTV',
    brand_manifest: { url: 'https://acme.example' },
  });
  t.equal(partial.ok, true);
  const pp = partial.body.products as Array<Record<string, unknown>>;
  t.ok(pp.length > 0);

  const buyer = new AgentClient({ agentUrl: `${urls.sales}/mcp`, apiKey: buyerKey });
  t.teardown(() => buyer.close());
  const full = await buyer.call('get_products', {
    brief: 'sports fans on CTV',
    brand_manifest: { url: 'https://acme.example' },
  });
  t.ok((full.body.products as unknown[]).length > pp.length, 'full catalog with credentials');

  const unknown = await buyer.call('no_such_task', {});
  t.equal(unknown.ok, false);
  t.match(unknown.body, { errors: [{ code: 'UNSUPPORTED_FEATURE' }] });

  const required = await anon.call('create_media_buy', buyParams(urls.creative));
  t.match(required.body, { errors: [{ code: 'AUTH_REQUIRED' }] });

  const budget = await buyer.call('create_media_buy', {
    ...buyParams(urls.creative),
    packages: [
      {
        buyer_ref: 'p',
        product_id: 'ctv_premium_sports',
        pricing_option_id: 'ctv_sports_cpm',
        budget: 0,
      },
    ],
  });
  t.match(budget.body, { errors: [{ code: 'VALIDATION_ERROR', field: 'packages[0].budget' }] });

  const plainFormat = await buyer.call('sync_creatives', {
    creatives: [{ creative_id: 'c1', name: 'x', format_id: 'video_ctv_30s', assets: {} }],
  });
  t.match(plainFormat.body, { errors: [{ code: 'INVALID_FORMAT_ID' }] });

  const badKey = new AgentClient({ agentUrl: urls.sales, apiKey: 'nope-nope-nope' });
  t.teardown(() => badKey.close());
  const badKeyRes = await badKey.call('list_creative_formats', {});
  t.equal(badKeyRes.httpStatus, 401, 'a rejected key is an HTTP 401');
  t.match(badKeyRes.body, { errors: [{ code: 'AUTH_INVALID' }] });

  // Credentials of one agent are not valid at another.
  const crossed = new AgentClient({ agentUrl: urls.signals, apiKey: buyerKey });
  t.teardown(() => crossed.close());
  const crossedRes = await crossed.call('get_signals', { signal_spec: 'sports' });
  t.match(crossedRes.body, { errors: [{ code: 'AUTH_INVALID' }] }, 'signal agent errors[] shape');

  // Malformed X-Dry-Run is refused, naming the header.
  const badDry = await fetch(`${urls.sales}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'x-dry-run': 'maybe',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'list_authorized_properties', arguments: {} },
    }),
  });
  const badDryBody = (await badDry.json()) as {
    result: { isError: boolean; structuredContent: unknown };
  };
  t.equal(badDryBody.result.isError, true);
  t.match(badDryBody.result.structuredContent, {
    errors: [{ code: 'VALIDATION_ERROR', field: 'X-Dry-Run' }],
  });

  // Dry run: a buy is answered but nothing is kept.
  const dry = new AgentClient({ agentUrl: urls.sales, apiKey: buyerKey, dryRun: true });
  t.teardown(() => dry.close());
  const dryBuy = await dry.call('create_media_buy', buyParams(urls.creative));
  t.equal(dryBuy.ok, true);
  t.equal(dryBuy.body.dry_run, true);
  const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM ${h.schema}.media_buys`);
  t.equal(rows[0].n, 0, 'dry run stored no buy');

  // Async task polled with get_task_status.
  const created = await buyer.call('create_media_buy', buyParams(urls.creative));
  t.equal(created.status, 'submitted');
  t.match(created.taskId, /^task_/);
  const polled = await buyer.getTask(created.taskId!);
  t.equal(polled.ok, true);
  t.equal(polled.body.task_id, created.taskId);

  // GET on the stateless endpoint: 405.
  const get = await fetch(`${urls.sales}/mcp`, { headers: { accept: 'text/event-stream' } });
  t.equal(get.status, 405);
});

for (const version of ['0.3', '1.0'] as const) {
  t.test(`A2A ${version}: SDK client, skill call, polling, errors`, async (t) => {
    const { h, urls } = await startAgents(t);
    const buyerKey = h.keys['sales:demo-buyer']!;
    const client = new AgentClient({
      agentUrl: urls.sales,
      transport: 'a2a',
      a2aVersion: version,
      apiKey: buyerKey,
    });
    const skills = await client.listTasks();
    t.ok(skills.includes('create_media_buy'));
    const products = await client.call('get_products', {
      brief: 'news video',
      brand_manifest: { url: 'https://acme.example' },
    });
    t.equal(products.status, 'completed');
    t.ok((products.body.products as unknown[]).length > 0);

    const created = await client.call('create_media_buy', buyParams(urls.creative));
    t.equal(created.status, 'submitted');
    t.match(created.taskId, /^task_/);
    const polled = await client.getTask(created.taskId!);
    t.match(polled.status, /^(submitted|working)$/);

    const refused = await client.call('create_media_buy', {
      ...buyParams(urls.creative),
      end_time: 'tomorrow',
    });
    t.equal(refused.status, 'failed');
    t.equal(refused.ok, false);
    t.match(refused.body, { errors: [{ code: 'VALIDATION_ERROR', field: 'end_time' }] });

    await t.rejects(client.getTask('task_unknown'), 'unknown task id is refused');

    // An HTTP 401 from the endpoint is a failed result carrying the error envelope.
    const badKey = new AgentClient({
      agentUrl: urls.sales,
      transport: 'a2a',
      a2aVersion: version,
      apiKey: 'not-a-key-of-ours',
    });
    const denied = await badKey.call('get_media_buys', { context: { trace: version } });
    t.equal(denied.ok, false);
    t.equal(denied.httpStatus, 401);
    t.match(denied.body, {
      status: 'failed',
      errors: [{ code: 'AUTH_INVALID' }],
      context: { trace: version },
    });
    const deniedPoll = await badKey.getTask(created.taskId!);
    t.equal(deniedPoll.httpStatus, 401, 'polling with rejected credentials too');
  });
}

t.test('A2A raw wire shapes of both versions', async (t) => {
  const { h, urls } = await startAgents(t);
  const key = h.keys['sales:demo-buyer']!;
  const v03 = await postJson(
    `${urls.sales}/a2a`,
    {
      jsonrpc: '2.0',
      id: 'a',
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: 'm1',
          role: 'user',
          parts: [{ kind: 'data', data: { skill: 'list_authorized_properties', parameters: {} } }],
        },
      },
    },
    { 'x-api-key': key },
  );
  t.equal(v03.status, 200);
  t.equal(v03.body.result.kind, 'task');
  t.equal(v03.body.result.status.state, 'completed');
  t.equal(v03.body.result.artifacts[0].parts[0].kind, 'data');
  t.ok(Array.isArray(v03.body.result.artifacts[0].parts[0].data.publisher_domains));

  const v10 = await postJson(
    `${urls.sales}/a2a`,
    {
      jsonrpc: '2.0',
      id: 'b',
      method: 'SendMessage',
      params: {
        message: {
          messageId: 'm2',
          role: 'ROLE_USER',
          parts: [{ data: { skill: 'list_authorized_properties', input: {} } }],
        },
      },
    },
    { 'x-api-key': key, 'A2A-Version': '1.0' },
  );
  t.equal(v10.status, 200, JSON.stringify(v10.body));
  const task = v10.body.result.task;
  t.equal(task.status.state, 'TASK_STATE_COMPLETED');
  t.notOk('kind' in task.artifacts[0].parts[0], 'no kind member in 1.0 parts');
  t.ok(Array.isArray(task.artifacts[0].parts[0].data.publisher_domains));

  const noSkill = await postJson(`${urls.sales}/a2a`, {
    jsonrpc: '2.0',
    id: 'c',
    method: 'message/send',
    params: {
      message: {
        kind: 'message',
        messageId: 'm3',
        role: 'user',
        parts: [{ kind: 'text', text: 'hi' }],
      },
    },
  });
  t.equal(noSkill.body.result.status.state, 'completed', 'the call completed; AdCP failed');
  t.match(noSkill.body.result.artifacts[0].parts[0].data, {
    status: 'failed',
    errors: [{ code: 'VALIDATION_ERROR', field: 'message.parts' }],
  });

  const bad = await postJson(`${urls.sales}/a2a`, '{"jsonrpc":');
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, -32700);

  const cardV03 = await fetch(`${urls.creative}/.well-known/agent-card.json`);
  const c03 = (await cardV03.json()) as Record<string, any>;
  t.equal(c03.url, `${urls.creative}/a2a`);
  t.equal(c03.protocolVersion, '0.3.0');
  t.ok(c03.skills.some((s: { id: string }) => s.id === 'build_creative'));
  const cardV10 = await fetch(`${urls.creative}/.well-known/agent-card.json`, {
    headers: { 'A2A-Version': '1.0' },
  });
  const c10 = (await cardV10.json()) as Record<string, any>;
  t.same(
    c10.supportedInterfaces.map((i: { protocolVersion: string }) => i.protocolVersion).sort(),
    ['0.3', '1.0'],
  );
  // The same card beside the endpoint it names: a buyer handed the card's `url` finds it
  // at `<url>/.well-known/agent-card.json` (the AdCP SDK's A2A discovery).
  const beside = await fetch(`${c03.url}/.well-known/agent-card.json`);
  t.equal(beside.status, 200);
  t.same(await beside.json(), c03);
});

t.test('registry endpoint, previews, unknown routes', async (t) => {
  const { urls } = await startAgents(t);
  const ok = await postJson(`${urls.sales}/api/registry/validate/product-authorization`, {
    agent_url: urls.sales,
    publisher_properties: [{ publisher_domain: 'news.example' }],
  });
  t.equal(ok.status, 200);
  t.equal(ok.body.agent_url, urls.sales);
  t.type(ok.body.authorized, 'boolean');
  t.type(ok.body.checked_at, 'string');

  const bad = await postJson(`${urls.sales}/api/registry/validate/product-authorization`, {
    agent_url: 'not a url',
    publisher_properties: [],
  });
  t.equal(bad.status, 400);
  t.match(bad.body, { errors: [{ code: 'VALIDATION_ERROR' }] });
  const notJson = await postJson(`${urls.sales}/api/registry/validate/product-authorization`, '{');
  t.equal(notJson.status, 400);
  t.match(notJson.body, { errors: [{ code: 'VALIDATION_ERROR' }] });

  const onCreative = await postJson(
    `${urls.creative}/api/registry/validate/product-authorization`,
    {},
  );
  t.equal(onCreative.status, 404);
  t.match(onCreative.body, { errors: [{ code: 'NOT_FOUND' }] });

  const preview = await fetch(`${urls.creative}/previews/prv_${'0'.repeat(32)}`);
  t.equal(preview.status, 404);
  t.match(await preview.json(), { errors: [{ code: 'CREATIVE_NOT_FOUND' }] });
});
