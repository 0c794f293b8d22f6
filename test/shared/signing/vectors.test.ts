/**
 * Every webhook-signing conformance vector through the core with brand `adcp`: the rebuilt
 * signature base byte for byte, the digest, the signature, and each negative's exact code.
 * The stateful negatives (016-019) need receiver state and are run in the receiver's tests.
 */
import t from 'tap';
import { brandProfile } from '../../../shared/brand.js';
import { WebhookVerificationError } from '../../../shared/errors/webhook-codes.js';
import {
  contentDigestMatches,
  parseContentDigest,
} from '../../../shared/signing/content-digest.js';
import { signatureBaseFor, verifyWebhookSignature } from '../../../shared/signing/verify.js';
import { loadVectors, lowerHeaders, vectorKeyResolver } from '../../helpers/vectors.js';

const adcp = brandProfile('adcp');
const svc = brandProfile('svc');
const vectors = loadVectors();
const STATEFUL = /^negative\/01[6-9]-/;
// No base can be rebuilt from these headers (010, 011, 021 are unparseable), or the vector's
// expected base names a parameter its own Signature-Input omits (012 expires, 014 nonce).
const NO_BASE = new Set([
  'negative/012-missing-expires-param.json',
  'negative/014-missing-nonce-param.json',
  'negative/010-malformed-signature-input.json',
  'negative/011-signature-without-input.json',
  'negative/021-base64-alphabet-mixing.json',
]);

t.equal(vectors.filter((v) => v.kind === 'positive').length, 8, 'eight positive vectors');
t.equal(vectors.filter((v) => v.kind === 'negative').length, 21, 'twenty-one negative vectors');

for (const v of vectors) {
  if (STATEFUL.test(v.file)) continue;
  t.test(`${v.file}: ${v.name}`, async (t) => {
    const req = {
      method: v.request.method,
      url: v.request.url,
      headers: lowerHeaders(v.request.headers),
      body: Buffer.from(v.request.body, 'utf8'),
    };
    if (!NO_BASE.has(v.file)) {
      t.equal(signatureBaseFor(req), v.expected_signature_base, 'signature base byte for byte');
    }
    const verify = () =>
      verifyWebhookSignature(req, {
        profile: adcp,
        keys: vectorKeyResolver(v),
        now: v.reference_now,
      });
    if (v.expected_outcome.success) {
      const cd = req.headers['content-digest'];
      t.ok(
        cd && contentDigestMatches(parseContentDigest(cd, 'webhook-v1'), req.body),
        'digest matches',
      );
      const ok = await verify();
      t.equal(ok.keyid, v.jwks_ref[0]);
      t.equal(ok.senderId, 'vector-sender');
      // With the default brand the same request must fail at the tag step.
      const err = await verifyWebhookSignature(req, {
        profile: svc,
        keys: vectorKeyResolver(v),
        now: v.reference_now,
      }).catch((e: unknown) => e);
      t.type(err, WebhookVerificationError);
      t.equal(
        (err as WebhookVerificationError).code,
        'webhook_signature_tag_invalid',
        'brand svc fails at the tag',
      );
    } else {
      const err = await verify().catch((e: unknown) => e);
      t.type(err, WebhookVerificationError, 'rejected with a typed error');
      t.equal((err as WebhookVerificationError).code, v.expected_outcome.error_code, 'exact code');
      if (v.expected_outcome.failed_step !== undefined) {
        t.equal(
          String((err as WebhookVerificationError).step).replace('a', ''),
          String(v.expected_outcome.failed_step),
          'at the step the vector names',
        );
      }
    }
  });
}
