// Signing and verifying one webhook request (RFC 9421), without the rest of the service:
// the seller signs the exact bytes it sends; the buyer verifies them against the seller's
// published keys and gets the spec's error code when anything is off.
//   npm install svc-webhooks
import {
  brandProfile,
  generateSigningKey,
  jwksKeyResolver,
  publishedJwk,
  signWebhook,
  verifyWebhookSignature,
  WebhookVerificationError,
} from 'svc-webhooks/signing';

const profile = brandProfile('svc');
const url = 'https://buyer.example/webhooks/media-buys?account=42';

// Seller side: a key pair (keep the private JWK), the envelope serialised once.
const { key } = await generateSigningKey('ed25519');
const envelope = {
  idempotency_key: 'whk_01J9ZK4ABCDEFGHJKMNPQRSTVW',
  operation_id: 'op_1001',
  task_id: 'task_1001',
  task_type: 'create_media_buy',
  status: 'completed',
  timestamp: new Date().toISOString(),
  result: { media_buy_id: 'mb_1001' },
};
const body = JSON.stringify(envelope);
const headers = signWebhook({ method: 'POST', url, body }, { key, profile });
// POST `body` to `url` with these headers: content-type, content-digest, signature-input, signature.

// Buyer side: the seller's public JWKS (normally fetched from its jwks_uri).
const jwks = { keys: [publishedJwk(key, profile)] };
const keys = jwksKeyResolver(jwks, 'seller-a');
const bytes = new TextEncoder().encode(body);
const verified = await verifyWebhookSignature(
  { method: 'POST', url, headers, body: bytes },
  { profile, keys },
);
console.log(`verified: keyid ${verified.keyid}, sender ${verified.senderId}`);

// Any change to the bytes fails with the protocol's error code.
const tampered = new TextEncoder().encode(body.replace('mb_1001', 'mb_9999'));
const outcome = await verifyWebhookSignature(
  { method: 'POST', url, headers, body: tampered },
  { profile, keys },
).then(
  () => 'verified (it should not have)',
  (err: unknown) => (err instanceof WebhookVerificationError ? err.code : Promise.reject(err)),
);
console.log(`tampered: ${outcome}`);
