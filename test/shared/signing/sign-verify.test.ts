/**
 * Round trips with the default brand for both algorithms, then every checklist step made
 * to fail on purpose with our own signer, each with its exact code.
 */
import t from 'tap';
import fc from 'fast-check';
import { brandProfile } from '../../../shared/brand.js';
import { WebhookVerificationError } from '../../../shared/errors/webhook-codes.js';
import {
  generateSigningKey,
  importSigningKey,
  publishedJwk,
  type JWK,
} from '../../../shared/signing/keys.js';
import { signWebhook, SignError } from '../../../shared/signing/sign.js';
import {
  verifySignatureHeaders,
  verifySignedBody,
  verifyWebhookSignature,
  type IncomingRequest,
  type KeyResolver,
  type ReplayStore,
} from '../../../shared/signing/verify.js';
import type { SignatureAlg } from '../../../shared/signing/algorithms.js';

const svc = brandProfile('svc');
const NOW = 1_800_000_000;
const URL_ = 'https://buyer.example.com/hooks/svc?x=1';
const BODY = JSON.stringify({
  idempotency_key: 'whk_0123456789abcdef',
  task_id: 't1',
  status: 'completed',
});

function resolverFor(jwks: JWK[], senderId = 'seller-a'): KeyResolver {
  return {
    resolve: async (kid) => {
      const jwk = jwks.find((k) => k.kid === kid);
      return jwk ? { jwk, senderId } : null;
    },
  };
}

function memoryReplay(cap = Infinity): ReplayStore & { entries: Set<string> } {
  const entries = new Set<string>();
  return {
    entries,
    atCap: async () => entries.size >= cap,
    seen: async (k, n) => entries.has(`${k}|${n}`),
    insert: async (k, n) => {
      if (entries.has(`${k}|${n}`)) return 'replayed';
      if (entries.size >= cap) return 'cap';
      entries.add(`${k}|${n}`);
      return 'inserted';
    },
  };
}

async function signed(
  alg: SignatureAlg = 'ed25519',
  over: Partial<{ body: string; url: string; now: number }> = {},
) {
  const { key } = await generateSigningKey(alg, `k-${alg}`);
  const body = over.body ?? BODY;
  const headers = signWebhook(
    { method: 'POST', url: over.url ?? URL_, body },
    { key, profile: svc, now: over.now ?? NOW },
  );
  const req: IncomingRequest = {
    method: 'POST',
    url: URL_,
    headers: { ...headers },
    body: Buffer.from(BODY),
  };
  return { key, req, jwk: publishedJwk(key, svc) };
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof WebhookVerificationError))
    throw new Error(`expected a verification error, got ${String(err)}`);
  return err.code;
}

for (const alg of ['ed25519', 'ecdsa-p256-sha256'] as const) {
  t.test(`round trip with brand svc: ${alg}`, async (t) => {
    const { req, jwk } = await signed(alg);
    t.match(req.headers['signature-input'], /tag="svc\/webhook-signing\/v1"/);
    t.match(req.headers['signature'], /^sig1=:[A-Za-z0-9_-]{86}:$/, 'unpadded base64url, 64 bytes');
    t.match(req.headers['content-digest'], /^sha-256=:[A-Za-z0-9_-]{43}:$/);
    const offloaded = await verifyWebhookSignature(req, {
      profile: svc,
      keys: resolverFor([jwk]),
      now: NOW,
      offloadCrypto: true,
    });
    t.equal(offloaded.keyid, `k-${alg}`, 'the thread-pool check agrees');
    const tampered = { ...req, headers: { ...req.headers, signature: `sig1=:${'A'.repeat(86)}:` } };
    t.equal(
      await codeOf(
        verifyWebhookSignature(tampered, {
          profile: svc,
          keys: resolverFor([jwk]),
          now: NOW,
          offloadCrypto: true,
        }),
      ),
      'webhook_signature_invalid',
      'and rejects a bad signature',
    );
    const replay = memoryReplay();
    const ok = await verifyWebhookSignature(req, {
      profile: svc,
      keys: resolverFor([jwk]),
      replay,
      now: NOW,
    });
    t.equal(ok.alg, alg);
    t.equal(ok.senderId, 'seller-a');
    t.equal(replay.entries.size, 1, 'nonce inserted after success');
    t.equal(
      await codeOf(
        verifyWebhookSignature(req, { profile: svc, keys: resolverFor([jwk]), replay, now: NOW }),
      ),
      'webhook_signature_replayed',
      'the same request again is a replay',
    );
  });
}

t.test(
  'two phases: the head verifies without a body; the body phase checks digest, then nonce',
  async (t) => {
    const { req, jwk } = await signed();
    const { body, ...head } = req;
    const keys = resolverFor([jwk]);
    const replay = memoryReplay();
    const verified = await verifySignatureHeaders(head, { profile: svc, keys, replay, now: NOW });
    t.equal(verified.senderId, 'seller-a');
    t.equal(replay.entries.size, 0, 'no nonce before the body');
    t.equal(
      await codeOf(verifySignedBody(verified, Buffer.from(BODY + ' '), { replay })),
      'webhook_signature_digest_mismatch',
    );
    t.equal(replay.entries.size, 0, 'a wrong body does not burn the nonce');
    const ok = await verifySignedBody(verified, body, { replay });
    t.equal(ok.keyid, verified.keyid);
    t.notOk('digests' in ok, 'the result is the plain verified signature');
    t.equal(replay.entries.size, 1);
    t.equal(
      await codeOf(verifySignedBody(verified, body, { replay })),
      'webhook_signature_replayed',
    );
    t.equal((await verifySignedBody(verified, body, {})).nonce, verified.nonce, 'no replay store');
    const noDigest = { ...head, headers: { ...head.headers, 'content-digest': undefined } };
    t.equal(
      await codeOf(verifySignatureHeaders(noDigest, { profile: svc, keys, now: NOW })),
      'webhook_signature_invalid',
      'the digest header is covered: removing it breaks the signature, not the digest step',
    );
  },
);

t.test('a private JWK round-trips through import', async (t) => {
  for (const alg of ['ed25519', 'ecdsa-p256-sha256'] as const) {
    const { privateJwk, key } = await generateSigningKey(alg);
    const again = await importSigningKey(privateJwk);
    t.equal(again.kid, key.kid);
    t.equal(again.alg, alg);
    const headers = signWebhook(
      { method: 'POST', url: URL_, body: BODY },
      { key: again, profile: svc, now: NOW },
    );
    const req = { method: 'POST', url: URL_, headers, body: Buffer.from(BODY) };
    await verifyWebhookSignature(req, {
      profile: svc,
      keys: resolverFor([publishedJwk(key, svc)]),
      now: NOW,
    });
  }
  await t.rejects(importSigningKey({ kty: 'OKP', crv: 'Ed25519', x: 'abc' }), /kid/);
  await t.rejects(
    importSigningKey({ kid: 'a', kty: 'OKP', crv: 'Ed25519', x: 'abc' }),
    /no private part/,
  );
  await t.rejects(importSigningKey({ kid: 'a', kty: 'RSA', d: 'x' }), /unsupported key type/);
  await t.rejects(
    importSigningKey({ kid: 'a', kty: 'OKP', crv: 'Ed25519', x: 'abc', d: 'zz' }),
    /invalid Ed25519 JWK/,
  );
});

t.test('the signer refuses bad options', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  t.throws(
    () =>
      signWebhook(
        { method: 'POST', url: URL_, body: '{}' },
        { key, profile: svc, ttlSeconds: 301 },
      ),
    SignError,
  );
  t.throws(
    () =>
      signWebhook({ method: 'POST', url: URL_, body: '{}' }, { key, profile: svc, nonce: 'short' }),
    SignError,
  );
  t.throws(() =>
    signWebhook({ method: 'POST', url: 'https:///p', body: '{}' }, { key, profile: svc }),
  );
});

t.test('each step fails with its exact code', async (t) => {
  const { req, jwk, key } = await signed();
  const keys = resolverFor([jwk]);
  const run = (r: IncomingRequest, extra: Record<string, unknown> = {}) =>
    codeOf(verifyWebhookSignature(r, { profile: svc, keys, now: NOW, ...extra }));
  const withHeaders = (h: Record<string, string | undefined>) => ({
    ...req,
    headers: { ...req.headers, ...h },
  });
  const input = req.headers['signature-input'] as string;

  t.equal(
    await run(withHeaders({ 'signature-input': undefined })),
    'webhook_signature_header_malformed',
  );
  t.equal(await run(withHeaders({ signature: undefined })), 'webhook_signature_header_malformed');
  t.equal(
    await run(withHeaders({ 'signature-input': `${input}, ${input}` })),
    'webhook_signature_header_malformed',
    'duplicate label',
  );
  t.equal(
    await run(withHeaders({ 'signature-input': input.replace('sig1=', 'sig2=') })),
    'webhook_signature_header_malformed',
    'no sig1',
  );
  t.equal(
    await run(withHeaders({ 'signature-input': input.replace(/keyid="([^"]+)"/, 'keyid=$1') })),
    'webhook_signature_header_malformed',
    'unquoted keyid',
  );
  t.equal(
    await run(
      withHeaders({ 'signature-input': input.replace(/nonce="[^"]+"/, 'nonce="c2hvcnQ"') }),
    ),
    'webhook_signature_header_malformed',
    'short nonce',
  );
  t.equal(
    await run(
      withHeaders({
        'content-digest': `${req.headers['content-digest']}, ${req.headers['content-digest']}`,
      }),
    ),
    'webhook_signature_header_malformed',
    'digest listed twice',
  );
  t.equal(
    await run({
      ...req,
      headers: { ...req.headers, 'content-type': ['application/json', 'text/plain'] },
    }),
    'webhook_signature_header_malformed',
    'multi-valued content-type',
  );
  t.equal(
    await run(withHeaders({ 'signature-input': input.replace(/;tag="[^"]+"/, '') })),
    'webhook_signature_params_incomplete',
  );
  t.equal(
    await run(withHeaders({ 'signature-input': `${input};tag="svc/webhook-signing/v1"` })),
    'webhook_signature_params_incomplete',
    'tag twice',
  );
  t.equal(
    await run(
      withHeaders({
        'signature-input': input.replace('svc/webhook-signing/v1', 'svc/request-signing/v1'),
      }),
    ),
    'webhook_signature_tag_invalid',
  );
  t.equal(
    await run(
      withHeaders({ 'signature-input': input.replace('alg="ed25519"', 'alg="hmac-sha256"') }),
    ),
    'webhook_signature_alg_not_allowed',
  );
  t.equal(await run(req, { now: NOW + 400 }), 'webhook_signature_window_invalid', 'expired');
  t.equal(
    await run(req, { now: NOW - 120 }),
    'webhook_signature_window_invalid',
    'created in the future',
  );
  t.equal(
    await run(withHeaders({ 'signature-input': input.replace(' "content-type"', '') })),
    'webhook_signature_components_incomplete',
  );
  t.equal(
    await codeOf(
      verifyWebhookSignature(req, { profile: svc, keys: { resolve: async () => null }, now: NOW }),
    ),
    'webhook_signature_key_unknown',
  );
  for (const bad of [
    { ...jwk, use: 'enc' },
    { ...jwk, key_ops: ['sign'] },
    { ...jwk, svc_use: 'response-signing' },
    { ...jwk, svc_use: undefined },
    { ...jwk, alg: 'ES256' },
  ]) {
    t.equal(
      await codeOf(
        verifyWebhookSignature(req, { profile: svc, keys: resolverFor([bad]), now: NOW }),
      ),
      'webhook_signature_key_purpose_invalid',
    );
  }
  t.equal(
    await run(req, { revocation: { status: () => 'revoked' } }),
    'webhook_signature_key_revoked',
  );
  t.equal(
    await run(req, { revocation: { status: () => 'stale' } }),
    'webhook_signature_revocation_stale',
  );
  t.equal(await run(req, { replay: memoryReplay(0) }), 'webhook_signature_rate_abuse');
  t.equal(
    await run({ ...req, url: 'https://other.example.com/hooks/svc?x=1' }),
    'webhook_signature_invalid',
    'signed for another URL',
  );
  t.equal(
    await run(withHeaders({ host: 'evil.example.com' })),
    'webhook_target_uri_malformed',
    'Host disagrees with the URL',
  );
  t.equal(
    await run({ ...req, url: 'https://bücher.example/p' }),
    'webhook_target_uri_malformed',
    'raw non-ASCII host',
  );
  t.equal(
    await run({ ...req, body: Buffer.from(BODY + ' ') }),
    'webhook_signature_digest_mismatch',
  );
  // Same key re-signs a different body: signature fine, digest header describes the other body.
  const other = signWebhook(
    { method: 'POST', url: URL_, body: '{"a":1}' },
    { key, profile: svc, now: NOW },
  );
  t.equal(await run({ ...req, headers: other }), 'webhook_signature_digest_mismatch');
});

t.test('Host matching the URL (default port stripped) verifies', async (t) => {
  const { req, jwk } = await signed();
  const ok = await verifyWebhookSignature(
    { ...req, headers: { ...req.headers, host: 'Buyer.Example.com:443' } },
    { profile: svc, keys: resolverFor([jwk]), now: NOW },
  );
  t.equal(ok.label, 'sig1');
});

t.test(
  'random and mutated signature headers only ever give a typed verification error',
  async (t) => {
    const { req, jwk } = await signed();
    const keys = resolverFor([jwk]);
    const input = req.headers['signature-input'] as string;
    const signature = req.headers['signature'] as string;
    const mutate = (s: string, at: number, ins: string, del: number) =>
      s.slice(0, at % (s.length + 1)) + ins + s.slice((at % (s.length + 1)) + del);
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 200 }),
        fc.nat(),
        fc.nat({ max: 3 }),
        fc.constantFrom('signature-input', 'signature', 'content-digest'),
        fc.boolean(),
        async (ins, at, del, which, replaceWhole) => {
          const base = {
            'signature-input': input,
            signature,
            'content-digest': req.headers['content-digest'] as string,
          };
          const value = replaceWhole ? ins : mutate(base[which], at, ins, del);
          const r = { ...req, headers: { ...req.headers, [which]: value } };
          try {
            await verifyWebhookSignature(r, { profile: svc, keys, now: NOW });
          } catch (err) {
            if (!(err instanceof WebhookVerificationError)) throw err;
          }
        },
      ),
      { numRuns: 500 },
    );
    t.pass('no untyped error');
  },
);
