/**
 * The --agent driver against a stand-in seller agent speaking MCP over HTTP (JSON-RPC,
 * with one answer as an SSE event as Streamable HTTP may send it). The real agents' MCP
 * surface is not written yet; this pins the driver's side of the conversation.
 */
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateSigningKey, publishedJwk } from '../../../shared/signing/keys.js';
import { McpAgentDriver } from '../../../conformance/grade-sender/driver.js';
import { gradeSender } from '../../../conformance/grade-sender/grade-sender.js';
import { renderTable } from '../../../conformance/report/render.js';
import { exitCodeOf } from '../../../conformance/report/report.js';
import { profile } from '../support/receivers.js';
import { publishKeys, ScriptedSender } from '../support/senders.js';

interface Call {
  method: string;
  params: Record<string, unknown>;
  session: string | undefined;
}

async function fakeAgent(
  t: Test,
  sender: ScriptedSender,
  opts: { asyncGetProducts?: boolean } = {},
) {
  const calls: Call[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const msg = JSON.parse(Buffer.concat(chunks).toString()) as {
        id: number;
        method: string;
        params: Record<string, unknown>;
      };
      calls.push({
        method: msg.method,
        params: msg.params,
        session: req.headers['mcp-session-id'] as string | undefined,
      });
      if (req.headers.authorization !== 'Bearer test-token') {
        res.writeHead(401).end();
        return;
      }
      if (msg.method === 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'sess-1' });
        res.end(
          JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-06-18' } }),
        );
        return;
      }
      const name = msg.params.name as string;
      const args = msg.params.arguments as Record<string, unknown>;
      const push = args.push_notification_config as { url: string; operation_id: string };
      let status = 'completed';
      if (name === 'create_media_buy' || opts.asyncGetProducts) {
        status = 'submitted';
        await sender.trigger({
          stepId: 'x',
          url: push.url,
          operationId: push.operation_id,
          context: args.context as Record<string, unknown>,
          initial: 'async',
          instructions: '',
        });
      }
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: msg.id,
        result: { structuredContent: { status } },
      });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`event: message\ndata: ${body}\n\n`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, calls };
}

t.test('the MCP driver makes a seller agent emit, and the sender is graded', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const pub = await publishKeys(t, [publishedJwk(key, profile)]);
  const sender = new ScriptedSender(key);
  const agent = await fakeAgent(t, sender);
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new McpAgentDriver(agent.url, {
      headers: { authorization: 'Bearer test-token' },
      createMediaBuy: { account: { account_id: 'acc_1' }, context: { overridden: true } },
    }),
    keys: { agentUrl: pub.agentUrl, allowLoopback: true },
    stepTimeoutMs: 8000,
    quietMs: 1200,
  });
  await sender.close();
  t.same(
    report.checks.filter((c) => c.status !== 'passed').map((c) => `${c.id}: ${c.detail}`),
    [],
  );
  t.same(
    agent.calls.map((c) => [c.method, c.params.name ?? null]),
    [
      ['initialize', null],
      ['tools/call', 'create_media_buy'],
      ['tools/call', 'create_media_buy'],
      ['tools/call', 'create_media_buy'],
      ['tools/call', 'get_products'],
    ],
  );
  t.equal(agent.calls[1]?.session, 'sess-1', 'the MCP session is kept');
  const args = agent.calls[1]?.params.arguments as Record<string, unknown>;
  const push = args.push_notification_config as Record<string, string>;
  t.match(push.url, /\/step\/echo\/cap_/);
  t.notOk(push.url!.includes(push.operation_id!), 'the capture id is not the operation id');
  t.ok(typeof args.idempotency_key === 'string');
  t.same(args.account, { account_id: 'acc_1' }, 'seller-specific arguments are passed');
  t.notOk((args.context as Record<string, unknown>).overridden, "the kit's context wins");
});

t.test(
  'an agent answering get_products asynchronously: the terminal check is not applicable',
  async (t) => {
    const { key } = await generateSigningKey('ed25519');
    const pub = await publishKeys(t, [publishedJwk(key, profile)]);
    const sender = new ScriptedSender(key);
    const agent = await fakeAgent(t, sender, { asyncGetProducts: true });
    const report = await gradeSender({
      profile,
      protocolVersion: '3.2',
      driver: new McpAgentDriver(agent.url, { headers: { authorization: 'Bearer test-token' } }),
      keys: { agentUrl: pub.agentUrl, allowLoopback: true },
      stepTimeoutMs: 8000,
      quietMs: 1200,
    });
    await sender.close();
    const c = report.checks.find((x) => x.id === 'terminal-initial.no-webhook')!;
    t.equal(c.status, 'not_applicable');
    t.match(c.detail, /get_products answered submitted/);
  },
);

t.test('an agent refusing the driver (401): every driven check not applicable', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const pub = await publishKeys(t, [publishedJwk(key, profile)]);
  const agent = await fakeAgent(t, new ScriptedSender(key));
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new McpAgentDriver(agent.url),
    keys: { agentUrl: pub.agentUrl, allowLoopback: true },
    stepTimeoutMs: 2000,
    quietMs: 500,
  });
  t.equal(report.summary.failed, 0);
  t.equal(report.summary.passed, 1, 'only keys.published');
  t.match(report.checks[0]?.detail, /cannot be driven over MCP \(initialize: HTTP 401\)/);
  t.match(report.undriven, /cannot be driven over MCP \(initialize: HTTP 401\)/);
  t.equal(exitCodeOf(report), 1, 'a sender that sent nothing does not pass');
});

t.test('an agent failing every create_media_buy: exit 1, its whole error shown', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const pub = await publishKeys(t, [publishedJwk(key, profile)]);
  const reason =
    'INVALID_REQUEST: packages[0].product_id "video_olv_news" is not offered to this buyer; ' +
    'brand is required by this seller; idempotency_key must be a UUID; and this sentence goes on ' +
    'well past the one hundred and forty characters at which the error used to be cut off. END';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const msg = JSON.parse(Buffer.concat(chunks).toString()) as { id: number; method: string };
      const result =
        msg.method === 'initialize'
          ? { protocolVersion: '2025-06-18' }
          : { isError: true, content: [{ type: 'text', text: reason }] };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new McpAgentDriver(url),
    keys: { agentUrl: pub.agentUrl, allowLoopback: true },
    stepTimeoutMs: 2000,
    quietMs: 500,
  });
  t.equal(exitCodeOf(report), 1, 'not a pass');
  t.ok(report.undriven?.includes(reason), 'the whole error, in the JSON report');
  const flat = renderTable(report).replace(/\s+/g, ' ');
  t.ok(flat.includes(`COULD NOT GRADE: mcp-agent: no step could be driven`), 'said first');
  t.ok(flat.includes(reason), 'the whole error, in the table (wrapped)');
  t.same(
    renderTable(report)
      .split('\n')
      .filter((l) => l.length > 140),
    [],
    'no line runs on',
  );
});
