/**
 * `identity.key_origins.webhook_signing` (supplement §2.6): the resolved `jwks_uri` must be
 * served from the declared origin, else `request_signature_key_origin_mismatch` (the webhook
 * namespace has no twin); skipped only for a publisher-pinned tuple (§2.7). Real HTTP on
 * 127.0.0.1 under real host names (namedHostFetch), real keys.
 */
import t, { type Test } from 'tap';
import { readCapabilities } from '../../../receiver/keys/capabilities.js';
import { declaredKeyHost, keyOriginMatches } from '../../../receiver/keys/key-origin.js';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { publishedJwk } from '../../../shared/signing/keys.js';
import { testDatabase } from '../../helpers/db.js';
import { docServer, manualClock } from './doc-server.js';
import { jwksOf, namedHostFetch, profile, receiverOver, signingKey } from './e2e.js';
import { outcome } from './key-fixtures.js';

const { pool, schema } = testDatabase(t, 'rkorig');
const HOSTS = ['seller.example', 'keys.seller.example', 'cdn.other.example'];

async function world(t: Test) {
  const srv = await docServer(t);
  const port = new URL(srv.origin).port;
  const at = (host: string, path: string) => `https://${host}:${port}${path}`;
  const key = await signingKey(`wh-${Math.random().toString(36).slice(2, 8)}`);
  srv.json('/jwks.json', jwksOf(key));
  const caps = (identity: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    srv.json('/caps.json', {
      identity,
      webhook_signing: { supported: true, profile: profile.webhookTag, algorithms: ['ed25519'] },
      ...extra,
    });
  const sender = (extra: Record<string, unknown> = {}) => ({
    id: 'seller',
    jwks_uri: at('keys.seller.example', '/jwks.json'),
    capabilities_url: at('seller.example', '/caps.json'),
    ...extra,
  });
  const clock = manualClock(Date.now());
  const resolver = (s: Record<string, unknown>) =>
    new TrustedKeyResolver(parseTrust({ senders: [s] }), {
      fetch: namedHostFetch(HOSTS),
      clock: clock.now,
    });
  return { srv, port, at, key, caps, sender, resolver, clock };
}

t.test('declared origin matches: accepted over HTTP', async (t) => {
  const w = await world(t);
  w.caps({ key_origins: { webhook_signing: w.at('keys.seller.example', '') } });
  const { deliver, events } = await receiverOver(t, pool, schema, w.resolver(w.sender()));
  const res = await deliver(w.key);
  t.equal(res.status, 200);
  t.equal(events[0]?.sender, 'seller');
  t.equal(w.srv.hits('/caps.json'), 1, 'capabilities fetched once, then cached');
  t.equal((await deliver(w.key)).status, 200);
  t.equal(w.srv.hits('/caps.json'), 1);
});

t.test('declared origin differs: 401 request_signature_key_origin_mismatch', async (t) => {
  const w = await world(t);
  w.caps({ key_origins: { webhook_signing: 'https://cdn.other.example' } });
  const { deliver, events } = await receiverOver(t, pool, schema, w.resolver(w.sender()));
  const res = await deliver(w.key);
  t.equal(res.status, 401);
  t.equal(res.wwwAuthenticate, 'Signature error="request_signature_key_origin_mismatch"');
  t.equal(events.length, 0);
});

t.test('a bare host declaration compares host names; a port must match when named', async (t) => {
  const w = await world(t);
  w.caps({ key_origins: { webhook_signing: 'keys.seller.example' } });
  t.equal(await outcome(w.resolver(w.sender()).resolve(w.key.kid)), 'seller');
  w.caps({ key_origins: { webhook_signing: 'https://keys.seller.example:1' } });
  t.equal(
    await outcome(w.resolver(w.sender()).resolve(w.key.kid)),
    'request_signature_key_origin_mismatch',
    'another port',
  );
  w.caps({ key_origins: { webhook_signing: w.at('KEYS.Seller.Example', '') } });
  t.equal(await outcome(w.resolver(w.sender()).resolve(w.key.kid)), 'seller', 'case-folded');
});

t.test('the trust file declaration overrides the capabilities one', async (t) => {
  const w = await world(t);
  w.caps({ key_origins: { webhook_signing: 'https://cdn.other.example' } });
  const r = w.resolver(w.sender({ key_origins: { webhook_signing: 'keys.seller.example' } }));
  t.equal(await outcome(r.resolve(w.key.kid)), 'seller');
  // Inline only (no capabilities): still checked.
  const inline = w.resolver({
    id: 'seller',
    jwks_uri: w.at('keys.seller.example', '/jwks.json'),
    key_origins: { webhook_signing: 'cdn.other.example' },
  });
  t.equal(await outcome(inline.resolve(w.key.kid)), 'request_signature_key_origin_mismatch');
});

t.test('key_origins declared without webhook_signing: key_origin_missing', async (t) => {
  const w = await world(t);
  w.caps({ key_origins: { request_signing: 'https://keys.seller.example' } });
  t.equal(
    await outcome(w.resolver(w.sender()).resolve(w.key.kid)),
    'request_signature_key_origin_missing',
  );
  // No key_origins at all: nothing to check (the supplement: "when present").
  w.caps({ brand_json_url: 'https://seller.example/.well-known/brand.json' });
  t.equal(await outcome(w.resolver(w.sender()).resolve(w.key.kid)), 'seller');
  // Declared for other purposes by a seller that does not sign webhooks: not required.
  w.caps(
    { key_origins: { request_signing: 'https://keys.seller.example' } },
    { webhook_signing: { supported: false } },
  );
  t.equal(await outcome(w.resolver(w.sender()).resolve(w.key.kid)), 'seller');
});

t.test('governance keys on the webhook key origin: refused (co-tenancy)', async (t) => {
  const w = await world(t);
  w.caps({
    key_origins: {
      webhook_signing: 'https://keys.seller.example',
      governance_signing: 'https://keys.seller.example',
    },
  });
  t.equal(
    await outcome(w.resolver(w.sender()).resolve(w.key.kid)),
    'request_signature_key_origin_mismatch',
  );
});

t.test('capabilities unreachable or malformed: capabilities_unreachable', async (t) => {
  const w = await world(t);
  const unreachable = 'request_signature_capabilities_unreachable';
  const cases: Array<[string, () => void]> = [
    ['404', () => w.srv.raw('/caps.json', '{}', 404)],
    ['not JSON', () => w.srv.raw('/caps.json', '{"identity":')],
    ['duplicate keys', () => w.srv.raw('/caps.json', '{"identity":{},"identity":{}}')],
    ['an array', () => w.srv.json('/caps.json', [])],
    ['identity not an object', () => w.srv.json('/caps.json', { identity: 'x' })],
    [
      'key_origins not an object',
      () => w.srv.json('/caps.json', { identity: { key_origins: [] } }),
    ],
    [
      'webhook_signing origin not a string',
      () => w.srv.json('/caps.json', { identity: { key_origins: { webhook_signing: 42 } } }),
    ],
    [
      'webhook_signing origin with a path',
      () =>
        w.srv.json('/caps.json', {
          identity: { key_origins: { webhook_signing: 'https://keys.seller.example/jwks' } },
        }),
    ],
    ['over 64 KiB', () => w.srv.json('/caps.json', { identity: {}, pad: 'x'.repeat(65 * 1024) })],
  ];
  for (const [name, breakIt] of cases) {
    breakIt();
    t.equal(await outcome(w.resolver(w.sender()).resolve(w.key.kid)), unreachable, name);
  }
  // Over HTTP, the same code in WWW-Authenticate.
  const { deliver } = await receiverOver(t, pool, schema, w.resolver(w.sender()));
  const res = await deliver(w.key);
  t.equal(res.status, 401);
  t.equal(res.code, unreachable);
});

t.test('a capabilities outage keeps the last good document', async (t) => {
  const w = await world(t);
  w.caps({ key_origins: { webhook_signing: 'keys.seller.example' } });
  const r = w.resolver(w.sender());
  t.equal(await outcome(r.resolve(w.key.kid)), 'seller');
  w.srv.raw('/caps.json', 'down', 503);
  w.clock.advance(10 * 60_000);
  t.equal(await outcome(r.resolve(w.key.kid)), 'seller');
  t.equal(w.srv.hits('/caps.json'), 2, 'a refresh was tried');
});

t.test('pinned tuple: the key_origins check is skipped; unpinned: it applies', async (t) => {
  const w = await world(t);
  w.caps({ key_origins: { webhook_signing: 'https://cdn.other.example' } });
  const jwk = publishedJwk(w.key, profile);
  const pinned = w.resolver(
    w.sender({ pins: { signing_keys: [{ kid: jwk.kid, kty: jwk.kty, x: jwk.x }] } }),
  );
  const { deliver } = await receiverOver(t, pool, schema, pinned);
  t.equal((await deliver(w.key)).status, 200, 'pinned key from a mismatched origin: accepted');

  // adagents.json that pins nothing for this agent: not a pinned tuple.
  w.srv.json('/adagents.json', { authorized_agents: [{ url: 'https://other.example/mcp' }] });
  const unpinned = w.resolver(
    w.sender({
      pins: {
        adagents_url: w.at('seller.example', '/adagents.json'),
        agent_url: 'https://seller.example/mcp',
      },
    }),
  );
  t.equal(await outcome(unpinned.resolve(w.key.kid)), 'request_signature_key_origin_mismatch');
});

t.test('origin declarations', async (t) => {
  t.same(declaredKeyHost('https://keys.example'), { host: 'keys.example', withPort: true });
  t.same(declaredKeyHost('https://keys.example:8443/'), {
    host: 'keys.example:8443',
    withPort: true,
  });
  t.same(declaredKeyHost('https://keys.example:443'), { host: 'keys.example', withPort: true });
  t.same(declaredKeyHost('keys.example'), { host: 'keys.example', withPort: false });
  for (const bad of [
    '',
    ' ',
    'https://keys.example/path',
    'https://u:p@keys.example',
    'https://k.example?x',
    'https://[bad',
  ]) {
    t.equal(declaredKeyHost(bad), null, JSON.stringify(bad));
  }
  t.ok(keyOriginMatches('https://keys.example/.well-known/jwks.json', 'https://keys.example'));
  t.ok(keyOriginMatches('https://keys.example:8443/j', 'keys.example'), 'no port named: any');
  t.notOk(keyOriginMatches('https://keys.example:8443/j', 'https://keys.example'), 'origin: 443');
  t.ok(keyOriginMatches('https://keys.example:8443/j', 'keys.example:8443'));
  t.notOk(keyOriginMatches('https://keys.example/j', 'keys.example:8443'));
  t.notOk(keyOriginMatches('https://keys.example.evil/j', 'keys.example'));
  t.notOk(keyOriginMatches('https://a.keys.example/j', 'keys.example'), 'no subdomain match');
  t.ok(keyOriginMatches('https://xn--bcher-kva.example/j', 'https://bücher.example'), 'IDNA');
  t.notOk(keyOriginMatches('not a url', 'keys.example'));
});

t.test('readCapabilities: what is read, what is ignored', async (t) => {
  const read = readCapabilities({
    identity: {
      brand_json_url: 'https://s.example/.well-known/brand.json',
      key_origins: { webhook_signing: 'https://k.example' },
    },
    webhook_signing: { supported: true, delivery_retry_horizon_seconds: 172800 },
  });
  t.equal(read.webhookKeyOrigin, 'https://k.example');
  t.equal(read.deliveryRetryHorizonSeconds, 172800);
  t.equal(read.webhookSigning, true);
  for (const h of [86399, 604801, 1.5, '86400', null]) {
    const r = readCapabilities({ webhook_signing: { delivery_retry_horizon_seconds: h } });
    t.equal(r.deliveryRetryHorizonSeconds, undefined, `horizon ${String(h)} ignored`);
  }
  t.throws(() => readCapabilities({ webhook_signing: 'yes' }), { name: 'CapabilitiesError' });
});
