/**
 * The auth matrix: tiers x credentials (none, API key, JWT, scopes, expired, forged,
 * other agent's), permissions, agent access, EdDSA and JWKS keys.
 */
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import t from 'tap';
import { issueToken } from '../../agents/auth/authenticate.js';
import { permissionsFromScopes } from '../../agents/auth/principal.js';
import { errorResponse } from '../../agents/runtime/errors.js';
import { brandProfile } from '../../shared/brand.js';
import { buyer, harness, viewer } from './support/core.js';

t.test('tiers and credentials', async (t) => {
  const h = await harness(t);
  const token = await h.core.issueToken('sales', 'demo-buyer', {
    products: ['read'],
    media_buys: ['read', 'write'],
  });
  const bearer = { authorization: `Bearer ${token}` };

  // Public tasks: no credentials needed.
  t.equal((await h.ok('sales', 'list_authorized_properties', {})).status, 'completed');
  t.equal((await h.ok('sales', 'list_creative_formats', {})).status, 'completed');
  t.equal((await h.ok('creative', 'list_creative_formats', {})).status, 'completed');
  t.equal((await h.ok('sales', 'get_svc_capabilities', {})).status, 'completed');

  // Authenticated tasks without credentials: AUTH_REQUIRED, 401.
  for (const [agent, task] of [
    ['sales', 'create_media_buy'],
    ['sales', 'update_media_buy'],
    ['sales', 'sync_creatives'],
    ['sales', 'list_creatives'],
    ['sales', 'get_media_buy_delivery'],
    ['sales', 'provide_performance_feedback'],
    ['sales', 'get_media_buys'],
    ['creative', 'build_creative'],
    ['creative', 'preview_creative'],
    ['signals', 'get_signals'],
    ['signals', 'activate_signal'],
  ] as const) {
    const e = await h.err(agent, task, {});
    t.equal(e.code, 'AUTH_REQUIRED', `${agent}/${task}`);
    t.equal(e.status, 401);
  }

  // JWT with permissions works.
  const r = await h.ok('sales', 'get_media_buys', {}, bearer);
  t.same(r.media_buys, []);

  // Invalid credentials: AUTH_INVALID, 401, even on public tasks.
  for (const creds of [
    { apiKey: 'sales_not-a-real-key' },
    { authorization: 'Bearer not.a.jwt' },
    { authorization: 'Basic dXNlcjpwYXNz' },
    { authorization: `Bearer ${token.slice(0, -2)}xx` },
    { authorization: 'Bearer ' + 'a'.repeat(9000) },
  ]) {
    const e = await h.err('sales', 'get_products', {}, creds);
    t.equal(e.code, 'AUTH_INVALID');
    t.equal(e.status, 401);
  }
  const expired = await issueToken({
    secret: h.core.secrets.sales,
    agent: 'sales',
    sub: 'demo-buyer',
    now: Math.floor(Date.now() / 1000) - 7200,
    ttlSeconds: 60,
  });
  const e1 = await h.err('sales', 'get_media_buys', {}, { authorization: `Bearer ${expired}` });
  t.equal(e1.code, 'AUTH_INVALID');
  t.match(e1.message, /expired/);

  // A token without exp is refused.
  const noExp = await new SignJWT({ permissions: {} })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('x')
    .setIssuedAt()
    .sign(h.core.secrets.sales);
  t.equal(
    (await h.err('sales', 'get_media_buys', {}, { authorization: `Bearer ${noExp}` })).code,
    'AUTH_INVALID',
  );
  // Malformed permissions claim.
  const badPerm = await new SignJWT({ permissions: { media_buys: ['fly'] } })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('x')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(h.core.secrets.sales);
  t.match(
    (await h.err('sales', 'get_media_buys', {}, { authorization: `Bearer ${badPerm}` })).message,
    /permissions/,
  );

  // Credentials of one agent are invalid at another.
  const creativeToken = await h.core.issueToken('creative', 'demo-buyer', {
    creatives: ['read', 'write'],
  });
  t.equal(
    (await h.err('sales', 'list_creatives', {}, { authorization: `Bearer ${creativeToken}` })).code,
    'AUTH_INVALID',
  );
  t.equal(
    (await h.err('creative', 'build_creative', {}, { authorization: `Bearer ${token}` })).code,
    'AUTH_INVALID',
  );
  t.equal((await h.err('signals', 'get_signals', {}, buyer(h, 'sales'))).code, 'AUTH_INVALID');
  t.equal((await h.err('sales', 'get_media_buys', {}, buyer(h, 'signals'))).code, 'AUTH_INVALID');
  // Even signed with the right secret, a token for another audience fails.
  const wrongAud = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('demo-buyer')
    .setAudience('signals')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(h.core.secrets.sales);
  t.equal(
    (await h.err('sales', 'get_media_buys', {}, { authorization: `Bearer ${wrongAud}` })).code,
    'AUTH_INVALID',
  );

  // Permissions: the read-only principal cannot write.
  const e2 = await h.err('sales', 'create_media_buy', {}, viewer(h));
  t.equal(e2.code, 'INSUFFICIENT_PERMISSIONS');
  t.equal(e2.status, 403);
  t.equal(
    (await h.err('sales', 'sync_creatives', { creatives: [] }, viewer(h))).code,
    'INSUFFICIENT_PERMISSIONS',
  );
  t.equal(
    (await h.err('creative', 'build_creative', {}, viewer(h, 'creative'))).code,
    'INSUFFICIENT_PERMISSIONS',
  );
  t.equal((await h.ok('sales', 'list_creatives', {}, viewer(h))).status, 'completed');
  const noReports = await h.core.issueToken('sales', 'p2', { media_buys: ['read'] });
  t.equal(
    (await h.err('sales', 'get_media_buy_delivery', {}, { authorization: `Bearer ${noReports}` }))
      .code,
    'INSUFFICIENT_PERMISSIONS',
  );
  // public-limited: credentials lacking products.read are refused rather than silently downgraded.
  t.equal(
    (await h.err('sales', 'get_products', {}, { authorization: `Bearer ${noReports}` })).code,
    'INSUFFICIENT_PERMISSIONS',
  );

  // Agent access barred for a principal of the signal agent.
  const blocked = { apiKey: h.keys['signals:demo-blocked']! };
  const e3 = await h.err(
    'signals',
    'get_signals',
    {
      signal_spec: 'x',
      deliver_to: {
        deployments: [{ type: 'platform', platform: 'the-trade-desk' }],
        countries: ['US'],
      },
    },
    blocked,
  );
  t.equal(e3.code, 'AGENT_ACCESS_DENIED');
  t.equal(e3.status, 403);
  const refused = { code: 'AGENT_ACCESS_DENIED', message: e3.message, recovery: 'terminal' };
  t.same(errorResponse(e3, { brand: 'svc' }).body, {
    status: 'failed',
    errors: [refused],
    svc_error: refused,
  });
});

t.test('OAuth scopes map to permissions', async (t) => {
  t.same(permissionsFromScopes('openid svc:products svc:media_buys other:x', 'svc:'), {
    products: ['read'],
    media_buys: ['read', 'write', 'delete'],
    reports: ['read'],
  });
  const h = await harness(t);
  const scoped = await issueToken({
    secret: h.core.secrets.sales,
    agent: 'sales',
    sub: 'oauth-client-1',
    scope: 'svc:products svc:media_buys',
  });
  const creds = { authorization: `Bearer ${scoped}` };
  t.ok((await h.ok('sales', 'get_products', {}, creds)).products);
  t.equal((await h.ok('sales', 'get_media_buys', {}, creds)).status, 'completed');
  t.equal(
    (await h.err('sales', 'sync_creatives', { creatives: [] }, creds)).code,
    'INSUFFICIENT_PERMISSIONS',
    'no creatives scope',
  );
  const adcpScoped = await issueToken({
    secret: h.core.secrets.sales,
    agent: 'sales',
    sub: 'c2',
    scope: 'adcp:creatives',
  });
  t.equal(
    (await h.err('sales', 'list_creatives', {}, { authorization: `Bearer ${adcpScoped}` })).code,
    'INSUFFICIENT_PERMISSIONS',
    'other brand prefix grants nothing',
  );
});

t.test('EdDSA keys and an extra JWKS resolver', async (t) => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const h = await harness(t, { authKeys: { sales: { eddsaPublicKey: publicKey } } });
  const token = await new SignJWT({ permissions: { media_buys: ['read'] } })
    .setProtectedHeader({ alg: 'EdDSA' })
    .setSubject('ed-principal')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(privateKey);
  t.equal(
    (await h.ok('sales', 'get_media_buys', {}, { authorization: `Bearer ${token}` })).status,
    'completed',
  );
  t.equal(
    (await h.err('creative', 'preview_creative', {}, { authorization: `Bearer ${token}` })).code,
    'AUTH_INVALID',
    'EdDSA key configured for sales only',
  );
  const other = generateKeyPairSync('ed25519');
  const forged = await new SignJWT({})
    .setProtectedHeader({ alg: 'EdDSA' })
    .setSubject('x')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(other.privateKey);
  t.equal(
    (await h.err('sales', 'get_media_buys', {}, { authorization: `Bearer ${forged}` })).code,
    'AUTH_INVALID',
  );
});

t.test('onboarding a principal issues a working API key; revocation ends it', async (t) => {
  const h = await harness(t);
  const { api_key } = await h.core.onboardPrincipal({
    agent: 'sales',
    principalId: 'agency-42',
    permissions: { media_buys: ['read'] },
  });
  t.match(api_key, /^sales_/);
  t.equal((await h.ok('sales', 'get_media_buys', {}, { apiKey: api_key })).status, 'completed');
  t.equal(
    (await h.err('sales', 'create_media_buy', {}, { apiKey: api_key })).code,
    'INSUFFICIENT_PERMISSIONS',
  );
  t.equal(
    (await h.err('creative', 'preview_creative', {}, { apiKey: api_key })).code,
    'AUTH_INVALID',
  );
  t.equal(await h.core.revokeApiKeys('sales', 'agency-42'), 1);
  t.equal((await h.err('sales', 'get_media_buys', {}, { apiKey: api_key })).code, 'AUTH_INVALID');
  await t.rejects(
    h.core.onboardPrincipal({ agent: 'sales', principalId: 'bad id', permissions: {} }),
    { code: 'VALIDATION_ERROR' },
  );
  await t.rejects(
    h.core.onboardPrincipal({
      agent: 'sales',
      principalId: 'p',
      permissions: { media_buys: ['fly'] } as never,
    }),
    { code: 'VALIDATION_ERROR', field: 'permissions' },
  );
});

t.test(
  'SVC_BRAND=adcp: the published code for the spec codes the published enum lacks',
  async (t) => {
    const h = await harness(t, { profile: brandProfile('adcp') });
    const denied = await h.err('sales', 'create_media_buy', {}, viewer(h));
    t.equal(denied.code, 'PERMISSION_DENIED', 'not INSUFFICIENT_PERMISSIONS');
    t.equal(denied.status, 403);
    const barred = await h.err(
      'signals',
      'get_signals',
      { signal_spec: 'x', context: { trace: 'barred' } },
      { apiKey: h.keys['signals:demo-blocked']! },
    );
    t.equal(barred.code, 'PERMISSION_DENIED', 'not AGENT_ACCESS_DENIED');
    t.equal(barred.status, 403);
    const body = errorResponse(barred, { brand: 'adcp', context: { trace: 'barred' } }).body;
    t.match(body, {
      errors: [{ code: 'PERMISSION_DENIED', recovery: 'correctable' }],
      adcp_error: { code: 'PERMISSION_DENIED' },
      context: { trace: 'barred' },
    });
    // A task the agent does not have: the published code under both brands.
    const unknown = await h.err('sales', 'get_prodcts', {}, buyer(h));
    t.equal(unknown.code, 'UNSUPPORTED_FEATURE');
    t.equal(unknown.status, 404);
    t.match(unknown.suggestion, /get_products/);
  },
);
