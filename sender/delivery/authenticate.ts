/**
 * The headers of one attempt: a fresh RFC 9421 signature every time (new created,
 * expires, nonce), or the legacy HMAC / Bearer header where the buyer opted in.
 */
import { createHmac } from 'node:crypto';
import type { BrandProfile } from '../../shared/brand.js';
import type { SigningKey } from '../../shared/signing/keys.js';
import { signWebhook } from '../../shared/signing/sign.js';
import type { DeliveryAuth } from '../outbox/types.js';

export interface Signer {
  key: SigningKey;
  profile: BrandProfile;
}

/** Legacy HMAC-SHA256 over `<timestamp>.<raw body>` (deprecated; spec §Webhook authentication). */
function hmacHeaders(secret: string, body: Buffer, profile: BrandProfile, nowS: number) {
  const ts = String(nowS);
  const mac = createHmac('sha256', secret).update(`${ts}.`).update(body).digest('hex');
  return {
    'content-type': 'application/json',
    [profile.hmacSignatureHeader.toLowerCase()]: `sha256=${mac}`,
    [profile.hmacTimestampHeader.toLowerCase()]: ts,
  };
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
      return hmacHeaders(auth.secret, body, signer.profile, nowS);
    case 'bearer':
      return { 'content-type': 'application/json', authorization: `Bearer ${auth.token}` };
    default:
      return signWebhook(
        { method: 'POST', url, body },
        { key: signer.key, profile: signer.profile, now: nowS },
      );
  }
}
