/**
 * The commands as a user runs them: `svc start` as a child process (own database, ports
 * 0): it prints the agent URLs and where the credentials file is (never the secrets),
 * answers an agent card and stops on SIGTERM; a REDIS_URL that does not answer is waited
 * for, then named; `svc call` against
 * running agents (MCP and A2A, exit codes); `svc mcp` over stdio with the MCP client SDK.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import pg from 'pg';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { DATABASE_URL, REDIS_URL } from '../../helpers/db.js';
import { startAgents } from '../transport/support.js';
import { startReceiver } from '../../sender/harness.js';
import { otlpCollector } from '../../helpers/otlp-collector.js';
import { demoBuy } from './demo-buy.js';

// Many child processes, each a cold tsx start: slow on a loaded machine.
t.setTimeout(300_000);

const BIN = join(import.meta.dirname, '../../../bin/svc.js');

function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

t.test('svc start: prints URLs and credentials, serves a card, stops on SIGTERM', async (t) => {
  // Traced (OTEL_EXPORTER_OTLP_ENDPOINT): a buy's webhooks carry the trace its spans export.
  const otlp = await otlpCollector(t);
  const rx = await startReceiver(() => ({ status: 200 }));
  t.teardown(() => rx.close());
  const dbName = `g2_smoke_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const dataDir = await mkdtemp(join(tmpdir(), 'g2-start-'));
  t.teardown(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
    await rm(dataDir, { recursive: true, force: true });
  });
  const url = new URL(DATABASE_URL);
  url.pathname = `/${dbName}`;
  const child = spawn(process.execPath, [BIN, 'start'], {
    env: {
      ...process.env,
      DATABASE_URL: url.toString(),
      REDIS_URL,
      SVC_DATA_DIR: dataDir,
      SVC_SALES_PORT: '0',
      SVC_CREATIVE_PORT: '0',
      SVC_SIGNALS_PORT: '0',
      SVC_SENDER_ALLOW_HOSTS: '127.0.0.1',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_SERVICE_NAME: 'svc-start-under-test',
      // The other encoding than svc worker's test (telemetry/worker-export) exports in.
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      LOG_LEVEL: 'silent',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  t.teardown(() => clearTimeout(killer));
  const end = Date.now() + 60_000;
  while (!stdout.includes('next:') && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
  }
  t.match(stdout, /svc agents are up/);
  const sales = /^sales\s+(http:\/\/127\.0\.0\.1:\d+)/m.exec(stdout)?.[1];
  const creative = /^creative\s+(http:\/\/127\.0\.0\.1:\d+)/m.exec(stdout)?.[1];
  t.ok(sales && creative, 'agent URLs printed');
  t.notMatch(stdout, /sales_[A-Za-z0-9_-]{16,}|Bearer ey/, 'no secret on the terminal');
  const credFile = join(dataDir, 'credentials.json');
  t.match(stdout, credFile);
  t.equal((await stat(credFile)).mode & 0o777, 0o600, 'credentials readable by the owner only');
  const creds = JSON.parse(await readFile(credFile, 'utf8')) as {
    agents: { principals: Array<{ agent: string; principal_id: string; api_key: string }> };
  };
  t.match(
    creds.agents.principals.find((p) => p.agent === 'sales' && p.principal_id === 'demo-buyer'),
    { api_key: /^sales_/ },
  );
  t.match(stdout, /BullMQ prefix \{svc:[0-9a-f]{8}\}/, 'a prefix of its own database');
  const card = await fetch(`${sales}/.well-known/agent-card.json`);
  t.equal(card.status, 200);
  t.equal(((await card.json()) as { url: string }).url, `${sales}/a2a`);
  const jwks = (await (await fetch(`${sales}/.well-known/jwks.json`)).json()) as {
    keys: unknown[];
  };
  t.equal(jwks.keys.length, 1, 'a signing key was generated on first start');
  const formats = await run(['call', creative!, 'list_creative_formats', '{"type":"video"}']);
  t.equal(formats.code, 0, formats.stderr);
  t.match(formats.stdout, /"formats"/);
  const buy = await run(
    [
      'call',
      sales!,
      'create_media_buy',
      JSON.stringify(
        demoBuy('traced-buy', Date.now() + 7 * 86400_000, {
          push_notification_config: { url: `${rx.url}/hooks`, operation_id: 'traced' },
        }),
      ),
      '--as',
      'demo-buyer',
    ],
    { SVC_DATA_DIR: dataDir },
  );
  t.equal(buy.code, 0, buy.stderr);
  const until = Date.now() + 60_000;
  while (rx.received.length === 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const traceparent = String(rx.received[0]?.headers.traceparent ?? '');
  t.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'the webhook carries a traceparent');
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'clean exit on SIGTERM');
  t.match(stdout, /stopped/);
  // Stopping flushes the spans: the emit and the attempt of that webhook, in its trace.
  const exported = otlp.bodies.join('\n');
  const traceId = traceparent.split('-')[1];
  t.match(exported, /"svc-start-under-test"/, 'under OTEL_SERVICE_NAME');
  t.same([...new Set(otlp.contentTypes)], ['application/json'], 'as http/json, as asked');
  t.match(exported, /"webhook\.emit"/, 'the emit span reached the collector');
  t.match(exported, /"webhook\.attempt"/, 'the attempt span too');
  t.ok(traceId && exported.includes(traceId), 'in the trace the webhook announced');
});

t.test('svc start: an OTLP endpoint that is not an http(s) URL is refused, named', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'g2-otel-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const r = await run(['start'], {
    DATABASE_URL,
    REDIS_URL,
    SVC_DATA_DIR: dataDir,
    OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
  });
  t.not(r.code, 0);
  t.match(r.stderr, /OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL, got "collector:4318"/);
  t.notMatch(r.stderr, /\n\s+at /, 'a message, not a stack trace');
});

t.test(
  'svc start: a configured Redis that does not answer is named, with what to do',
  async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'g2-noredis-'));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    const r = await run(['start'], {
      DATABASE_URL,
      REDIS_URL: 'redis://127.0.0.1:1',
      SVC_DATA_DIR: dataDir,
      SVC_SERVICE_WAIT_SECONDS: '1',
      SVC_SALES_PORT: '0',
      SVC_CREATIVE_PORT: '0',
      SVC_SIGNALS_PORT: '0',
    });
    t.equal(r.code, 1);
    t.match(
      r.stderr,
      /Redis at redis:\/\/127\.0\.0\.1:1 does not answer .*apt-get install redis-server.*REDIS_URL/,
    );
  },
);

t.test('svc call: MCP and A2A, refusals exit 1, bad input exits 2', async (t) => {
  const { urls, h } = await startAgents(t);
  const key = h.keys['sales:demo-buyer']!;
  const mcp = await run(['call', urls.sales, 'list_authorized_properties']);
  t.equal(mcp.code, 0, mcp.stderr);
  t.match(JSON.parse(mcp.stdout), { publisher_domains: Array });
  const a2a = await run([
    'call',
    urls.sales,
    'get_media_buys',
    '{}',
    '--a2a',
    '--a2a-version',
    '0.3',
    '--api-key',
    key,
  ]);
  t.equal(a2a.code, 0, a2a.stderr);
  t.match(JSON.parse(a2a.stdout), { media_buys: [] });
  const refused = await run(['call', urls.sales, 'get_media_buys']);
  t.equal(refused.code, 1);
  t.match(JSON.parse(refused.stdout), { errors: [{ code: 'AUTH_REQUIRED' }] });
  const badJson = await run(['call', urls.sales, 'get_products', '{nope']);
  t.not(badJson.code, 0);
  t.match(badJson.stderr, /not valid JSON/);
  const badVersion = await run(['call', urls.sales, 'x', '{}', '--a2a', '--a2a-version', '2']);
  t.equal(badVersion.code, 2);
  const unreachable = await run(['call', 'http://127.0.0.1:1', 'get_products']);
  t.equal(unreachable.code, 1);
  t.match(unreachable.stderr, /call failed: cannot reach http:\/\/127\.0\.0\.1:1\/mcp: bad port/);
  const listed = await run(['call', urls.sales, '--list']);
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, /create_media_buy\s+required: start_time, end_time/);
  const typo = await run(['call', urls.sales, 'get_prodcts']);
  t.equal(typo.code, 2);
  t.match(typo.stderr, /UNKNOWN_TASK: .* did you mean get_products\?/);
  const invalid = await run([
    'call',
    urls.sales,
    'create_media_buy',
    '{"packages":[{"budget":"x"}]}',
    '--api-key',
    key,
  ]);
  t.equal(invalid.code, 2);
  for (const field of ['start_time', 'end_time', 'packages[0].product_id', 'packages[0].budget']) {
    t.match(invalid.stderr, `  ${field}: `, `${field} reported with the others`);
  }
});

t.test('svc mcp: call_svc_agent over stdio', async (t) => {
  const { urls, h } = await startAgents(t);
  const client = new Client({ name: 'test-host', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp'],
      env: { ...(process.env as Record<string, string>), LOG_LEVEL: 'silent' },
      stderr: 'ignore',
    }),
  );
  t.teardown(() => client.close());
  const tools = await client.listTools();
  t.same(
    tools.tools.map((x) => x.name),
    ['call_svc_agent'],
  );
  const ok = await client.callTool({
    name: 'call_svc_agent',
    arguments: {
      agent_url: urls.signals,
      task: 'get_signals',
      params: {
        signal_spec: 'sports',
        deliver_to: {
          deployments: [{ type: 'platform', platform: 'the-trade-desk' }],
          countries: ['US'],
        },
      },
      protocol: 'a2a',
      api_key: h.keys['signals:demo-buyer']!,
    },
  });
  t.notOk(ok.isError);
  t.match(ok.structuredContent, { signals: Array });
  const refused = await client.callTool({
    name: 'call_svc_agent',
    arguments: { agent_url: urls.sales, task: 'create_media_buy', params: {} },
  });
  t.equal(refused.isError, true);
  t.match(refused.structuredContent, { errors: [{ code: 'AUTH_REQUIRED' }] });
  const malformed = await client.callTool({
    name: 'call_svc_agent',
    arguments: { agent_url: 'not a url', task: 'get_products' },
  });
  t.equal(malformed.isError, true);
  t.match(malformed.structuredContent, {
    errors: [{ code: 'VALIDATION_ERROR', field: 'agent_url' }],
  });
});

t.test('svc start: an unreachable database or a taken port ends with a message', async (t) => {
  const noDb = await run(['start'], {
    DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
    SVC_SERVICE_WAIT_SECONDS: '0',
  });
  t.equal(noDb.code, 1);
  t.match(
    noDb.stderr,
    /PostgreSQL at .*127\.0\.0\.1:1.* does not answer .*Start PostgreSQL at 127\.0\.0\.1:1/,
  );
  const missing = new URL(DATABASE_URL);
  missing.pathname = '/no_such_db_here';
  const noSuchDb = await run(['start'], { DATABASE_URL: missing.toString() });
  t.equal(noSuchDb.code, 1);
  t.match(
    noSuchDb.stderr,
    /database "no_such_db_here" does not exist\. Create it/,
    'not "start PostgreSQL"',
  );
  const { urls } = await startAgents(t);
  const port = new URL(urls.sales).port;
  const dataDir = await mkdtemp(join(tmpdir(), 'g2-port-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const taken = await run(['start'], {
    DATABASE_URL,
    SVC_SALES_PORT: port,
    SVC_CREATIVE_PORT: '0',
    SVC_SIGNALS_PORT: '0',
    SVC_DATA_DIR: dataDir,
  });
  t.equal(taken.code, 1);
  t.match(taken.stderr, /EADDRINUSE|in use/);
  const badEnv = await run(['start'], { SVC_AGENTS_APPROVAL: 'sometimes' });
  t.equal(badEnv.code, 2);
  t.match(badEnv.stderr, /SVC_AGENTS_APPROVAL/);
});
