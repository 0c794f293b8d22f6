/**
 * A key resolver over a JWKS the caller already holds (one sender, keys known in advance):
 * the simplest `KeyResolver` for verifying with `verifyWebhookSignature`. Receivers that
 * discover and refresh keys use the receiver's `TrustedKeyResolver` instead.
 */
import type { JWK } from './keys.js';
import type { KeyResolver, ResolvedKey } from './verify.js';

export function jwksKeyResolver(jwks: { keys: JWK[] }, senderId: string): KeyResolver {
  const byKid = new Map<string, ResolvedKey>();
  for (const jwk of jwks.keys) {
    if (typeof jwk.kid === 'string') byKid.set(jwk.kid, { jwk, senderId });
  }
  return { resolve: async (keyid) => byKid.get(keyid) ?? null };
}
