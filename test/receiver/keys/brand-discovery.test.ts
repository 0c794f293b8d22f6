import t from 'tap';
import {
  BrandDiscoveryError,
  discoverJwksUri,
  houseBrandJsonUrl,
} from '../../../receiver/keys/brand-discovery.js';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { docServer, manualClock } from './doc-server.js';
import { jwks, outcome } from './key-fixtures.js';

const settings = { allowLoopback: true };

async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof BrandDiscoveryError) return err.code;
    throw err;
  }
  return 'resolved';
}

t.test('agent listed with a jwks_uri: its keys resolve to the sender', async (t) => {
  const srv = await docServer(t);
  const agentUrl = srv.url('/mcp');
  srv.json('/.well-known/brand.json', {
    house: { domain: 'seller.example', name: 'Seller' },
    brands: [{ id: 'seller' }],
    agents: [
      { type: 'buying', id: 'other', url: srv.url('/other') },
      { type: 'sales', id: 'sales_agent', url: agentUrl, jwks_uri: srv.url('/keys/webhooks.json') },
    ],
  });
  srv.json('/keys/webhooks.json', await jwks('agent-k1'));
  t.equal(await discoverJwksUri(agentUrl, settings), srv.url('/keys/webhooks.json'));
  const clock = manualClock();
  const r = new TrustedKeyResolver(
    parseTrust({ senders: [{ id: 'seller-c', agent_url: agentUrl }] }),
    { allowLoopback: true, clock: clock.now },
  );
  t.match(r.status(), [{ sender: 'seller-c', lastFetchMs: null, jwksUri: null }], 'not yet');
  t.equal((await r.resolve('agent-k1'))?.senderId, 'seller-c');
  t.equal(srv.hits('/.well-known/brand.json'), 2, 'one direct discovery, one by the resolver');
  t.match(
    r.status(),
    [{ sender: 'seller-c', kids: ['agent-k1'], jwksUri: srv.url('/keys/webhooks.json') }],
    'an agent_url sender shows the set brand.json led to',
  );
  t.type(r.status()[0]!.lastFetchMs, 'number', 'and its last fetch (for the console)');

  // Rotation through the discovered URL works like any jwks_uri.
  srv.json('/keys/webhooks.json', await jwks('agent-k1', 'agent-k2'));
  clock.advance(1000);
  t.equal((await r.resolve('agent-k2'))?.senderId, 'seller-c');
  t.equal(srv.hits('/.well-known/brand.json'), 2, 'brand.json is cached');
});

t.test('no jwks_uri: default /.well-known/jwks.json at the agent origin', async (t) => {
  const srv = await docServer(t);
  const agentUrl = srv.url('/a2a/agent');
  srv.json('/.well-known/brand.json', { agents: [{ type: 'sales', id: 'a', url: agentUrl }] });
  srv.json('/.well-known/jwks.json', await jwks('default-k'));
  t.equal(await discoverJwksUri(agentUrl, settings), srv.url('/.well-known/jwks.json'));
  const r = new TrustedKeyResolver(
    parseTrust({ senders: [{ id: 's', agent_url: agentUrl }] }),
    settings,
  );
  t.equal((await r.resolve('default-k'))?.senderId, 's');
});

t.test('agent not listed, listed twice, or URL not byte-equal: no keys', async (t) => {
  const srv = await docServer(t);
  const agentUrl = srv.url('/mcp');
  srv.json('/.well-known/jwks.json', await jwks('k'));

  srv.json('/.well-known/brand.json', { agents: [{ type: 'sales', id: 'x', url: srv.url('/x') }] });
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'agent_not_in_brand_json');
  const r = new TrustedKeyResolver(
    parseTrust({ senders: [{ id: 's', agent_url: agentUrl }] }),
    settings,
  );
  t.equal(
    await outcome(r.resolve('k')),
    'request_signature_agent_not_in_brand_json',
    'unlisted agent resolves nothing, and the answer says why',
  );

  srv.json('/.well-known/brand.json', {
    agents: [{ type: 'sales', id: 'x', url: `${agentUrl}/` }],
  });
  t.equal(
    await reason(discoverJwksUri(agentUrl, settings)),
    'agent_not_in_brand_json',
    'trailing slash is a different URL',
  );

  srv.json('/.well-known/brand.json', {
    agents: [
      { type: 'sales', id: 'a', url: agentUrl },
      { type: 'sales', id: 'b', url: agentUrl, jwks_uri: 'https://evil.example/jwks.json' },
    ],
  });
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'brand_json_ambiguous');

  srv.json('/.well-known/brand.json', { brands: [] });
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'agent_not_in_brand_json');
});

t.test('malformed or unreachable brand.json', async (t) => {
  const srv = await docServer(t);
  const agentUrl = srv.url('/mcp');
  srv.raw('/.well-known/brand.json', '{"agents":[],"agents":[]}');
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'brand_json_malformed');
  srv.raw('/.well-known/brand.json', '[1,2');
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'brand_json_malformed');
  srv.raw('/.well-known/brand.json', '[]');
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'brand_json_malformed');
  srv.json('/.well-known/brand.json', { agents: [{ url: agentUrl, jwks_uri: 42 }] });
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'brand_json_malformed');
  srv.json('/.well-known/brand.json', { agents: [{ url: agentUrl, jwks_uri: 'ftp://x/jwks' }] });
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'brand_json_malformed');
  srv.json('/.well-known/brand.json', { agents: [], pad: 'x'.repeat(257 * 1024) });
  t.equal(
    await reason(discoverJwksUri(agentUrl, settings)),
    'brand_json_unreachable',
    'over 256 KiB',
  );
  srv.raw('/.well-known/brand.json', 'gone', 404);
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'brand_json_unreachable');
  t.equal(await reason(discoverJwksUri(agentUrl, {})), 'brand_json_unreachable', 'http refused');
});

t.test('one redirect through authoritative_location or house, never two', async (t) => {
  const srv = await docServer(t);
  const agentUrl = srv.url('/mcp');
  const final = {
    agents: [{ type: 'sales', id: 'a', url: agentUrl, jwks_uri: srv.url('/j.json') }],
  };

  srv.json('/.well-known/brand.json', { authoritative_location: srv.url('/hosted/brand.json') });
  srv.json('/hosted/brand.json', final);
  t.equal(await discoverJwksUri(agentUrl, settings), srv.url('/j.json'));

  srv.json('/.well-known/brand.json', { house: srv.origin.replace('http://', '') });
  // The house's brand.json is the same origin's /.well-known/brand.json here, which is itself
  // a redirect: the second hop must not be followed.
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'agent_not_in_brand_json');

  srv.json('/.well-known/brand.json', { authoritative_location: srv.url('/hop1.json') });
  srv.json('/hop1.json', { authoritative_location: srv.url('/hosted/brand.json') });
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'agent_not_in_brand_json');

  srv.json('/.well-known/brand.json', { authoritative_location: 'http://evil.example/b.json' });
  t.equal(await reason(discoverJwksUri(agentUrl, settings)), 'brand_json_malformed');
});

t.test('house redirect URL', async (t) => {
  t.equal(houseBrandJsonUrl('nikeinc.com', false), 'https://nikeinc.com/.well-known/brand.json');
  t.equal(
    houseBrandJsonUrl('127.0.0.1:8080', true),
    'http://127.0.0.1:8080/.well-known/brand.json',
  );
  t.throws(() => houseBrandJsonUrl('127.0.0.1:8080', false), BrandDiscoveryError);
  t.throws(() => houseBrandJsonUrl('evil.example/path', true), BrandDiscoveryError);
  t.throws(() => houseBrandJsonUrl('Upper.Example', false), BrandDiscoveryError);
});

t.test('house redirect followed once over HTTP', async (t) => {
  const house = await docServer(t);
  const seller = await docServer(t);
  const agentUrl = seller.url('/mcp');
  seller.json('/.well-known/brand.json', { house: house.origin.replace('http://', '') });
  house.json('/.well-known/brand.json', { agents: [{ type: 'sales', id: 'a', url: agentUrl }] });
  t.equal(await discoverJwksUri(agentUrl, settings), seller.url('/.well-known/jwks.json'));
});

t.test('brand.json outage keeps the discovered jwks_uri', async (t) => {
  const srv = await docServer(t);
  const agentUrl = srv.url('/mcp');
  const clock = manualClock();
  srv.json('/.well-known/brand.json', { agents: [{ type: 'sales', id: 'a', url: agentUrl }] });
  srv.json('/.well-known/jwks.json', await jwks('k1'));
  const r = new TrustedKeyResolver(parseTrust({ senders: [{ id: 's', agent_url: agentUrl }] }), {
    allowLoopback: true,
    clock: clock.now,
  });
  t.ok(await r.resolve('k1'));
  srv.raw('/.well-known/brand.json', 'down', 503);
  clock.advance(10 * 60_000);
  t.equal((await r.resolve('k1'))?.senderId, 's');
  t.equal(srv.hits('/.well-known/brand.json'), 2, 'a refresh was attempted');
});
