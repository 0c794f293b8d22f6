/**
 * Issue 21 item 3 over real HTTP: the OAuth development sign-in is off unless asked for by
 * name (the refusal names the setting), refuses a bare name, a wrong or another principal's
 * API key and malformed forms (never a 500), accepts the principal's own API key or the
 * one-time code (once; replaced after a few wrong tries), limits failures per address, and
 * cannot be turned on in production or on a non-loopback host.
 */
import { createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { bindClient } from '../../../agents/oauth/bindings.js';
import { devLoginFromConfig } from '../../../agents/server/seller-process.js';
import { loadConfig } from '../../../shared/config.js';
import { devCodes, postJson, startAgents, type Agents } from './support.js';

const redirect = 'http://127.0.0.1:9/cb';

/** Registers and binds a web client, starts authorization; returns the sign-in page's URL and a jar. */
async function begin(a: Agents, principal = 'demo-buyer') {
  const reg = await postJson(
    `${a.urls.sales}/oauth/register`,
    {
      redirect_uris: [redirect],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      scope: 'openid svc:media_buys',
    },
    { authorization: `Bearer ${a.oauth!.initialAccessToken}` },
  );
  await bindClient(
    a.h.pool,
    a.h.schema,
    { agent: 'sales', clientId: reg.body.client_id, principalId: principal },
    { actor: 'test', via: 'cli' },
  );
  const jar = new Map<string, string>();
  const go = async (url: string, init: RequestInit = {}) => {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      jar.set(pair!.slice(0, i), pair!.slice(i + 1));
    }
    return res;
  };
  const verifier = randomBytes(32).toString('base64url');
  const q = new URLSearchParams({
    client_id: reg.body.client_id,
    response_type: 'code',
    redirect_uri: redirect,
    scope: 'openid svc:media_buys',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const res = await go(`${a.urls.sales}/oauth/authorize?${q}`);
  const page = new URL(res.headers.get('location')!, a.urls.sales).toString();
  const submit = (fields: Record<string, string>) =>
    go(page, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  return { page, go, submit };
}

t.test('off unless asked for by name', async (t) => {
  const a = await startAgents(t, { oauth: true });
  const { page, go, submit } = await begin(a);
  const res = await go(page);
  t.equal(res.status, 403);
  t.match(await res.text(), /SVC_OAUTH_DEV_LOGIN=1/, 'the refusal names the setting');
  const post = await submit({ prompt: 'login', login: 'demo-buyer', secret: 'anything' });
  t.equal(post.status, 403, 'no identity handed out');
  t.notOk(post.headers.get('location'));
});

t.test('a bare name, wrong secrets and malformed forms get nothing', async (t) => {
  const a = await startAgents(t, { oauth: { devLogin: 'test' } });
  const { page, go, submit } = await begin(a);
  const form = await go(page);
  t.equal(form.status, 200);
  t.match(await form.text(), /name="secret"/);
  const viewerKey = a.h.keys['sales:demo-viewer']!;
  const cases: Array<[string, Record<string, string>]> = [
    ['bare name', { prompt: 'login', login: 'demo-buyer' }],
    ['empty secret', { prompt: 'login', login: 'demo-buyer', secret: '' }],
    ['wrong secret', { prompt: 'login', login: 'demo-buyer', secret: 'password' }],
    ["another principal's key", { prompt: 'login', login: 'demo-buyer', secret: viewerKey }],
    ['NUL in login', { prompt: 'login', login: 'demo\u0000buyer', secret: viewerKey }],
    ['huge secret', { prompt: 'login', login: 'demo-buyer', secret: 'x'.repeat(3000) }],
  ];
  for (const [name, fields] of cases) {
    const r = await submit(fields);
    t.equal(r.status, 401, name);
    t.notOk(r.headers.get('location'), `${name}: no redirect`);
  }
  const wrongPrompt = await submit({ prompt: 'consent' });
  t.equal(wrongPrompt.status, 400, 'a form for another step');
  const notForm = await go(page, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"login":"demo-buyer"}',
  });
  t.equal(notForm.status, 400, 'not a form');
  const tooBig = await submit({ prompt: 'login', login: 'demo-buyer', secret: 'y'.repeat(5000) });
  t.equal(tooBig.status, 400, 'an oversized form');
});

t.test("the principal's own API key signs in", async (t) => {
  const a = await startAgents(t, { oauth: { devLogin: 'test' } });
  const { submit } = await begin(a);
  const r = await submit({
    prompt: 'login',
    login: 'demo-buyer',
    secret: a.h.keys['sales:demo-buyer']!,
  });
  t.equal(r.status, 303);
  t.match(r.headers.get('location'), /\/oauth\/authorize\//, 'back to the authorization');
});

t.test('the one-time code works once and is replaced after wrong tries', async (t) => {
  const a = await startAgents(t, { oauth: { devLogin: 'test' } });
  const first = devCodes.last;
  t.match(first, /^[A-Z2-9]{10}$/);
  const one = await begin(a);
  t.equal((await one.submit({ prompt: 'login', login: 'demo-buyer', secret: first })).status, 303);
  t.not(devCodes.last, first, 'a new code once used');
  const two = await begin(a);
  t.equal(
    (await two.submit({ prompt: 'login', login: 'demo-buyer', secret: first })).status,
    401,
    'the used code is refused',
  );
  const before = devCodes.last;
  for (let i = 0; i < 5; i++)
    await two.submit({ prompt: 'login', login: 'demo-buyer', secret: 'WRONGCODE2' });
  t.not(devCodes.last, before, 'five wrong codes replace it');
  const r = await two.submit({ prompt: 'login', login: 'demo-buyer', secret: before });
  t.not(r.status, 303, 'the replaced code no longer works');
});

t.test('failed sign-ins are limited per address', async (t) => {
  const a = await startAgents(t, { oauth: { devLogin: 'test' } });
  const { submit } = await begin(a);
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) {
    statuses.push(
      (await submit({ prompt: 'login', login: 'demo-buyer', secret: `nope${i}` })).status,
    );
  }
  t.same(statuses.slice(0, 10), Array(10).fill(401));
  t.same(statuses.slice(10), [429, 429]);
  const good = await submit({
    prompt: 'login',
    login: 'demo-buyer',
    secret: a.h.keys['sales:demo-buyer']!,
  });
  t.equal(good.status, 429, 'even the right key waits');
});

t.test('never in production, never off loopback', async (t) => {
  const a = await startAgents(t);
  const cfg = (env: Record<string, string>) =>
    loadConfig({ LOG_LEVEL: 'silent', SVC_OAUTH_DEV_LOGIN: '1', ...env });
  t.equal(devLoginFromConfig(loadConfig({}), a.h.pool, a.h.schema), null, 'off by default');
  t.throws(() => devLoginFromConfig(cfg({ NODE_ENV: 'production' }), a.h.pool, a.h.schema), {
    message: /not with NODE_ENV=production/,
  });
  t.throws(() => devLoginFromConfig(cfg({ SVC_HTTP_HOST: '0.0.0.0' }), a.h.pool, a.h.schema), {
    message: /needs SVC_HTTP_HOST on loopback/,
  });
  t.throws(() => cfg({ SVC_OAUTH_DEV_LOGIN: 'yes' }), /SVC_OAUTH_DEV_LOGIN/);
});
