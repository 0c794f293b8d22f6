/** jwksKeyResolver: the signing entry point's resolver over a JWKS held in hand. */
import t from 'tap';
import { brandProfile } from '../../../shared/brand.js';
import { jwksKeyResolver } from '../../../shared/signing/jwks-resolver.js';
import { generateSigningKey, publishedJwk } from '../../../shared/signing/keys.js';
import { signWebhook } from '../../../shared/signing/sign.js';
import { verifyWebhookSignature } from '../../../shared/signing/verify.js';
import { WebhookVerificationError } from '../../../shared/errors/webhook-codes.js';

const profile = brandProfile('svc');

t.test('resolves the kids it holds, null otherwise; a kid-less JWK is skipped', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const jwk = publishedJwk(key, profile);
  const { kid: _kid, ...noKid } = jwk;
  const keys = jwksKeyResolver({ keys: [jwk, noKid] }, 'seller-a');
  t.same(await keys.resolve(key.kid), { jwk, senderId: 'seller-a' });
  t.equal(await keys.resolve('unknown'), null);
});

t.test('verifies a signed request; an unknown key is webhook_signature_key_unknown', async (t) => {
  const { key } = await generateSigningKey('ecdsa-p256-sha256');
  const url = 'https://buyer.example/hooks';
  const body = '{"idempotency_key":"whk_0123456789abcdef"}';
  const headers = signWebhook({ method: 'POST', url, body }, { key, profile });
  const req = { method: 'POST', url, headers, body: Buffer.from(body) };
  const keys = jwksKeyResolver({ keys: [publishedJwk(key, profile)] }, 'seller-b');
  const v = await verifyWebhookSignature(req, { profile, keys });
  t.equal(v.senderId, 'seller-b');
  const err = await verifyWebhookSignature(req, {
    profile,
    keys: jwksKeyResolver({ keys: [] }, 'nobody'),
  }).catch((e: unknown) => e);
  t.ok(err instanceof WebhookVerificationError);
  t.equal((err as WebhookVerificationError).code, 'webhook_signature_key_unknown');
});
