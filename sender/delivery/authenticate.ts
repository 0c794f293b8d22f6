/**
 * The headers of one attempt: a fresh RFC 9421 signature every time (new created,
 * expires, nonce), or the legacy HMAC / Bearer header where the buyer opted in.
 */
import type { BrandProfile } from '../../shared/brand.js';
import { hmacHeaders } from '../../shared/legacy/hmac.js';
import type { SigningKey } from '../../shared/signing/keys.js';
import { signWebhook } from '../../shared/signing/sign.js';
import type { DeliveryAuth } from '../outbox/types.js';

export interface Signer {
  key: SigningKey;
  profile: BrandProfile;
}

export function attemptHeaders(
  url: string,
  body: Buffer,
  auth: DeliveryAuth,
  signer: Signer,
  nowS = Math.floor(Date.now() / 1000),
): Record<string, string> {
  switch (auth.mode) {
    case 'hmac':
      // Legacy HMAC-SHA256 over `<timestamp>.<raw body>` (deprecated).
      return {
        'content-type': 'application/json',
        ...hmacHeaders({ secret: auth.secret, body, timestamp: nowS, profile: signer.profile }),
      };
    case 'bearer':
      return { 'content-type': 'application/json', authorization: `Bearer ${auth.token}` };
    default:
      return signWebhook(
        { method: 'POST', url, body },
        { key: signer.key, profile: signer.profile, now: nowS },
      );
  }
}
