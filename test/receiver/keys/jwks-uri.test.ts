import t from 'tap';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { parseTrust } from '../../../receiver/trust/trust-file.js';
import { docServer, manualClock } from './doc-server.js';
import { jwks, outcome } from './key-fixtures.js';

const SECOND = 1000;

async function setup(
  t: { teardown(fn: () => unknown): void },
  opts: { totalTimeoutMs?: number } = {},
) {
  const srv = await docServer(t);
  const clock = manualClock();
  const trust = parseTrust({ senders: [{ id: 'seller-b', jwks_uri: srv.url('/jwks.json') }] });
  const resolver = new TrustedKeyResolver(trust, {
    allowLoopback: true,
    clock: clock.now,
    totalTimeoutMs: opts.totalTimeoutMs,
  });
  return { srv, clock, resolver };
}

t.test('inline JWKS resolves without I/O; unknown kid is null', async (t) => {
  const set = await jwks('inline-1');
  const r = new TrustedKeyResolver(parseTrust({ senders: [{ id: 'seller-a', jwks: set }] }));
  const got = await r.resolve('inline-1');
  t.equal(got?.senderId, 'seller-a');
  t.equal(got?.jwk.kid, 'inline-1');
  t.equal(
    (got?.jwk as Record<string, unknown>).adcp_use,
    'request-signing',
    'purpose member kept for step 8',
  );
  t.equal(await r.resolve('nope'), null);
  t.equal(r.senderOf('inline-1'), 'seller-a');
});

t.test('rotation mid-stream: new kid found by refetch, old kid kept while published', async (t) => {
  const { srv, clock, resolver } = await setup(t);
  srv.json('/jwks.json', await jwks('k-old'));
  t.equal((await resolver.resolve('k-old'))?.senderId, 'seller-b');
  t.equal(srv.hits('/jwks.json'), 1);

  // The seller publishes the new key beside the old one and starts signing with it.
  srv.json('/jwks.json', await jwks('k-old', 'k-new'));
  clock.advance(1 * SECOND);
  t.equal((await resolver.resolve('k-new'))?.senderId, 'seller-b', 'refetch on miss finds it');
  t.equal(srv.hits('/jwks.json'), 2);
  t.equal((await resolver.resolve('k-old'))?.senderId, 'seller-b', 'in-flight old kid accepted');
  t.equal(srv.hits('/jwks.json'), 2, 'known kids need no fetch');

  // Old key withdrawn: it stays valid until the cache expires, then is gone.
  srv.json('/jwks.json', await jwks('k-new'));
  t.ok(await resolver.resolve('k-old'), 'still cached');
  clock.advance(5 * 60 * SECOND);
  t.equal(await resolver.resolve('k-old'), null, 'withdrawn after TTL refresh');
  t.ok(await resolver.resolve('k-new'));
});

t.test('unknown kid: one refetch, then at most one per 30 s', async (t) => {
  const { srv, clock, resolver } = await setup(t);
  srv.json('/jwks.json', await jwks('k1'));
  t.ok(await resolver.resolve('k1'));
  t.equal(srv.hits('/jwks.json'), 1);

  clock.advance(1 * SECOND);
  t.equal(await resolver.resolve('ghost'), null);
  t.equal(srv.hits('/jwks.json'), 2, 'the first refetch is immediate (no cooldown before it)');

  for (let i = 0; i < 5; i++) {
    clock.advance(5 * SECOND);
    t.equal(await resolver.resolve(`ghost-${i}`), null);
  }
  t.equal(srv.hits('/jwks.json'), 2, 'no refetch within 30 s of the last one');

  srv.json('/jwks.json', await jwks('k1', 'ghost'));
  t.equal(await resolver.resolve('ghost'), null, 'published but still inside the cooldown');
  clock.advance(6 * SECOND); // 31 s since the last refetch
  t.equal((await resolver.resolve('ghost'))?.senderId, 'seller-b');
  t.equal(srv.hits('/jwks.json'), 3);
});

t.test('first fetch of an unknown kid does not refetch twice in the same call', async (t) => {
  const { srv, resolver } = await setup(t);
  srv.json('/jwks.json', await jwks('k1'));
  t.equal(await resolver.resolve('ghost'), null);
  t.equal(srv.hits('/jwks.json'), 1);
});

t.test('slow endpoint: timeout keeps previous keys; unknown kid is null', async (t) => {
  const { srv, clock, resolver } = await setup(t, { totalTimeoutMs: 300 });
  const set = await jwks('k1');
  srv.json('/jwks.json', set);
  t.ok(await resolver.resolve('k1'));
  srv.slow('/jwks.json', 5_000, await jwks('k1', 'k2'));
  clock.advance(10 * 60 * SECOND); // past the TTL: a refresh is due and times out
  t.equal((await resolver.resolve('k1'))?.senderId, 'seller-b', 'previous good set kept');
  t.equal(srv.hits('/jwks.json'), 2);
  clock.advance(1 * SECOND);
  t.equal(await resolver.resolve('k2'), null, 'refetch on miss also times out');
  t.equal(srv.hits('/jwks.json'), 3);
  t.ok(await resolver.resolve('k1'), 'a failed refetch does not make known kids unknown');
});

t.test('slow endpoint on first load: jwks_unavailable, then negative cache', async (t) => {
  const { srv, clock, resolver } = await setup(t, { totalTimeoutMs: 200 });
  srv.slow('/jwks.json', 5_000, await jwks('k1'));
  const unavailable = 'request_signature_jwks_unavailable';
  t.equal(await outcome(resolver.resolve('k1')), unavailable);
  clock.advance(10 * SECOND);
  t.equal(await outcome(resolver.resolve('k1')), unavailable);
  t.equal(srv.hits('/jwks.json'), 2, 'one load plus one miss-refetch, nothing more');
  clock.advance(5 * SECOND);
  t.equal(await outcome(resolver.resolve('k1')), unavailable);
  t.equal(srv.hits('/jwks.json'), 2, 'failure is negatively cached');
  srv.json('/jwks.json', await jwks('k1'));
  clock.advance(30 * SECOND);
  t.ok(await resolver.resolve('k1'), 'recovers once the endpoint does');
});

const broken: Array<[string, (srv: Awaited<ReturnType<typeof docServer>>) => Promise<void>]> = [
  [
    'huge document (over 64 KiB)',
    async (srv) => {
      const set = await jwks('k1', 'k2');
      (set.keys[0] as Record<string, unknown>).padding = 'x'.repeat(70 * 1024);
      srv.json('/jwks.json', set);
    },
  ],
  ['duplicate kids', async (srv) => srv.json('/jwks.json', await jwks('k1', 'k2', 'k2'))],
  ['malformed JSON', async (srv) => srv.raw('/jwks.json', '{"keys":[')],
  [
    'duplicate JSON keys',
    async (srv) => {
      const set = await jwks('k2');
      srv.raw('/jwks.json', `{"keys":[],"keys":${JSON.stringify(set.keys)}}`);
    },
  ],
  ['not a JWKS', async (srv) => srv.json('/jwks.json', { keys: 'none' })],
  ['key without kid', async (srv) => srv.json('/jwks.json', { keys: [{ kty: 'OKP' }] })],
  ['HTTP 500', async (srv) => srv.raw('/jwks.json', '{}', 500)],
  [
    'redirect',
    async (srv) =>
      srv.handle('/jwks.json', (_req, res) => {
        res.writeHead(302, { location: srv.url('/other.json') }).end();
      }),
  ],
];

for (const [name, breakIt] of broken) {
  t.test(`${name}: rejected, previous good set kept`, async (t) => {
    const { srv, clock, resolver } = await setup(t);
    await breakIt(srv);
    t.equal(
      await outcome(resolver.resolve('k2')),
      'request_signature_jwks_unavailable',
      'first load rejected: no key can be had, and the answer says why',
    );

    const { srv: srv2, clock: clock2, resolver: r2 } = await setup(t);
    srv2.json('/jwks.json', await jwks('k1'));
    t.ok(await r2.resolve('k1'));
    await breakIt(srv2);
    clock2.advance(10 * 60 * SECOND);
    t.ok(await r2.resolve('k1'), 'known kid survives the bad refresh');
    t.equal(await r2.resolve('k2'), null, 'nothing from the bad document is used');
    t.ok(srv2.hits('/jwks.json') >= 2);
    clock.advance(0);
  });
}

t.test('plain http is refused unless loopback is allowed', async (t) => {
  const srv = await docServer(t);
  srv.json('/jwks.json', await jwks('k1'));
  const trust = parseTrust({ senders: [{ id: 's', jwks_uri: srv.url('/jwks.json') }] });
  t.equal(
    await outcome(new TrustedKeyResolver(trust).resolve('k1')),
    'request_signature_jwks_unavailable',
  );
  t.equal(srv.hits('/jwks.json'), 0, 'never connected');
  t.ok(await new TrustedKeyResolver(trust, { allowLoopback: true }).resolve('k1'));
});

t.test('a kid in two senders is ambiguous', async (t) => {
  const srv = await docServer(t);
  const shared = await jwks('dup', 'only-b');
  srv.json('/b.json', shared);
  const aKeys = await jwks('only-a');
  aKeys.keys.push(shared.keys[0]!);
  const r = new TrustedKeyResolver(
    parseTrust({
      senders: [
        { id: 'seller-a', jwks: aKeys },
        { id: 'seller-b', jwks_uri: srv.url('/b.json') },
      ],
    }),
    { allowLoopback: true },
  );
  t.equal(await r.resolve('dup'), null, 'refused rather than guessed');
  t.equal((await r.resolve('only-a'))?.senderId, 'seller-a');
  t.equal((await r.resolve('only-b'))?.senderId, 'seller-b');
});

t.test('concurrent misses share one fetch', async (t) => {
  const { srv, resolver } = await setup(t);
  srv.json('/jwks.json', await jwks('k1'));
  const got = await Promise.all(Array.from({ length: 20 }, () => resolver.resolve('k1')));
  t.ok(got.every((g) => g?.senderId === 'seller-b'));
  t.equal(srv.hits('/jwks.json'), 1);
});

t.test('cache policy is clamped to the supplement bounds', async (t) => {
  const { clampPolicy, DEFAULT_CACHE_POLICY } =
    await import('../../../receiver/keys/remote-key-set.js');
  t.same(clampPolicy({}), DEFAULT_CACHE_POLICY);
  t.equal(DEFAULT_CACHE_POLICY.refetchCooldownMs, 30_000);
  const p = clampPolicy({ ttlMs: 3_600_000, negativeTtlMs: 600_000, refetchCooldownMs: -1 });
  t.equal(p.ttlMs, 30 * 60_000, 'TTL at most 30 min');
  t.equal(p.negativeTtlMs, 60_000, 'negative cache at most 60 s');
  t.equal(p.refetchCooldownMs, 0);
});

t.test('status (the console Senders page): kids held past their TTL stay listed', async (t) => {
  const { srv, clock, resolver } = await setup(t);
  srv.json('/jwks.json', await jwks('k-held'));
  t.same(resolver.status()[0]!.kids, [], 'none before the first fetch');
  t.equal((await resolver.resolve('k-held'))?.senderId, 'seller-b');
  t.same(resolver.status()[0]!.kids, ['k-held']);
  // Past the cache TTL the set is no longer fresh, but it is what the sender's events were
  // verified with: the page must not say "none yet".
  clock.advance(60 * 60 * SECOND);
  t.same(resolver.status()[0]!.kids, ['k-held'], 'still held after the TTL');
  t.equal(srv.hits('/jwks.json'), 1, 'reading the status fetches nothing');
});
