/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * Issue 21, items 1, 2 and 8, over real HTTP against the real OAuth server and PostgreSQL:
 * registration needs the initial access token unless opened; a registered client acts as
 * nobody until the operator binds it (client_credentials refused, its tokens AUTH_INVALID);
 * a bound client gets no more than its principal may do; unbinding stops its tokens; an
 * unknown `sub` and an unknown signals principal get nothing; the binding command refuses
 * malformed arguments and audits what it does; no registration makes the server fetch a
 * client-chosen URL (jwks_uri at a loopback listener); registration is rate limited per
 * address and size-capped; unbound clients expire.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importJWK, SignJWT, type JWK } from 'jose';
import t from 'tap';
import { AgentClient } from '../../../agents/client/agent-client.js';
import { bindingAudit, listClients } from '../../../agents/oauth/bindings.js';
import { runClientsCommand, type ClientsAction } from '../../../agents/oauth/clients-command.js';
import { loadConfig } from '../../../shared/config.js';
import { DATABASE_URL } from '../../helpers/db.js';
import { postJson, startAgents, type Agents } from './support.js';

const ccBody = (scope: string) =>
  new URLSearchParams({ grant_type: 'client_credentials', scope }).toString();

async function token(origin: string, id: string, secret: string, scope: string) {
  const res = await fetch(`${origin}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: ccBody(scope),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const ccClient = {
  client_name: 'hostile buyer',
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
};

/** The `svc oauth clients` command against the test's schema, output captured. */
async function cli(a: Agents, action: ClientsAction) {
  let out = '';
  let err = '';
  const code = await runClientsCommand(loadConfig({ ...process.env, DATABASE_URL }), action, {
    out: { write: (s: string) => (out += s) },
    err: { write: (s: string) => (err += s) },
    schema: a.h.schema,
    actor: 'cli:tester',
  });
  return { code, out, err };
}

t.test('registration needs the initial access token; malformed tokens are 401s', async (t) => {
  const a = await startAgents(t, { oauth: true });
  const url = `${a.urls.sales}/oauth/register`;
  const iat = a.oauth!.initialAccessToken!;
  t.match(iat, /^iat_[A-Za-z0-9_-]{40,}$/);
  const none = await postJson(url, ccClient);
  t.ok([400, 401].includes(none.status), 'no token');
  t.match(none.body.error, /^invalid_(token|request)$/);
  t.notOk(none.body.client_id);
  for (const bad of [
    'Bearer nope',
    `Bearer ${iat}x`,
    'Bearer ',
    `Basic ${iat}`,
    `Bearer ${'a'.repeat(6000)}`,
  ]) {
    const r = await postJson(url, ccClient, { authorization: bad });
    t.ok([400, 401].includes(r.status), `${bad.slice(0, 20)}: ${r.status}`);
    t.notOk(r.body.client_id, 'no client');
  }
  const ok = await postJson(url, ccClient, { authorization: `Bearer ${iat}` });
  t.equal(ok.status, 201);
});

t.test('an unbound client acts as nobody; binding grants what the principal may', async (t) => {
  const a = await startAgents(t, { oauth: true });
  const { urls } = a;
  const reg = await postJson(`${urls.sales}/oauth/register`, ccClient, {
    authorization: `Bearer ${a.oauth!.initialAccessToken}`,
  });
  t.equal(reg.status, 201);
  const { client_id: id, client_secret: secret } = reg.body;
  const all = 'svc:media_buys svc:products svc:creatives';

  const unbound = await token(urls.sales, id, secret, all);
  t.equal(unbound.status, 400, 'client_credentials refused before binding');
  t.equal(unbound.body.error, 'unauthorized_client');
  t.notOk(unbound.body.access_token);

  // Malformed and hostile binding arguments: clear refusals, nothing bound.
  const bad: Array<[ClientsAction, number, RegExp]> = [
    [
      { action: 'bind', agent: 'billing', clientId: id, principalId: 'demo-buyer' },
      2,
      /agent must be/,
    ],
    [
      {
        action: 'bind',
        agent: 'sales',
        clientId: "x'; DROP TABLE x;--",
        principalId: 'demo-buyer',
      },
      2,
      /client_id must be/,
    ],
    [
      { action: 'bind', agent: 'sales', clientId: id, principalId: 'a b' },
      2,
      /principal_id must be/,
    ],
    [
      { action: 'bind', agent: 'sales', clientId: id, principalId: 'x'.repeat(300) },
      2,
      /principal_id must be/,
    ],
    [
      { action: 'bind', agent: 'sales', clientId: 'unknownclient', principalId: 'demo-buyer' },
      1,
      /no registered client/,
    ],
    [
      { action: 'bind', agent: 'sales', clientId: id, principalId: 'nobody' },
      1,
      /no principal nobody/,
    ],
    [
      { action: 'bind', agent: 'creative', clientId: id, principalId: 'demo-buyer' },
      1,
      /no registered client/,
    ],
    [{ action: 'unbind', agent: 'sales', clientId: id }, 1, /is not bound/],
    [{ action: 'list', agent: 'nope' }, 2, /--agent must be/],
  ];
  for (const [action, code, message] of bad) {
    const r = await cli(a, action);
    t.equal(r.code, code, `${JSON.stringify(action).slice(0, 80)} exit code`);
    t.match(r.err, message);
  }
  t.equal((await token(urls.sales, id, secret, all)).status, 400, 'still unbound');

  const listed = await cli(a, { action: 'list', agent: 'sales', json: true });
  const row = (JSON.parse(listed.out) as any[]).find((c) => c.client_id === id);
  t.equal(row.principal_id, null);
  t.ok(Date.parse(row.expires_at) > Date.now(), 'an unbound client has an expiry');

  await a.h.core.onboardPrincipal({
    agent: 'sales',
    principalId: 'catalog-reader',
    permissions: { products: ['read'] },
  });
  const viewer = await cli(a, {
    action: 'bind',
    agent: 'sales',
    clientId: id,
    principalId: 'catalog-reader',
  });
  t.equal(viewer.code, 0, viewer.err);
  const granted = await token(urls.sales, id, secret, all);
  t.equal(granted.status, 200, JSON.stringify(granted.body));
  t.equal(granted.body.scope, 'svc:products', "only the scopes the principal's rights cover");
  const c = new AgentClient({ agentUrl: urls.sales, token: granted.body.access_token });
  t.teardown(() => c.close());
  const buy = await c.call('create_media_buy', { buyer_ref: 'x', packages: [] });
  t.equal(buy.httpStatus, 403, 'no media buys for the viewer');
  t.equal((await c.call('get_products', { brief: 'video' })).ok, true, 'products read works');

  t.equal(
    (await listClients(a.h.pool, a.h.schema, 'sales')).find((x) => x.client_id === id)?.expires_at,
    null,
    'bound: no expiry',
  );
  const unbind = await cli(a, { action: 'unbind', agent: 'sales', clientId: id });
  t.equal(unbind.code, 0);
  const after = await c.call('get_products', { brief: 'video' });
  t.equal(after.httpStatus, 401, "an unbound client's token stops working at once");
  t.match(after.body, { errors: [{ code: 'AUTH_INVALID' }] });

  const audit = await bindingAudit(a.h.pool, a.h.schema);
  t.same(
    audit.map((e) => [e.action, e.client_id, e.principal_id, e.actor, e.via]),
    [
      ['unbind', id, 'catalog-reader', 'cli:tester', 'cli'],
      ['bind', id, 'catalog-reader', 'cli:tester', 'cli'],
    ],
    'every bind and unbind audited, refusals not',
  );
});

t.test('an OAuth token whose sub is not the bound principal is AUTH_INVALID', async (t) => {
  const a = await startAgents(t, { oauth: true });
  const reg = await postJson(`${a.urls.sales}/oauth/register`, ccClient, {
    authorization: `Bearer ${a.oauth!.initialAccessToken}`,
  });
  await cli(a, {
    action: 'bind',
    agent: 'sales',
    clientId: reg.body.client_id,
    principalId: 'demo-buyer',
  });
  const { rows } = await a.h.pool.query<{ jwk: JWK }>(
    `SELECT jwk FROM ${a.h.schema}.oauth_keys WHERE name = 'access-token-signing'`,
  );
  const key = await importJWK(rows[0]!.jwk, 'ES256');
  const now = Math.floor(Date.now() / 1000);
  const mint = (sub: string, clientId: string) =>
    new SignJWT({ scope: 'svc:media_buys', client_id: clientId })
      .setProtectedHeader({ alg: 'ES256', kid: rows[0]!.jwk.kid! })
      .setSubject(sub)
      .setAudience(a.urls.sales)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(key);
  for (const [name, tok] of [
    ['unknown sub', await mint('stranger', reg.body.client_id)],
    ['unknown client', await mint('demo-buyer', 'notaclient')],
  ] as const) {
    const c = new AgentClient({ agentUrl: a.urls.sales, token: tok });
    const r = await c.call('get_media_buys', {});
    await c.close();
    t.equal(r.httpStatus, 401, name);
    t.match(r.body, { errors: [{ code: 'AUTH_INVALID' }] }, name);
  }
  const good = new AgentClient({
    agentUrl: a.urls.sales,
    token: await mint('demo-buyer', reg.body.client_id),
  });
  t.equal((await good.call('get_media_buys', {})).ok, true, 'the bound principal itself works');
  await good.close();
});

t.test('a principal the signals agent does not know gets no signal access', async (t) => {
  const a = await startAgents(t);
  const tok = await a.h.core.issueToken('signals', 'never-onboarded', { products: ['read'] });
  const c = new AgentClient({ agentUrl: a.urls.signals, token: tok });
  t.teardown(() => c.close());
  const r = await c.call('get_signals', {
    signal_spec: 'sports',
    deliver_to: {
      deployments: [{ type: 'platform', platform: 'the-trade-desk' }],
      countries: ['US'],
    },
  });
  t.match(r.body, { errors: [{ code: 'AGENT_ACCESS_DENIED' }] });
});

t.test('open registration is explicit, and its clients still act as nobody', async (t) => {
  const a = await startAgents(t, { oauth: { registration: { open: true } } });
  t.equal(a.oauth!.initialAccessToken, null);
  const reg = await postJson(`${a.urls.sales}/oauth/register`, ccClient);
  t.equal(reg.status, 201);
  const r = await token(a.urls.sales, reg.body.client_id, reg.body.client_secret, 'svc:media_buys');
  t.equal(r.body.error, 'unauthorized_client');
});

t.test('no registration makes the server fetch a URL the client chose', async (t) => {
  let fetched = 0;
  const bait = createServer((_req, res) => {
    fetched++;
    res.setHeader('content-type', 'application/json');
    res.end('{"keys":[]}');
  });
  await new Promise<void>((r) => bait.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => bait.close(() => r())));
  const baitUrl = `http://127.0.0.1:${(bait.address() as AddressInfo).port}/`;
  const a = await startAgents(t, { oauth: { registration: { open: true } } });
  const attempts: Record<string, unknown>[] = [
    { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: baitUrl },
    { jwks_uri: baitUrl },
    { jwks_uri: 'https://8.8.8.8/jwks' },
    { sector_identifier_uri: baitUrl, subject_type: 'pairwise' },
    { jwks: { keys: [] } },
    { token_endpoint_auth_method: 'self_signed_tls_client_auth' },
  ];
  for (const extra of attempts) {
    const r = await postJson(`${a.urls.sales}/oauth/register`, { ...ccClient, ...extra });
    t.equal(r.status, 400, `${JSON.stringify(extra)} refused`);
    t.equal(r.body.error, 'invalid_client_metadata');
  }
  // request_uris is not even kept (request objects are off): registered, but without it.
  const uris = await postJson(`${a.urls.sales}/oauth/register`, {
    ...ccClient,
    request_uris: [baitUrl],
  });
  t.notOk(uris.body.request_uris, 'request_uris dropped');
  // The token endpoint with a client assertion naming the bait: nothing registered, nothing fetched.
  const assertion = await fetch(`${a.urls.sales}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: 'e30.e30.sig',
      client_id: 'nobody',
    }).toString(),
  });
  t.equal(assertion.status, 401);
  t.equal(fetched, 0, 'the loopback listener was never contacted');
});

t.test('registration is rate limited per address and size-capped', async (t) => {
  const a = await startAgents(t, {
    oauth: { registration: { open: true, limits: { perAddress: 3 } } },
  });
  const url = `${a.urls.sales}/oauth/register`;
  const big = await postJson(url, { ...ccClient, client_name: 'x'.repeat(30_000) });
  t.equal(big.status, 413, 'a 30 KB registration is refused unread');
  const statuses: number[] = [];
  let retry: string | null = null;
  for (let i = 0; i < 5; i++) {
    const r = await postJson(url, ccClient);
    statuses.push(r.status);
    retry ??= r.headers.get('retry-after');
  }
  t.same(statuses, [201, 201, 201, 429, 429]);
  t.match(retry, /^[1-9][0-9]*$/, 'Retry-After names the wait');
});

t.test('a client never bound nor used expires', async (t) => {
  const a = await startAgents(t, {
    oauth: { registration: { open: true, unboundClientTtlSeconds: 0 } },
  });
  const reg = await postJson(`${a.urls.sales}/oauth/register`, ccClient);
  t.equal(reg.status, 201);
  t.same(await listClients(a.h.pool, a.h.schema), [], 'gone from the list');
  const bind = await cli(a, {
    action: 'bind',
    agent: 'sales',
    clientId: reg.body.client_id,
    principalId: 'demo-buyer',
  });
  t.equal(bind.code, 1);
  t.match(bind.err, /no registered client/);
  const r = await token(a.urls.sales, reg.body.client_id, reg.body.client_secret, 'svc:products');
  t.equal(r.status, 401, 'the expired client cannot authenticate');
});
