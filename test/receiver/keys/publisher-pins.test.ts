import t from 'tap';
import { pinsForAgent } from '../../../receiver/keys/publisher-pins.js';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import type { JWK } from '../../../shared/signing/keys.js';
import { docServer, manualClock } from './doc-server.js';
import { jwks } from './key-fixtures.js';

function pin(jwk: JWK, extra: Record<string, unknown> = {}) {
  return { kid: jwk.kid, kty: jwk.kty, crv: jwk.crv, x: jwk.x, ...extra };
}

t.test('inline pins are authoritative over the JWKS', async (t) => {
  const set = await jwks('pinned', 'unpinned', 'old', 'swapped');
  const [pinned, , old, swapped] = set.keys as [JWK, JWK, JWK, JWK];
  const clock = manualClock(Date.parse('2026-06-01T00:00:00Z'));
  const other = (await jwks('swapped')).keys[0]!;
  const r = new TrustedKeyResolver(
    parseTrust({
      senders: [
        {
          id: 'seller',
          jwks: set,
          pins: {
            signing_keys: [
              pin(pinned),
              pin(old, { revoked_at: '2026-07-01T00:00:00Z' }),
              pin(other), // same kid, different material
              { kid: 'only-in-pins', kty: 'OKP' },
            ],
          },
        },
      ],
    }),
    { clock: clock.now },
  );
  t.equal((await r.resolve('pinned'))?.senderId, 'seller');
  t.equal(await r.resolve('unpinned'), null, 'in the JWKS but not pinned: key_unknown');
  t.equal(await r.resolve('swapped'), null, 'pinned material must match the JWKS key');
  t.equal(await r.resolve('only-in-pins'), null, 'a pin alone is not a key');
  t.ok(await r.resolve('old'), 'before revoked_at');
  clock.advance(31 * 24 * 3600_000);
  t.equal(await r.resolve('old'), null, 'at or after revoked_at');
  t.ok(await r.resolve('pinned'));
  t.ok(swapped);
});

t.test('adagents.json pins: force refresh on unknown kid, with cooldown', async (t) => {
  const srv = await docServer(t);
  const clock = manualClock();
  const agentUrl = 'https://seller.example/mcp';
  const set = await jwks('k1', 'k2', 'k3');
  const [k1, k2, k3] = set.keys as [JWK, JWK, JWK];
  srv.json('/jwks.json', set);
  const adagents = (keys: JWK[]) => ({
    authorized_agents: [
      { url: 'https://other.example/mcp', signing_keys: [pin(k2)] },
      { url: agentUrl, authorized_for: 'all', signing_keys: keys.map((k) => pin(k)) },
    ],
  });
  srv.json('/.well-known/adagents.json', adagents([k1]), { 'cache-control': 'max-age=600' });
  const r = new TrustedKeyResolver(
    parseTrust({
      senders: [
        {
          id: 'seller',
          jwks_uri: srv.url('/jwks.json'),
          pins: { adagents_url: srv.url('/.well-known/adagents.json'), agent_url: agentUrl },
        },
      ],
    }),
    { allowLoopback: true, clock: clock.now },
  );
  t.ok(await r.resolve('k1'));
  t.equal(srv.hits('/.well-known/adagents.json'), 1);
  t.equal(await r.resolve('k2'), null, "another agent's pin does not count");
  t.equal(srv.hits('/.well-known/adagents.json'), 2, 'unknown kid forced a refresh');

  // The publisher adds k2; the next miss is inside the cooldown, the one after is not.
  srv.json('/.well-known/adagents.json', adagents([k1, k2]));
  clock.advance(10_000);
  t.equal(await r.resolve('k2'), null, 'cooldown: no refetch yet');
  t.equal(srv.hits('/.well-known/adagents.json'), 2);
  clock.advance(21_000);
  t.ok(await r.resolve('k2'), 'force refresh found the new pin');
  t.equal(srv.hits('/.well-known/adagents.json'), 3);

  // max-age 600 s bounds the cache: after it, k3 appears without a miss.
  srv.json('/.well-known/adagents.json', adagents([k1, k2, k3]));
  clock.advance(601_000);
  t.ok(await r.resolve('k3'));
  t.equal(srv.hits('/.well-known/adagents.json'), 4);

  // An outage keeps the last good pins.
  srv.raw('/.well-known/adagents.json', 'down', 503);
  clock.advance(3600_000);
  t.ok(await r.resolve('k1'));
  t.ok(await r.resolve('k3'));
});

t.test(
  'adagents.json never loaded: fail closed; no pins for the agent: JWKS decides',
  async (t) => {
    const srv = await docServer(t);
    const set = await jwks('k1');
    srv.json('/jwks.json', set);
    srv.raw('/adagents.json', '{"authorized_agents":[', 200);
    const trust = parseTrust({
      senders: [
        {
          id: 's',
          agent_url: srv.url('/mcp'),
          pins: { adagents_url: srv.url('/adagents.json') },
        },
      ],
    });
    srv.json('/.well-known/brand.json', {
      agents: [{ type: 'sales', id: 's', url: srv.url('/mcp'), jwks_uri: srv.url('/jwks.json') }],
    });
    const r = new TrustedKeyResolver(trust, { allowLoopback: true });
    t.equal(await r.resolve('k1'), null, 'malformed adagents.json: refused');
    t.equal((await r.resolveUnpinned('k1'))?.senderId, 's', 'unpinned lookup still finds it');

    const clock = manualClock();
    const r2 = new TrustedKeyResolver(trust, { allowLoopback: true, clock: clock.now });
    srv.json('/adagents.json', {
      authorized_agents: [{ url: srv.url('/mcp'), authorized_for: 'all' }],
    });
    t.equal((await r2.resolve('k1'))?.senderId, 's', 'agent listed without signing_keys');
  },
);

t.test('adagents.json authoritative_location is followed once', async (t) => {
  const srv = await docServer(t);
  const set = await jwks('k1');
  srv.json('/jwks.json', set);
  srv.json('/.well-known/adagents.json', { authoritative_location: srv.url('/cdn/adagents.json') });
  srv.json('/cdn/adagents.json', {
    authorized_agents: [{ url: 'https://a.example/', signing_keys: [pin(set.keys[0]!)] }],
  });
  const r = new TrustedKeyResolver(
    parseTrust({
      senders: [
        {
          id: 's',
          jwks_uri: srv.url('/jwks.json'),
          pins: {
            adagents_url: srv.url('/.well-known/adagents.json'),
            agent_url: 'https://a.example/',
          },
        },
      ],
    }),
    { allowLoopback: true },
  );
  t.ok(await r.resolve('k1'));
});

t.test('pinsForAgent validates the document', async (t) => {
  t.throws(() => pinsForAgent({}, 'https://a/'), /authorized_agents/);
  t.throws(() =>
    pinsForAgent({ authorized_agents: [{ url: 'https://a/', signing_keys: {} }] }, 'https://a/'),
  );
  t.throws(() =>
    pinsForAgent(
      { authorized_agents: [{ url: 'https://a/', signing_keys: [{ kid: 'x' }] }] },
      'https://a/',
    ),
  );
  t.throws(() =>
    pinsForAgent(
      {
        authorized_agents: [
          { url: 'https://a/', signing_keys: [{ kid: 'x', kty: 'OKP', revoked_at: 'soon' }] },
        ],
      },
      'https://a/',
    ),
  );
  t.equal(pinsForAgent({ authorized_agents: [{ url: 'https://b/' }] }, 'https://a/'), null);
  t.same(
    [
      ...(pinsForAgent(
        { authorized_agents: [{ url: 'https://a/', signing_keys: [{ kid: 'x', kty: 'OKP' }] }] },
        'https://a/',
      )?.keys() ?? []),
    ],
    ['x'],
  );
});
