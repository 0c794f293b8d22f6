/**
 * The verifier's per-request shortcuts (issue 23) give the answers of the long ways round:
 * one-member Signature and Content-Digest fields read without a dictionary, the memoised
 * Host canonicalisation, and the synchronous verify-key cache.
 */
import t from 'tap';
import fc from 'fast-check';
import { parseContentDigest } from '../../../shared/signing/content-digest.js';
import {
  parseBytesMember,
  parseInnerListMember,
  parseSignatureDictionarySlow,
  StructuredFieldError,
  type ParsedField,
} from '../../../shared/signing/structured.js';
import { canonicalAuthority } from '../../../shared/signing/target-cache.js';
import { canonicalizeAuthority, TargetUriError } from '../../../shared/http/target-uri.js';
import {
  cachedVerifyKey,
  generateSigningKey,
  importVerifyKey,
  type JWK,
} from '../../../shared/signing/keys.js';

/** The outcome of a parse: its value, or the class of what it threw. */
function outcome<T>(fn: () => T): T | string {
  try {
    return fn();
  } catch (err) {
    return (err as Error).constructor.name;
  }
}

t.test('a byte-sequence member reads as the full parser reads it, or not at all', async (t) => {
  // Tokens over both base64 alphabets, padding, and a few characters neither allows.
  const token = fc.stringMatching(/^[A-Za-z0-9+/=_\-:.]{0,90}$/);
  const field = fc.tuple(fc.constantFrom('sig1', 'sha-256', 'Sig', '1a'), token).map(([k, v]) => {
    return `${k}=:${v}:`;
  });
  // webhook-v1 only: under rfc8941 the full parse (structured-headers) takes unpadded base64
  // that the profile, and so both shortcuts since before issue 23, refuse.
  for (const profile of ['webhook-v1'] as const) {
    fc.assert(
      fc.property(field, (s) => {
        const fast = outcome(() => parseBytesMember(s, profile));
        const slow = outcome(() => parseSignatureDictionarySlow(s, profile));
        if (fast === null) return true; // not the one-member shape: the full parse decides
        if (typeof fast === 'string') {
          t.equal(fast, 'StructuredFieldError', s);
          t.equal(slow, 'StructuredFieldError', s);
          return true;
        }
        t.not(typeof slow, 'string', s);
        const value = (slow as ParsedField).dictionary.get(fast.key)?.[0];
        t.ok(value instanceof ArrayBuffer, s);
        t.same(Buffer.from(value as ArrayBuffer), fast.bytes, s);
        return true;
      }),
      { numRuns: 300 },
    );
  }
  t.equal(parseBytesMember('sig1=:abc', 'webhook-v1'), null, 'unterminated');
  t.equal(parseBytesMember('sig1=("a")', 'webhook-v1'), null, 'an inner list');
  t.equal(parseBytesMember('sig1=:a:, sig2=:b:', 'webhook-v1'), null, 'two members');
  t.throws(() => parseBytesMember('sig1=:ab+_:', 'webhook-v1'), StructuredFieldError, 'mixed');
});

t.test('Content-Digest: the one-member shortcut and the full parse agree', async (t) => {
  const digest = Buffer.alloc(32, 7);
  const one = parseContentDigest(`sha-256=:${digest.toString('base64url')}:`, 'webhook-v1');
  const two = parseContentDigest(
    `sha-256=:${digest.toString('base64url')}:, sha-512=:${Buffer.alloc(64).toString('base64url')}:`,
    'webhook-v1',
  );
  t.same([...one.keys()], ['sha-256']);
  t.same(one.get('sha-256'), digest);
  t.same(two.get('sha-256'), digest);
  t.throws(() => parseContentDigest('sha-256=:ab+_:', 'webhook-v1'), StructuredFieldError);
});

t.test('an inner-list member keeps its parameters and flags a repeated one', async (t) => {
  const m = parseInnerListMember('sig1=("@method" "content-type");created=1;nonce="a";created=2');
  t.same(m?.items, ['@method', 'content-type']);
  t.same(m?.paramKeys, ['created', 'nonce', 'created']);
  t.equal(m?.params.get('created'), 2, 'the last one wins, as in RFC 8941');
  t.equal(m?.canonicalText, undefined, 'a repeated parameter: not canonical text');
  t.equal(parseInnerListMember('sig1=();created=1')?.canonicalText, '();created=1');
  t.equal(parseInnerListMember('sig1=("a" )'), null, 'a trailing space');
  t.equal(parseInnerListMember('sig1=("a");created=01'), null, 'a leading zero');
  t.equal(parseInnerListMember('sig1=("a");x=1234567890123456'), null, 'sixteen digits');
  t.equal(parseInnerListMember('sig1=("a\\"b")'), null, 'an escape');
  t.equal(parseInnerListMember('sig1=:AA==:'), null, 'a byte sequence');
});

t.test('the memoised Host canonicalisation answers as canonicalizeAuthority', async (t) => {
  for (const [value, scheme] of [
    ['Buyer.Example.COM:443', 'https'],
    ['buyer.example.com:8080', 'http'],
    ['buyer.example.com:80', 'http'],
  ] as const) {
    t.equal(canonicalAuthority(value, scheme), canonicalizeAuthority(value, scheme));
    t.equal(canonicalAuthority(value, scheme), canonicalizeAuthority(value, scheme), 'cached');
  }
  // Failures are not kept: the same malformed value throws every time.
  for (let i = 0; i < 2; i++) {
    t.throws(() => canonicalAuthority('bad host', 'https'), TargetUriError);
    t.throws(() => canonicalAuthority('bücher.example', 'https'), TargetUriError);
  }
  // More distinct values than the bound: the cache is emptied, answers stay right.
  for (let i = 0; i < 600; i++) {
    t.equal(canonicalAuthority(`h${i}.example:443`, 'https'), `h${i}.example`);
  }
});

t.test('the synchronous key cache matches key material, never a stale object', async (t) => {
  const { key: a } = await generateSigningKey('ed25519', 'a');
  const { key: b } = await generateSigningKey('ed25519', 'b');
  const jwk: JWK = { ...a.publicJwk };
  t.equal(cachedVerifyKey(jwk), undefined, 'nothing before the first import');
  const imported = await importVerifyKey(jwk, 'ed25519');
  t.equal(cachedVerifyKey(jwk), imported, 'by material');
  t.equal(cachedVerifyKey(jwk), imported, 'by the same object');
  t.equal(cachedVerifyKey({ ...jwk }), imported, 'a copy of the same key');
  // The object now holds another key: its own entry, or none, never the old one.
  jwk.x = b.publicJwk.x;
  t.equal(cachedVerifyKey(jwk), undefined, 'changed key material is not matched');
  const other = await importVerifyKey(jwk, 'ed25519');
  t.not(other, imported);
  t.equal(cachedVerifyKey(jwk), other);
});
