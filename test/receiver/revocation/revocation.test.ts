import { CompactSign, FlattenedSign } from 'jose';
import t from 'tap';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import {
  PolledRevocationCheck,
  revocationSourcesFromTrust,
  type PolledRevocationOptions,
} from '../../../receiver/revocation/revocation-check.js';
import {
  RevocationListError,
  revocationTyp,
  verifyRevocationList,
} from '../../../receiver/revocation/revocation-list.js';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { brandProfile } from '../../../shared/brand.js';
import { generateSigningKey, publishedJwk, type SigningKey } from '../../../shared/signing/keys.js';
import { docServer, manualClock, type DocServer } from '../keys/doc-server.js';

const profile = brandProfile('adcp');
const T0 = Date.parse('2026-04-18T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

interface ListOpts {
  issuer?: string;
  updated?: number;
  nextUpdate?: number;
  kids?: string[];
  typ?: string;
  signer?: SigningKey;
  compact?: boolean;
  payload?: string;
}

async function fixtures(t: { teardown(fn: () => unknown): void }) {
  const srv = await docServer(t);
  const gov = (await generateSigningKey('ed25519', 'gov-a')).key;
  const hook = (await generateSigningKey('ed25519', 'hook-a')).key;
  const other = (await generateSigningKey('ed25519', 'gov-b')).key;
  const stranger = (await generateSigningKey('ed25519', 'stranger')).key;
  const trust = parseTrust({
    senders: [
      {
        id: 'seller-a',
        jwks: { keys: [publishedJwk(gov, profile), publishedJwk(hook, profile)] },
        revocation_url: srv.url('/revocations.json'),
      },
      { id: 'seller-b', jwks: { keys: [publishedJwk(other, profile)] } },
    ],
  });
  const resolver = new TrustedKeyResolver(trust);
  const sign = async (o: ListOpts = {}): Promise<string> => {
    const updated = o.updated ?? T0;
    const payload =
      o.payload ??
      JSON.stringify({
        version: 1,
        issuer: o.issuer ?? srv.origin,
        updated: iso(updated),
        next_update: iso(o.nextUpdate ?? updated + 600_000),
        revoked_jtis: [],
        revoked_kids: o.kids ?? ['hook-old'],
      });
    const key = o.signer ?? gov;
    const header = { alg: 'EdDSA', kid: key.kid, typ: o.typ ?? revocationTyp(profile) };
    const bytes = new TextEncoder().encode(payload);
    if (o.compact) return new CompactSign(bytes).setProtectedHeader(header).sign(key.privateKey);
    return JSON.stringify(
      await new FlattenedSign(bytes).setProtectedHeader(header).sign(key.privateKey),
    );
  };
  return { srv, trust, resolver, sign, gov, hook, other, stranger };
}

function check(
  f: { trust: ReturnType<typeof parseTrust>; resolver: TrustedKeyResolver },
  extra: Partial<PolledRevocationOptions> = {},
): PolledRevocationCheck {
  return new PolledRevocationCheck({
    profile,
    keys: f.resolver,
    sources: revocationSourcesFromTrust(f.trust),
    allowLoopback: true,
    ...extra,
  });
}

async function problem(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof RevocationListError) return err.code;
    throw err;
  }
  return 'accepted';
}

t.test('typ is built from the brand', async (t) => {
  t.equal(revocationTyp(brandProfile('adcp')), 'adcp-gov-revocation+jws');
  t.equal(revocationTyp(brandProfile('svc')), 'svc-gov-revocation+jws');
});

t.test('valid lists, flattened and compact, are accepted', async (t) => {
  const f = await fixtures(t);
  const base = {
    profile,
    keyFor: (kid: string) => f.resolver.resolveUnpinned(kid),
    senderId: 'seller-a',
    sourceUrl: f.srv.url('/revocations.json'),
  };
  const snap = await verifyRevocationList(await f.sign({ kids: ['x', 'y'] }), base);
  t.same([...snap.revokedKids], ['x', 'y']);
  t.equal(snap.nextUpdate - snap.updated, 600);
  t.same(snap.signedBy, { kid: 'gov-a', senderId: 'seller-a' });
  const compact = await verifyRevocationList(await f.sign({ compact: true }), base);
  t.ok(compact.revokedKids.has('hook-old'));
  t.ok(
    await verifyRevocationList(await f.sign({ issuer: f.srv.origin.replace('http://', '') }), base),
    'issuer as host',
  );
  t.ok(
    await verifyRevocationList(await f.sign({ signer: f.other }), { ...base, senderId: undefined }),
    "a global list may be signed by any trusted sender's key",
  );
});

t.test('invalid lists are refused with a reason', async (t) => {
  const f = await fixtures(t);
  const base = {
    profile,
    keyFor: (kid: string) => f.resolver.resolveUnpinned(kid),
    senderId: 'seller-a',
    sourceUrl: f.srv.url('/revocations.json'),
  };
  const v = async (o: ListOpts) => problem(verifyRevocationList(await f.sign(o), base));
  const good = JSON.parse(await f.sign()) as { signature: string; payload: string };
  const sig = good.signature;
  const flippedChar = sig[10] === 'A' ? 'B' : 'A'; // a middle character: all 6 bits are data
  const flipped = { ...good, signature: `${sig.slice(0, 10)}${flippedChar}${sig.slice(11)}` };
  t.equal(await problem(verifyRevocationList(JSON.stringify(flipped), base)), 'signature');
  const swapped = { ...good, payload: Buffer.from('{"version":1}').toString('base64url') };
  t.equal(await problem(verifyRevocationList(JSON.stringify(swapped), base)), 'signature');
  t.equal(await v({ typ: 'svc-gov-revocation+jws' }), 'typ', 'other brand');
  t.equal(await v({ typ: 'JWT' }), 'typ');
  t.equal(await v({ signer: f.other }), 'key', "another sender's key");
  t.equal(await v({ signer: f.stranger }), 'key', 'unknown key');
  t.equal(await v({ issuer: 'https://elsewhere.example' }), 'issuer');
  t.equal(await v({ nextUpdate: T0 }), 'window', 'next_update == updated');
  t.equal(await v({ nextUpdate: T0 - 1000 }), 'window', 'next_update < updated');
  t.equal(await v({ nextUpdate: T0 + 7 * 86400_000 + 1000 }), 'window', 'over 7 days');
  t.equal(await v({ nextUpdate: T0 + 7 * 86400_000 }), 'accepted', 'exactly 7 days');
  t.equal(await v({ payload: '{"version":2}' }), 'malformed');
  t.equal(
    await v({
      payload:
        '{"version":1,"version":1,"issuer":"x","updated":"2026-01-01T00:00:00Z","next_update":"2026-01-01T01:00:00Z","revoked_jtis":[],"revoked_kids":[]}',
    }),
    'malformed',
    'duplicate keys in payload',
  );
  t.equal(await problem(verifyRevocationList('not a jws', base)), 'malformed');
  t.equal(await problem(verifyRevocationList('{"protected":1}', base)), 'malformed');
  t.equal(await problem(verifyRevocationList('{"a":1,"a":2}', base)), 'malformed');
});

async function serve(srv: DocServer, body: string, etag?: string) {
  srv.handle('/revocations.json', (req, res) => {
    if (etag && req.headers['if-none-match'] === etag) {
      res.writeHead(304).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/jose+json', ...(etag ? { etag } : {}) });
    res.end(body);
  });
}

t.test('polled list: revoked kid, fresh, then stale past next_update + grace', async (t) => {
  const f = await fixtures(t);
  const clock = manualClock(T0);
  await serve(f.srv, await f.sign({ kids: ['hook-old'], nextUpdate: T0 + 600_000 }));
  const c = check(f, { clock: clock.now });
  const now = T0 / 1000;
  t.equal(c.status('hook-a', now), 'stale', 'never loaded: fail closed');
  await c.start();
  t.teardown(() => c.stop());
  t.equal(c.status('hook-old', now), 'revoked');
  t.equal(c.status('hook-a', now), 'ok');
  await f.resolver.resolve('hook-a');
  t.equal(c.status('hook-a', now), 'ok', 'known sender');
  const [d] = c.describe();
  t.equal(d!.nextPollInSeconds, 600, 'next poll follows next_update');
  t.equal(d!.lastFetchMs, T0, 'when it was fetched (the console shows it)');
  t.equal(d!.nextUpdate, now + 600, "the held list's next_update");
  // grace = max(4 x 600, 300) = 2400 s after next_update
  t.equal(d!.staleAt, now + 600 + 2400);
  t.equal(c.status('hook-a', now + 3000), 'ok', 'at the edge');
  t.equal(c.status('hook-a', now + 3001), 'stale');
  t.equal(c.status('hook-old', now + 99999), 'revoked', 'revoked stays revoked when stale');
  t.equal(c.status('gov-b', now + 3001), 'stale', 'kid of unknown sender: all lists apply');
  await f.resolver.resolve('gov-b');
  t.equal(c.status('gov-b', now + 3001), 'ok', "seller-a's list does not govern seller-b");
});

t.test(
  'a bad refresh keeps the previous list; a newer one replaces it; rollback refused',
  async (t) => {
    const f = await fixtures(t);
    const clock = manualClock(T0);
    await serve(f.srv, await f.sign({ kids: ['k1'] }));
    const c = check(f, { clock: clock.now });
    await c.pollNow();
    t.equal(c.status('k1', T0 / 1000), 'revoked');
    await serve(f.srv, await f.sign({ kids: [], signer: f.other }));
    await c.pollNow();
    t.equal(c.status('k1', T0 / 1000), 'revoked', 'list signed by the wrong sender ignored');
    await serve(f.srv, '{"truncated":');
    await c.pollNow();
    t.equal(c.status('k1', T0 / 1000), 'revoked');
    await serve(f.srv, await f.sign({ kids: ['k2'], updated: T0 + 60_000 }));
    clock.advance(60_000);
    await c.pollNow();
    t.equal(c.status('k1', T0 / 1000), 'ok', 'un-revoked by a newer list');
    t.equal(c.status('k2', T0 / 1000), 'revoked');
    await serve(f.srv, await f.sign({ kids: [], updated: T0 }));
    await c.pollNow();
    t.equal(c.status('k2', T0 / 1000), 'revoked', 'older list refused');
  },
);

t.test('polling interval clamped to [60 s, 30 min]; failures retry at the floor', async (t) => {
  const f = await fixtures(t);
  const clock = manualClock(T0);
  await serve(f.srv, await f.sign({ nextUpdate: T0 + 5_000 }));
  const c = check(f, { clock: clock.now });
  await c.start();
  c.stop();
  t.equal(c.describe()[0]!.nextPollInSeconds, 60);
  t.equal(c.describe()[0]!.staleAt, T0 / 1000 + 5 + 300, 'grace at least 300 s');

  await serve(f.srv, await f.sign({ nextUpdate: T0 + 5 * 86400_000 }));
  const c2 = check(f, { clock: clock.now });
  await c2.start();
  c2.stop();
  t.equal(c2.describe()[0]!.nextPollInSeconds, 1800);

  f.srv.raw('/revocations.json', 'down', 503);
  const c3 = check(f, { clock: clock.now });
  await c3.start();
  c3.stop();
  t.equal(c3.describe()[0]!.nextPollInSeconds, 60);
  t.equal(c3.describe()[0]!.loaded, false);
});

t.test('timers poll on schedule with ETag revalidation, and stop', async (t) => {
  const f = await fixtures(t);
  await serve(f.srv, await f.sign(), '"v1"');
  const c = check(f, { minIntervalSeconds: 0.02 });
  await c.start();
  for (let i = 0; i < 200 && f.srv.hits('/revocations.json') < 4; i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  c.stop();
  const hits = f.srv.hits('/revocations.json');
  t.ok(hits >= 4, `polled repeatedly (${hits})`);
  t.ok(c.describe()[0]!.loaded, 'still loaded after 304s');
  t.equal(c.status('hook-old', T0 / 1000), 'revoked');
  await new Promise((r) => setTimeout(r, 100));
  t.ok(f.srv.hits('/revocations.json') <= hits + 1, 'no polling after stop');
});

t.test('static revoked kids and harness hooks (vectors 017, 019)', async (t) => {
  const f = await fixtures(t);
  const c = new PolledRevocationCheck({ profile, keys: f.resolver, revokedKids: ['cfg-kid'] });
  const now = 1776520800;
  t.equal(c.status('cfg-kid', now), 'revoked');
  t.equal(c.status('any', now), 'ok', 'no lists configured: nothing is stale');
  c.harnessRevoke(['test-revoked-webhook-2026']);
  t.equal(c.status('test-revoked-webhook-2026', now), 'revoked');
  c.harnessStale(10800, now);
  t.equal(c.status('test-ed25519-webhook-2026', now), 'stale');
  t.equal(c.status('test-ed25519-webhook-2026', now - 10801), 'ok', 'before it went stale');
  c.harnessReset();
  t.equal(c.status('test-ed25519-webhook-2026', now), 'ok');
  t.equal(c.status('test-revoked-webhook-2026', now), 'ok');
  t.equal(c.status('cfg-kid', now), 'revoked', 'configuration survives a reset');
});

t.test('sources from the trust file', async (t) => {
  const trust = parseTrust({
    revocation_url: 'https://ops.example/rev.json',
    senders: [
      { id: 'a', jwks_uri: 'https://a.example/j', revocation_url: 'https://a.example/rev' },
      { id: 'b', jwks_uri: 'https://b.example/j' },
    ],
  });
  t.same(revocationSourcesFromTrust(trust), [
    { url: 'https://ops.example/rev.json' },
    { url: 'https://a.example/rev', senderId: 'a' },
  ]);
});
