/**
 * `svc call` in process: --list, --as from the credentials file, near names for a
 * mistyped task, every invalid field at once, the network cause, and the start banner's
 * example commands.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import t from 'tap';
import { invalidFields, networkCause, runCall } from '../../agents/client/call-command.js';
import { requiredMembers, taskInputJsonSchema } from '../../agents/runtime/describe.js';
import {
  agentsCredentialsSection,
  exampleBuy,
  exampleCalls,
  LOCAL_RECEIVER_WEBHOOK_URL,
  startBanner,
} from '../../agents/server/banner.js';
import { brandProfile } from '../../shared/brand.js';
import { writeCredentialsSection } from '../../shared/infra/credentials-file.js';
import { startAgents } from './transport/support.js';

function streams() {
  const out = new PassThrough();
  const err = new PassThrough();
  let o = '';
  let e = '';
  out.on('data', (c: Buffer) => (o += c.toString()));
  err.on('data', (c: Buffer) => (e += c.toString()));
  return { out, err, text: () => ({ out: o, err: e }) };
}

t.test('svc call against running agents', async (t) => {
  const { urls, h } = await startAgents(t);
  const dataDir = await mkdtemp(join(tmpdir(), 'call-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const creds = Object.entries(h.keys).map(([k, api_key]) => {
    const [agent, principal_id] = k.split(':') as ['sales', string];
    return { agent, principal_id, name: principal_id, api_key, bearer_token: 'x' };
  });
  await writeCredentialsSection(dataDir, 'agents', agentsCredentialsSection(urls, creds));
  const call = async (o: Partial<Parameters<typeof runCall>[0]>) => {
    const s = streams();
    const code = await runCall({
      agentUrl: urls.sales,
      params: {},
      a2aVersion: '1.0',
      dataDir,
      out: s.out,
      err: s.err,
      ...o,
    });
    return { code, ...s.text() };
  };

  const list = await call({ list: true });
  t.equal(list.code, 0);
  const listed = /^create_media_buy\s+required: (.*)$/m.exec(list.out)![1]!;
  t.equal(
    listed,
    'start_time, end_time, idempotency_key (or buyer_ref, brand_manifest), packages (or proposal_id), brand (or brand_manifest)',
  );
  // --list and the agent's validator are one schema: what it lists is what the agent requires.
  const create = h.core.registry.get('sales', 'create_media_buy')!;
  t.same(
    listed.split(/, (?![^(]*\))/).map((m) => m.replace(/ \(or .*$/, '')),
    requiredMembers(create),
    'listed required = the validator requires',
  );
  t.same(requiredMembers(create), [
    'start_time',
    'end_time',
    'idempotency_key',
    'packages',
    'brand',
  ]);
  const agentSays = await h.core.dispatcher.invoke({
    agent: 'sales',
    task: 'create_media_buy',
    params: {},
    credentials: { apiKey: h.keys['sales:demo-buyer'] },
    transport: 'mcp',
  } as never);
  t.same(
    ((agentSays as { issues?: Array<{ pointer: string }> }).issues ?? [])
      .map((i) => i.pointer.slice(1))
      .sort(),
    requiredMembers(create).sort(),
    'the agent names every one of them in one answer',
  );

  // Every form the agent accepts passes the client-side check: the alternatives too.
  const schema = taskInputJsonSchema(create);
  const buy = exampleBuy(LOCAL_RECEIVER_WEBHOOK_URL);
  t.same(invalidFields(schema, buy), [], 'the published form');
  const { packages: _p, ...proposal } = buy;
  void _p;
  t.same(
    invalidFields(schema, {
      ...proposal,
      proposal_id: 'p1',
      total_budget: { amount: 1, currency: 'USD' },
    }),
    [],
    'a proposal instead of packages',
  );
  const { idempotency_key: _k, brand: _b, ...older } = buy;
  void _k;
  void _b;
  t.same(
    invalidFields(schema, {
      ...older,
      buyer_ref: 'b1',
      brand_manifest: { url: 'https://a.example' },
    }),
    [],
    'the older form',
  );
  // One round: everything missing is named before anything is sent.
  const empty = await call({ task: 'create_media_buy', params: {}, as: 'demo-buyer' });
  t.equal(empty.code, 2);
  for (const m of ['start_time', 'end_time', 'idempotency_key', 'packages', 'brand']) {
    t.match(empty.err, new RegExp(`^ {2}${m}: is required`, 'm'), `${m} named`);
  }
  const noBrand = await call({
    task: 'create_media_buy',
    params: { ...buy, brand: undefined },
    as: 'demo-buyer',
  });
  t.equal(noBrand.code, 2, 'brand is caught by the same check, not by a second round');
  t.match(noBrand.err, /^ {2}brand: is required \(or brand_manifest\)$/m);
  // The banner's buy works as printed.
  const banner = await call({ task: 'create_media_buy', params: buy, as: 'demo-buyer' });
  t.equal(banner.code, 0, banner.out + banner.err);
  t.match(JSON.parse(banner.out), { status: 'submitted' });
  const noTask = await call({});
  t.equal(noTask.code, 2);
  t.match(noTask.err, /give a task name/);
  t.match(noTask.out, /get_products/);

  const asBuyer = await call({ task: 'get_media_buys', as: 'demo-buyer' });
  t.equal(asBuyer.code, 0, asBuyer.err);
  t.match(JSON.parse(asBuyer.out), { media_buys: [] });
  const unknownPrincipal = await call({ task: 'get_media_buys', as: 'nobody' });
  t.equal(unknownPrincipal.code, 2);
  t.match(
    unknownPrincipal.err,
    /--as nobody: no such principal of the sales agent .*known: .*demo-buyer/,
  );
  const notOurs = await call({ agentUrl: 'http://127.0.0.1:9', task: 'x', as: 'demo-buyer' });
  t.match(notOurs.err, /is not an agent of the svc start/);

  const typo = await call({ task: 'get_prodcts' });
  t.equal(typo.code, 2);
  t.match(typo.err, /UNKNOWN_TASK: .* has no task "get_prodcts"; did you mean get_products\?/);

  const invalid = await call({
    task: 'create_media_buy',
    params: { packages: [{ budget: 'x' }] },
    as: 'demo-buyer',
  });
  t.equal(invalid.code, 2);
  t.match(invalid.err, /VALIDATION_ERROR: \d+ invalid field\(s\) for create_media_buy/);
  t.match(invalid.err, / {2}start_time: is required/);
  t.match(invalid.err, / {2}packages\[0\]\.budget: must be number/);

  const refused = await call({ task: 'get_media_buys' });
  t.equal(refused.code, 1);
  t.match(`${refused.out}${refused.err}`, /AUTH_REQUIRED/);

  const a2a = await call({ task: 'get_media_buys', a2a: true, as: 'demo-buyer' });
  t.equal(a2a.code, 0, a2a.err);
  const a2aList = await call({ list: true, a2a: true });
  t.match(a2aList.out, /get_products\s+required: \(none\)/);

  const down = await call({ agentUrl: 'http://127.0.0.1:1', task: 'get_products' });
  t.equal(down.code, 1);
  t.match(down.err, /call failed: cannot reach http:\/\/127\.0\.0\.1:1\/mcp: bad port/);
});

t.test('the server suggests near task names too', async (t) => {
  const { h } = await startAgents(t);
  const r = await h.core.dispatcher.invoke({
    agent: 'sales',
    task: 'get_prodcts',
    params: {},
    credentials: {},
    transport: 'mcp',
  } as never);
  t.match(r, {
    code: 'UNSUPPORTED_FEATURE',
    message: /did you mean get_products\?/,
    suggestion: 'get_products',
  });
});

t.test('network causes and schema checks', async (t) => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5'), {
    code: 'ECONNREFUSED',
  });
  t.equal(networkCause(new TypeError('fetch failed', { cause: refused })), refused.message);
  t.equal(networkCause(new Error('boom')), null);
  t.equal(networkCause(new Error('socket hang up')), 'socket hang up');
  t.same(
    invalidFields({ type: 'object', properties: { a: { type: 'nope' } } }, {}),
    [],
    'a schema that does not compile checks nothing',
  );
  t.same(invalidFields({ type: 'object', additionalProperties: false, properties: {} }, { x: 1 }), [
    { field: 'x', message: 'must NOT have additional properties' },
  ]);
});

t.test(
  'the banner: services, the credentials path, runnable examples, nothing secret',
  async (t) => {
    const urls = {
      sales: 'http://127.0.0.1:3001',
      creative: 'http://127.0.0.1:3002',
      signals: 'http://127.0.0.1:3003',
    };
    const service = {
      profile: brandProfile('svc'),
      urls,
      oauth: null,
      databaseUrl: 'postgres://svc:pw@127.0.0.1:5555/svc',
      embeddedPostgres: '/d/postgres',
      redisUrl: 'redis://127.0.0.1:7000',
      privateRedisReason: 'Redis at redis://127.0.0.1:6379/ does not answer (refused)',
      queuePrefix: '{svc:0011aabb}',
    };
    const text = startBanner(service, '/d/credentials.json', false, '/d');
    t.match(text, /postgres embedded, \/d\/postgres on 127\.0\.0\.1:5555/);
    t.match(
      text,
      /private redis-server at redis:\/\/127\.0\.0\.1:7000 \(Redis at .* does not answer/,
    );
    t.match(text, /\/d\/credentials\.json \(owner-only/);
    t.match(text, 'SVC_DATA_DIR=/d npx svc call http://127.0.0.1:3001 get_products');
    t.notMatch(text, /pw/);
    const prod = startBanner(
      { ...service, embeddedPostgres: null, privateRedisReason: null },
      '/d/c.json',
      true,
    );
    t.notMatch(prod, /npx svc call/, 'production: no examples');
    t.match(prod, /postgres 127\.0\.0\.1:5555\/svc \(DATABASE_URL\)/);
    t.equal(
      exampleCalls(urls).sales.startsWith('npx svc call'),
      true,
      'default data dir: no prefix',
    );
    t.match(exampleCalls(urls, '/a b').sales, /^SVC_DATA_DIR='\/a b' /);

    // The local-webhook example: its setting, and the approval mode with how to change it.
    const now = new Date('2026-11-27T00:00:00Z');
    const demo = startBanner(service, '/d/c.json', false, '.data', false, {
      approval: { autoAfterSeconds: 30 },
      allowHosts: [],
      now,
    });
    const line =
      /^ {2}npx svc call http:\/\/127\.0\.0\.1:3001 create_media_buy '(.*)' --as demo-buyer$/m.exec(
        demo,
      );
    t.ok(line, demo);
    t.same(JSON.parse(line![1]!), exampleBuy(LOCAL_RECEIVER_WEBHOOK_URL, now), 'the buy, as JSON');
    t.match(
      demo,
      'webhooks to 127.0.0.1 need it allowed: restart with `npx svc start --allow-hosts 127.0.0.1`',
    );
    t.match(demo, /approval automatic after 30 s: .*INVALID_STATE.*--approval manual/);
    const allowed = startBanner(service, '/d/c.json', false, '.data', false, {
      approval: 'manual',
      allowHosts: ['127.0.0.1'],
    });
    t.match(allowed, 'webhooks to 127.0.0.1: allowed (--allow-hosts 127.0.0.1)');
    t.match(allowed, 'approval manual: pending buys wait for `npx svc approve <task_id>`');
    t.match(
      startBanner(service, '/d/c.json', false, '.data', false, {
        approval: 'never',
        allowHosts: [],
      }),
      'approval never',
    );
    t.notMatch(
      startBanner({ ...service }, '/d/c.json', true, '.data', false, {
        approval: 'never',
        allowHosts: [],
      }),
      /create_media_buy/,
      'production: no example',
    );
  },
);
