/**
 * The `identity.brand_json_url` bootstrap (supplement §2.6): a sender configured by agent
 * URL and capabilities URL finds its keys through the brand.json its capabilities name, with
 * no redirect, bound to the agent by registrable domain (pinned PSL snapshot) or by the
 * brand.json's `authorized_operators[]`. Every failure answers its discovery code, over
 * HTTP a 401 naming it, never a 500. Real HTTP on 127.0.0.1 under real host names.
 */
import t, { type Test } from 'tap';
import { PSL_SNAPSHOT, registrableDomain } from '../../../receiver/keys/registrable-domain.js';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { testDatabase } from '../../helpers/db.js';
import { docServer, manualClock } from './doc-server.js';
import { jwksOf, namedHostFetch, receiverOver, signingKey } from './e2e.js';
import { outcome } from './key-fixtures.js';

const { pool, schema } = testDatabase(t, 'rbrurl');
const HOSTS = [
  'seller.example',
  'agent.seller.example',
  'keys.seller.example',
  'agent.saas-platform.example',
  'a.github.io',
  'b.github.io',
  'x.seller.co.uk',
  'seller.co.uk',
];

async function world(t: Test, agentHost = 'agent.seller.example', brandHost = 'seller.example') {
  const srv = await docServer(t);
  const port = new URL(srv.origin).port;
  const at = (host: string, path: string) => `https://${host}:${port}${path}`;
  const agentUrl = at(agentHost, '/mcp');
  const brandJsonUrl = at(brandHost, '/brand/brand.json');
  const key = await signingKey(`bk-${Math.random().toString(36).slice(2, 8)}`);
  srv.json('/keys/jwks.json', jwksOf(key));
  srv.json('/caps.json', { identity: { brand_json_url: brandJsonUrl } });
  const brand = (doc: Record<string, unknown>) => srv.json('/brand/brand.json', doc);
  brand({
    agents: [
      {
        type: 'sales',
        id: 'sales',
        url: agentUrl,
        jwks_uri: at('keys.seller.example', '/keys/jwks.json'),
      },
    ],
  });
  const clock = manualClock(Date.now());
  const resolver = () =>
    new TrustedKeyResolver(
      parseTrust({
        senders: [
          { id: 'seller', agent_url: agentUrl, capabilities_url: at(agentHost, '/caps.json') },
        ],
      }),
      { fetch: namedHostFetch(HOSTS), clock: clock.now },
    );
  return { srv, at, agentUrl, brandJsonUrl, key, brand, resolver, clock };
}

t.test(
  'bootstrap: capabilities -> brand_json_url -> agents[] -> jwks_uri, over HTTP',
  async (t) => {
    const w = await world(t);
    const { deliver, events } = await receiverOver(t, pool, schema, w.resolver());
    const res = await deliver(w.key);
    t.equal(res.status, 200);
    t.equal(events[0]?.sender, 'seller');
    t.equal(w.srv.hits('/caps.json'), 1);
    t.equal(w.srv.hits('/brand/brand.json'), 1);
    t.equal(w.srv.hits('/.well-known/brand.json'), 0, "the agent origin's brand.json is not used");
  },
);

t.test('no jwks_uri in the entry: /.well-known/jwks.json at the agent origin', async (t) => {
  const w = await world(t);
  w.brand({ agents: [{ type: 'sales', id: 'sales', url: w.agentUrl }] });
  w.srv.json('/.well-known/jwks.json', jwksOf(w.key));
  t.equal(await outcome(w.resolver().resolve(w.key.kid)), 'seller');
  t.equal(w.srv.hits('/.well-known/jwks.json'), 1);
});

t.test('registrable domains differ: brand_origin_mismatch unless delegated', async (t) => {
  const w = await world(t, 'agent.saas-platform.example', 'seller.example');
  const entry = {
    type: 'sales',
    id: 'sales',
    url: w.agentUrl,
    jwks_uri: w.at('keys.seller.example', '/keys/jwks.json'),
  };
  w.brand({ agents: [entry] });
  t.equal(
    await outcome(w.resolver().resolve(w.key.kid)),
    'request_signature_brand_origin_mismatch',
  );
  w.brand({ agents: [entry], authorized_operators: ['other.example'] });
  t.equal(
    await outcome(w.resolver().resolve(w.key.kid)),
    'request_signature_brand_origin_mismatch',
  );
  w.brand({ agents: [entry], authorized_operators: ['saas-platform.example'] });
  t.equal(await outcome(w.resolver().resolve(w.key.kid)), 'seller', 'delegated by domain');
  w.brand({
    agents: [entry],
    authorized_operators: [{ domain: 'saas-platform.example', brands: ['x'] }],
  });
  t.equal(await outcome(w.resolver().resolve(w.key.kid)), 'seller', 'delegated by object');
  for (const bad of ['saas-platform.example', 42, [{ domain: 7 }], [{}], ['not a domain!']]) {
    w.brand({ agents: [entry], authorized_operators: bad });
    t.equal(
      await outcome(w.resolver().resolve(w.key.kid)),
      'request_signature_brand_json_malformed',
      `authorized_operators ${JSON.stringify(bad)}`,
    );
  }
});

t.test('private PSL suffixes separate tenants; multi-label suffixes bind', async (t) => {
  const gh = await world(t, 'a.github.io', 'b.github.io');
  t.equal(
    await outcome(gh.resolver().resolve(gh.key.kid)),
    'request_signature_brand_origin_mismatch',
    'a.github.io and b.github.io are different operators',
  );
  const uk = await world(t, 'x.seller.co.uk', 'seller.co.uk');
  t.equal(await outcome(uk.resolver().resolve(uk.key.kid)), 'seller');
  t.equal(registrableDomain('x.seller.co.uk'), 'seller.co.uk');
  t.equal(registrableDomain('a.github.io'), 'a.github.io');
  t.equal(registrableDomain('127.0.0.1'), '127.0.0.1');
  t.equal(registrableDomain('Agent.Seller.Example.'), 'seller.example');
  t.match(PSL_SNAPSHOT, { library: 'tldts', date: /^\d{4}-\d{2}-\d{2}$/ });
  const { version } = (await import('tldts/package.json', { with: { type: 'json' } })).default;
  t.equal(version, PSL_SNAPSHOT.version, 'the pinned snapshot is the installed one');
});

t.test('brand_json_url missing or unusable: brand_json_url_missing', async (t) => {
  const w = await world(t);
  for (const identity of [
    {},
    { brand_json_url: '' },
    { brand_json_url: 42 },
    { brand_json_url: 'http://seller.example/brand.json' },
    { brand_json_url: 'not a url' },
  ]) {
    w.srv.json('/caps.json', { identity });
    t.equal(
      await outcome(w.resolver().resolve(w.key.kid)),
      'request_signature_brand_json_url_missing',
      JSON.stringify(identity),
    );
  }
  w.srv.json('/caps.json', {});
  t.equal(
    await outcome(w.resolver().resolve(w.key.kid)),
    'request_signature_brand_json_url_missing',
  );
});

t.test('capabilities unreachable: capabilities_unreachable, over HTTP a 401', async (t) => {
  const w = await world(t);
  w.srv.raw('/caps.json', 'nope', 500);
  t.equal(
    await outcome(w.resolver().resolve(w.key.kid)),
    'request_signature_capabilities_unreachable',
  );
  w.srv.raw('/caps.json', '{"identity":{},"identity":{}}');
  t.equal(
    await outcome(w.resolver().resolve(w.key.kid)),
    'request_signature_capabilities_unreachable',
  );
  const { deliver, events } = await receiverOver(t, pool, schema, w.resolver());
  const res = await deliver(w.key);
  t.equal(res.status, 401, 'a clear error, never a 500');
  t.equal(res.wwwAuthenticate, 'Signature error="request_signature_capabilities_unreachable"');
  t.equal(events.length, 0);
});

t.test('no redirect of any kind in the bootstrap', async (t) => {
  const w = await world(t);
  w.srv.json('/hosted.json', { agents: [{ type: 'sales', id: 's', url: w.agentUrl }] });
  w.brand({ authoritative_location: w.at('seller.example', '/hosted.json') });
  t.equal(await outcome(w.resolver().resolve(w.key.kid)), 'request_signature_brand_json_malformed');
  w.brand({ house: 'seller.example' });
  t.equal(await outcome(w.resolver().resolve(w.key.kid)), 'request_signature_brand_json_malformed');
  w.srv.handle('/brand/brand.json', (_req, res) => {
    res.writeHead(302, { location: w.at('seller.example', '/hosted.json') }).end();
  });
  t.equal(
    await outcome(w.resolver().resolve(w.key.kid)),
    'request_signature_brand_json_unreachable',
    'an HTTP redirect is not followed',
  );
  t.equal(w.srv.hits('/hosted.json'), 0);
});

t.test('brand.json failures: their codes', async (t) => {
  const w = await world(t);
  const cases: Array<[string, () => void, string]> = [
    ['404', () => w.srv.raw('/brand/brand.json', '{}', 404), 'brand_json_unreachable'],
    [
      'over 256 KiB',
      () => w.brand({ agents: [], pad: 'x'.repeat(257 * 1024) }),
      'brand_json_unreachable',
    ],
    ['not JSON', () => w.srv.raw('/brand/brand.json', '{"agents":'), 'brand_json_malformed'],
    [
      'duplicate keys',
      () => w.srv.raw('/brand/brand.json', '{"agents":[],"agents":[]}'),
      'brand_json_malformed',
    ],
    ['an array', () => w.srv.raw('/brand/brand.json', '[]'), 'brand_json_malformed'],
    [
      'jwks_uri not a string',
      () => w.brand({ agents: [{ url: w.agentUrl, jwks_uri: 1 }] }),
      'brand_json_malformed',
    ],
    [
      'jwks_uri http',
      () => w.brand({ agents: [{ url: w.agentUrl, jwks_uri: 'http://keys.seller.example/j' }] }),
      'brand_json_malformed',
    ],
    ['no agents', () => w.brand({ brands: [] }), 'agent_not_in_brand_json'],
    [
      'agent absent',
      () => w.brand({ agents: [{ url: `${w.agentUrl}/` }] }),
      'agent_not_in_brand_json',
    ],
    [
      'agent twice',
      () => w.brand({ agents: [{ url: w.agentUrl }, { url: w.agentUrl }] }),
      'brand_json_ambiguous',
    ],
  ];
  for (const [name, breakIt, code] of cases) {
    breakIt();
    t.equal(await outcome(w.resolver().resolve(w.key.kid)), `request_signature_${code}`, name);
  }
});

t.test('JWKS unreachable after discovery: jwks_unavailable; outage keeps good keys', async (t) => {
  const w = await world(t);
  const r = w.resolver();
  t.equal(await outcome(r.resolve(w.key.kid)), 'seller');
  w.srv.raw('/brand/brand.json', 'down', 503);
  w.srv.raw('/caps.json', 'down', 503);
  w.clock.advance(10 * 60_000);
  t.equal(await outcome(r.resolve(w.key.kid)), 'seller', 'previous good documents kept');
  const fresh = await world(t);
  fresh.srv.raw('/keys/jwks.json', 'gone', 404);
  t.equal(
    await outcome(fresh.resolver().resolve(fresh.key.kid)),
    'request_signature_jwks_unavailable',
  );
});

t.test('key_origins composes with the bootstrap', async (t) => {
  const w = await world(t);
  w.srv.json('/caps.json', {
    identity: {
      brand_json_url: w.brandJsonUrl,
      key_origins: { webhook_signing: 'cdn.other.example' },
    },
  });
  t.equal(await outcome(w.resolver().resolve(w.key.kid)), 'request_signature_key_origin_mismatch');
  w.srv.json('/caps.json', {
    identity: {
      brand_json_url: w.brandJsonUrl,
      key_origins: { webhook_signing: 'keys.seller.example' },
    },
  });
  t.equal(await outcome(w.resolver().resolve(w.key.kid)), 'seller');
});
