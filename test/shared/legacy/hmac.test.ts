import t from 'tap';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { brandProfile } from '../../../shared/brand.js';
import { WebhookVerificationError } from '../../../shared/errors/webhook-codes.js';
import type { WebhookErrorCode } from '../../../shared/errors/webhook-codes.js';
import {
  HMAC_MAX_SKEW_SECONDS,
  hmacHeaderValues,
  hmacHeaders,
  signHmac,
  verifyHmac,
} from '../../../shared/legacy/hmac.js';
import type { VerifyHmacInput } from '../../../shared/legacy/hmac.js';
import type { JsonParseError } from '../../../shared/json/strict-parse.js';
import { parseStrictJson } from '../../../shared/json/strict-parse.js';

interface Vectors {
  secret: string;
  vectors: { id: string; timestamp: number; raw_body: string; expected_signature: string }[];
  rejection_vectors: {
    id: string;
    timestamp: number | string;
    raw_body: string;
    signature: string | null;
    current_time: number | null;
    expected_code: WebhookErrorCode;
  }[];
}
const fixture = JSON.parse(
  readFileSync(new URL('./fixtures/hmac-vectors.json', import.meta.url), 'utf8'),
) as Vectors;

function failure(input: VerifyHmacInput): WebhookVerificationError {
  try {
    verifyHmac(input);
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err;
    throw err;
  }
  throw new Error('expected a WebhookVerificationError');
}

const secret = randomBytes(32).toString('base64url');
const previous = randomBytes(32).toString('hex');
const body = Buffer.from('{"idempotency_key":"whk_0123456789abcdef","status":"completed"}');
const now = 1_776_520_800;

t.test('the protocol HMAC signing vectors reproduce and verify', async (t) => {
  t.equal(fixture.vectors.length, 15);
  for (const v of fixture.vectors) {
    const signed = signHmac({
      secret: fixture.secret,
      body: Buffer.from(v.raw_body, 'utf8'),
      timestamp: v.timestamp,
    });
    t.equal(signed.signature, v.expected_signature, v.id);
    t.equal(signed.timestamp, String(v.timestamp));
    t.same(
      verifyHmac({
        secrets: [fixture.secret],
        signature: v.expected_signature,
        timestamp: String(v.timestamp),
        body: Buffer.from(v.raw_body),
        now: v.timestamp,
      }),
      { secretIndex: 0 },
    );
  }
  // the duplicate-key vector: HMAC passes, then the body is refused as malformed
  const dup = fixture.vectors.find((v) => v.id === 'duplicate-keys-conflicting-values');
  const err = t.throws(() => parseStrictJson(Buffer.from(dup?.raw_body ?? ''))) as JsonParseError;
  t.equal(err.code, 'duplicate_key');
  t.same(err.duplicateKeys, ['status']);
});

t.test('the protocol HMAC rejection vectors fail with our codes', async (t) => {
  t.equal(fixture.rejection_vectors.length, 10);
  for (const v of fixture.rejection_vectors) {
    const err = failure({
      secrets: [fixture.secret],
      signature: v.signature ?? undefined,
      timestamp: String(v.timestamp),
      body: Buffer.from(v.raw_body),
      now: v.current_time ?? Number(v.timestamp),
    });
    t.equal(err.code, v.expected_code, v.id);
    t.equal(err.status, 401);
  }
});

t.test('accept, rotation, wrong secret, skew, malformed headers', async (t) => {
  const s = signHmac({ secret, body, timestamp: now });
  t.match(s.signature, /^sha256=[0-9a-f]{64}$/);
  t.same(verifyHmac({ secrets: [secret], ...s, body, now }), { secretIndex: 0 });
  // rotation: the previous secret still verifies, the current one is tried first
  const old = signHmac({ secret: previous, body, timestamp: now });
  t.same(verifyHmac({ secrets: [secret, previous], ...old, body, now }), { secretIndex: 1 });
  t.same(verifyHmac({ secrets: [secret, previous], ...s, body, now }), { secretIndex: 0 });
  // string bodies are their UTF-8 bytes
  t.same(verifyHmac({ secrets: [secret], ...s, body: body.toString('utf8'), now }), {
    secretIndex: 0,
  });
  // upper-case hex is the same digest
  t.same(
    verifyHmac({
      secrets: [secret],
      ...s,
      signature: 'sha256=' + s.signature.slice(7).toUpperCase(),
      body,
      now,
    }),
    { secretIndex: 0 },
  );

  const cases: [string, Partial<VerifyHmacInput>, WebhookErrorCode][] = [
    ['wrong secret', { secrets: [randomBytes(32).toString('hex')] }, 'webhook_signature_invalid'],
    [
      'tampered body',
      { body: Buffer.from(body.toString().replace('completed', 'failed')) },
      'webhook_signature_invalid',
    ],
    ['other timestamp', { timestamp: String(now + 1), now: now + 1 }, 'webhook_signature_invalid'],
    ['skew past', { now: now + HMAC_MAX_SKEW_SECONDS + 1 }, 'webhook_signature_window_invalid'],
    ['skew future', { now: now - HMAC_MAX_SKEW_SECONDS - 1 }, 'webhook_signature_window_invalid'],
    ['missing signature', { signature: undefined }, 'webhook_signature_header_malformed'],
    ['missing timestamp', { timestamp: undefined }, 'webhook_signature_header_malformed'],
    ['empty timestamp', { timestamp: '' }, 'webhook_signature_header_malformed'],
    ['non-numeric timestamp', { timestamp: 'soon' }, 'webhook_signature_header_malformed'],
    ['fractional timestamp', { timestamp: `${now}.5` }, 'webhook_signature_header_malformed'],
    ['negative timestamp', { timestamp: `-${now}` }, 'webhook_signature_header_malformed'],
    ['exponent timestamp', { timestamp: '1.7e9' }, 'webhook_signature_header_malformed'],
    ['padded timestamp', { timestamp: ` ${now}` }, 'webhook_signature_header_malformed'],
    ['bad hex', { signature: 'sha256=' + 'zz'.repeat(32) }, 'webhook_signature_header_malformed'],
    ['short hex', { signature: 'sha256=abcd' }, 'webhook_signature_header_malformed'],
    ['no prefix', { signature: 'a'.repeat(64) }, 'webhook_signature_header_malformed'],
    [
      'upper prefix',
      { signature: 'SHA256=' + 'a'.repeat(64) },
      'webhook_signature_header_malformed',
    ],
  ];
  for (const [name, over, code] of cases) {
    const err = failure({ secrets: [secret], ...s, body, now, ...over });
    t.equal(err.code, code, name);
    t.equal(err.wwwAuthenticate, `Signature error="${code}"`);
  }
  // exactly at the edge of the window still verifies
  t.same(verifyHmac({ secrets: [secret], ...s, body, now: now + HMAC_MAX_SKEW_SECONDS }), {
    secretIndex: 0,
  });
  t.throws(() => verifyHmac({ secrets: [], ...s, body, now }), TypeError);
  t.throws(() => signHmac({ secret, body, timestamp: 'x' }), TypeError);
  // the default clock is the real one
  const live = signHmac({ secret, body });
  t.same(verifyHmac({ secrets: [secret], ...live, body }), { secretIndex: 0 });
});

t.test('header names come from the brand profile', async (t) => {
  for (const brand of ['svc', 'adcp'] as const) {
    const profile = brandProfile(brand);
    const headers = hmacHeaders({ secret, body, timestamp: now, profile });
    const upper = brand.toUpperCase();
    t.same(Object.keys(headers).sort(), [`X-${upper}-Signature`, `X-${upper}-Timestamp`]);
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    const read = hmacHeaderValues(lower, profile);
    t.same(verifyHmac({ secrets: [secret], ...read, body, now }), { secretIndex: 0 });
    // a repeated header is garbled, not silently the first one
    const doubled = hmacHeaderValues(
      { ...lower, [`x-${brand}-signature`]: [read.signature ?? '', read.signature ?? ''] },
      profile,
    );
    t.equal(
      failure({ secrets: [secret], ...doubled, body, now }).code,
      'webhook_signature_header_malformed',
    );
    t.same(hmacHeaderValues({}, profile), { signature: undefined, timestamp: undefined });
  }
});

t.test('property: verifyHmac throws only WebhookVerificationError on random headers', async (t) => {
  fc.assert(
    fc.property(
      fc.option(fc.string()),
      fc.option(fc.string()),
      fc.uint8Array({ maxLength: 64 }),
      (signature, timestamp, raw) => {
        try {
          verifyHmac({
            secrets: [secret],
            signature: signature ?? undefined,
            timestamp: timestamp ?? undefined,
            body: Buffer.from(raw),
            now,
          });
          return false; // a random header never verifies
        } catch (err) {
          return err instanceof WebhookVerificationError;
        }
      },
    ),
    { numRuns: 1000 },
  );
  // round trip for any body and timestamp in the window
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 256 }),
      fc.integer({ min: -300, max: 300 }),
      (raw, skew) => {
        const s = signHmac({ secret, body: raw, timestamp: now + skew });
        return (
          verifyHmac({ secrets: [previous, secret], ...s, body: Buffer.from(raw), now })
            .secretIndex === 1
        );
      },
    ),
    { numRuns: 300 },
  );
  t.pass('held');
});
