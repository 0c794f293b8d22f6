/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * Auth over the wire: OAuth dynamic registration and the grants (client_credentials,
 * authorization_code with PKCE through the dev interaction pages, refresh_token), scopes
 * mapped to permissions, tokens bound to one agent; and the auth matrix (API key, JWT,
 * missing, invalid, expired, insufficient, barred principal) over MCP and A2A.
 */
import { createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { AgentClient } from '../../../agents/client/agent-client.js';
import { issueToken } from '../../../agents/auth/authenticate.js';
import { ALL_PERMISSIONS } from '../../../agents/auth/principal.js';
import { bindClient } from '../../../agents/oauth/bindings.js';
import type { OAuthServer } from '../../../agents/oauth/server.js';
import { postJson, startAgents } from './support.js';

const HOUR = 3600_000;

function form(values: Record<string, string>): string {
  return new URLSearchParams(values).toString();
}

let iat = '';
async function register(origin: string, body: unknown) {
  return postJson(`${origin}/oauth/register`, body, { authorization: `Bearer ${iat}` });
}
function useOAuth(oauth: OAuthServer | null): void {
  iat = oauth!.initialAccessToken!;
}
const operator = { actor: 'test-operator', via: 'cli' as const };

t.test('OAuth: registration, client_credentials, scopes to permissions, audience', async (t) => {
  const { urls, h, oauth } = await startAgents(t, { oauth: true });
  useOAuth(oauth);
  const reg = await register(urls.sales, {
    client_name: 'buyer app',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: 'svc:products svc:media_buys',
  });
  t.equal(reg.status, 201, JSON.stringify(reg.body));
  t.type(reg.body.client_id, 'string');
  t.type(reg.body.client_secret, 'string');

  const bad = await register(urls.sales, { redirect_uris: 'https://x.example/cb' });
  t.equal(bad.status, 400);
  t.match(bad.body.error, /^invalid_(client_metadata|redirect_uri)$/);
  const notJson = await postJson(`${urls.sales}/oauth/register`, '{', {
    authorization: `Bearer ${iat}`,
  });
  t.equal(notJson.status, 400);
  await bindClient(
    h.pool,
    h.schema,
    { agent: 'sales', clientId: reg.body.client_id, principalId: 'demo-buyer' },
    operator,
  );

  const basic = Buffer.from(`${reg.body.client_id}:${reg.body.client_secret}`).toString('base64');
  const tokenRes = await fetch(`${urls.sales}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${basic}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: form({ grant_type: 'client_credentials', scope: 'svc:products' }),
  });
  const token = (await tokenRes.json()) as any;
  t.equal(tokenRes.status, 200, JSON.stringify(token));
  const [, payload] = token.access_token.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  t.equal(claims.sub, reg.body.client_id);
  t.equal(claims.aud, urls.sales);
  t.equal(claims.scope, 'svc:products');

  const wrongSecret = await fetch(`${urls.sales}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${reg.body.client_id}:nope`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: form({ grant_type: 'client_credentials', scope: 'svc:products' }),
  });
  t.equal(wrongSecret.status, 401);

  // svc:products gives products read: full catalog, but no media buys.
  const c = new AgentClient({ agentUrl: urls.sales, token: token.access_token });
  t.teardown(() => c.close());
  const products = await c.call('get_products', {
    brief: 'video',
    brand_manifest: { url: 'https://acme.example' },
  });
  t.equal(products.ok, true);
  t.ok(
    (products.body.products as Array<{ pricing_options?: unknown[] }>).some(
      (p) => (p.pricing_options ?? []).length > 0,
    ),
    'priced catalog with the token',
  );
  const buy = await c.call('create_media_buy', {
    buyer_ref: 'o',
    brand_manifest: { url: 'https://acme.example' },
    packages: [
      {
        buyer_ref: 'p',
        product_id: 'video_olv_news',
        pricing_option_id: 'olv_news_cpm',
        budget: 100,
      },
    ],
    start_time: { type: 'asap' },
    end_time: new Date(h.clock.nowMs() + 24 * HOUR).toISOString(),
  });
  t.equal(buy.httpStatus, 403, 'a token without the right is an HTTP 403');
  t.match(buy.body, { errors: [{ code: 'INSUFFICIENT_PERMISSIONS' }] });

  // A sales token is refused by the creative agent.
  const cross = new AgentClient({ agentUrl: urls.creative, token: token.access_token });
  t.teardown(() => cross.close());
  const crossRes = await cross.call('list_creative_formats', {});
  t.equal(crossRes.httpStatus, 401);
  t.match(crossRes.body, { errors: [{ code: 'AUTH_INVALID' }] });

  const disc = await fetch(`${urls.sales}/.well-known/oauth-authorization-server`);
  const meta = (await disc.json()) as any;
  t.equal(meta.registration_endpoint, `${urls.sales}/oauth/register`);
  t.equal(meta.token_endpoint, `${urls.sales}/oauth/token`);
  const prm = (await (
    await fetch(`${urls.signals}/.well-known/oauth-protected-resource`)
  ).json()) as any;
  t.same(prm.authorization_servers, [`${urls.signals}/oauth`]);
  t.equal(prm.resource, urls.signals);
});

t.test('OAuth: authorization_code with PKCE, then refresh_token', async (t) => {
  const { urls, h, oauth } = await startAgents(t, { oauth: { devLogin: 'test' } });
  useOAuth(oauth);
  const { api_key: webKey } = await h.core.onboardPrincipal({
    agent: 'sales',
    principalId: 'web-buyer',
    permissions: { media_buys: ['read', 'write'], reports: ['read'] },
  });
  const redirect = 'http://127.0.0.1:9/cb';
  const reg = await register(urls.sales, {
    client_name: 'buyer web app',
    redirect_uris: [redirect],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: 'openid svc:products svc:media_buys svc:creatives',
  });
  t.equal(reg.status, 201, JSON.stringify(reg.body));
  await bindClient(
    h.pool,
    h.schema,
    { agent: 'sales', clientId: reg.body.client_id, principalId: 'web-buyer' },
    operator,
  );
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
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
  let res = await go(
    `${urls.sales}/oauth/authorize?${form({
      client_id: reg.body.client_id,
      response_type: 'code',
      redirect_uri: redirect,
      scope: 'openid svc:media_buys',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st1',
    })}`,
  );
  let code: string | null = null;
  for (let i = 0; i < 8 && !code; i++) {
    const location = res.headers.get('location');
    if (location) {
      const u = new URL(location, urls.sales);
      if (u.origin === 'http://127.0.0.1:9') {
        code = u.searchParams.get('code');
        t.equal(u.searchParams.get('state'), 'st1');
        break;
      }
      res = await go(u.toString());
      continue;
    }
    const html = await res.text();
    const action = /action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    t.ok(action && prompt, `interaction page ${i}`);
    res = await go(new URL(action!, urls.sales).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form(
        prompt === 'login' ? { prompt, login: 'web-buyer', secret: webKey } : { prompt: prompt! },
      ),
    });
  }
  t.ok(code, 'authorization code issued');
  const basic = Buffer.from(`${reg.body.client_id}:${reg.body.client_secret}`).toString('base64');
  const exchange = async (body: Record<string, string>) => {
    const r = await fetch(`${urls.sales}/oauth/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: form(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const noVerifier = await exchange({
    grant_type: 'authorization_code',
    code: code!,
    redirect_uri: redirect,
    code_verifier: randomBytes(32).toString('base64url'),
  });
  t.equal(noVerifier.status, 400, 'a wrong PKCE verifier is refused');
  const tokens = await exchange({
    grant_type: 'authorization_code',
    code: code!,
    redirect_uri: redirect,
    code_verifier: verifier,
  });
  t.equal(tokens.status, 200, JSON.stringify(tokens.body));
  t.type(tokens.body.refresh_token, 'string');
  const claims = JSON.parse(
    Buffer.from(tokens.body.access_token.split('.')[1], 'base64url').toString(),
  );
  t.equal(claims.sub, 'web-buyer');
  t.match(claims.scope, /svc:media_buys/);

  const c = new AgentClient({ agentUrl: urls.sales, token: tokens.body.access_token });
  t.teardown(() => c.close());
  t.equal((await c.call('get_media_buys', {})).ok, true, 'media_buys read via the scope');

  const refreshed = await exchange({
    grant_type: 'refresh_token',
    refresh_token: tokens.body.refresh_token,
  });
  t.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
  t.type(refreshed.body.access_token, 'string');
  const badRefresh = await exchange({ grant_type: 'refresh_token', refresh_token: 'nope' });
  t.equal(badRefresh.status, 400);
});

t.test('auth matrix over MCP and A2A', async (t) => {
  const { urls, h } = await startAgents(t);
  const secrets = h.core.secrets;
  const now = Math.floor(Date.now() / 1000);
  const valid = await h.core.issueToken('sales', 'demo-buyer', ALL_PERMISSIONS);
  const expired = await issueToken({
    secret: secrets.sales,
    agent: 'sales',
    sub: 'demo-buyer',
    permissions: { media_buys: ['read'] },
    now: now - 7200,
    ttlSeconds: 60,
  });
  const viewerKey = h.keys['sales:demo-viewer']!;
  const blockedKey = h.keys['signals:demo-blocked']!;
  const cases: Array<{
    name: string;
    agent: 'sales' | 'signals';
    creds: { apiKey?: string; token?: string };
    task: string;
    params: Record<string, unknown>;
    code: string | null;
  }> = [
    {
      name: 'no credentials',
      agent: 'sales',
      creds: {},
      task: 'get_media_buys',
      params: {},
      code: 'AUTH_REQUIRED',
    },
    {
      name: 'valid JWT',
      agent: 'sales',
      creds: { token: valid },
      task: 'get_media_buys',
      params: {},
      code: null,
    },
    {
      name: 'expired JWT',
      agent: 'sales',
      creds: { token: expired },
      task: 'get_media_buys',
      params: {},
      code: 'AUTH_INVALID',
    },
    {
      name: 'garbage JWT',
      agent: 'sales',
      creds: { token: 'a.b.c' },
      task: 'get_media_buys',
      params: {},
      code: 'AUTH_INVALID',
    },
    {
      name: 'viewer writes',
      agent: 'sales',
      creds: { apiKey: viewerKey },
      task: 'sync_creatives',
      params: { creatives: [] },
      code: 'INSUFFICIENT_PERMISSIONS',
    },
    {
      name: 'public task, no credentials',
      agent: 'sales',
      creds: {},
      task: 'list_authorized_properties',
      params: {},
      code: null,
    },
    {
      name: 'barred principal',
      agent: 'signals',
      creds: { apiKey: blockedKey },
      task: 'get_signals',
      params: {
        signal_spec: 'x',
        deliver_to: {
          deployments: [{ type: 'platform', platform: 'the-trade-desk' }],
          countries: ['US'],
        },
      },
      code: 'AGENT_ACCESS_DENIED',
    },
  ];
  for (const transport of ['mcp', 'a2a'] as const) {
    for (const c of cases) {
      const client = new AgentClient({ agentUrl: urls[c.agent], transport, ...c.creds });
      const r = await client.call(c.task, c.params);
      await client.close();
      if (c.code === null) t.equal(r.ok, true, `${transport} ${c.name}: ${JSON.stringify(r.body)}`);
      else {
        const body = r.body as any;
        const code = body.error?.code ?? body.errors?.[0]?.code;
        t.equal(code, c.code, `${transport} ${c.name}`);
      }
    }
  }
});
