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
import { agentsCredentialsSection, exampleCalls, startBanner } from '../../agents/server/banner.js';
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
  t.match(list.out, /create_media_buy\s+required: start_time, end_time/);
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
  },
);
