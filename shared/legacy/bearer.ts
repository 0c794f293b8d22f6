/**
 * Legacy Bearer webhook authentication (deprecated, removed in 4.0): the registered token
 * sent as `Authorization: Bearer <token>`. No body integrity, so sellers should refuse it
 * for mutating callbacks. Codes as in ./hmac.ts: a missing or garbled header is
 * `webhook_signature_header_malformed`, a wrong token `webhook_signature_invalid`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from '../errors/webhook-codes.js';

export { assertLegacyCredential, legacyCredentialProblem } from './credential.js';

const BEARER_PATTERN = /^Bearer +([\x21-\x7e]+) *$/i;

/** `Authorization` value for the sender. */
export function bearerAuthorization(token: string): string {
  return `Bearer ${token}`;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

export interface VerifyBearerInput {
  /** Current token first, then the previous one during a rotation. */
  tokens: readonly string[];
  /** The `Authorization` header as received. */
  authorization: string | string[] | undefined;
}

/**
 * Compares in constant time: both sides are hashed to 32 bytes first, so neither the
 * content nor the length of the expected token shows in the timing. Returns the index of
 * the matching token.
 */
export function verifyBearer(input: VerifyBearerInput): { tokenIndex: number } {
  const header = Array.isArray(input.authorization)
    ? input.authorization.length === 1
      ? input.authorization[0]
      : undefined
    : input.authorization;
  const m = header === undefined ? null : BEARER_PATTERN.exec(header.trim());
  if (!m) {
    throw new WebhookVerificationError(
      'webhook_signature_header_malformed',
      1,
      'Authorization is not a single Bearer credential',
    );
  }
  if (input.tokens.length === 0) throw new TypeError('verifyBearer needs at least one token');
  const received = digest(m[1] as string);
  let match = -1;
  input.tokens.forEach((token, i) => {
    if (timingSafeEqual(digest(token), received) && match < 0) match = i;
  });
  if (match < 0)
    throw new WebhookVerificationError('webhook_signature_invalid', 10, 'Bearer token mismatch');
  return { tokenIndex: match };
}
