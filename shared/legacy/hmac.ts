/**
 * Legacy HMAC-SHA256 webhook authentication (deprecated in 3.x, removed in 4.0; spec
 * "Webhook authentication", supplement §6.8): `sha256=<hex>` of HMAC-SHA256 over
 * `<timestamp>.<raw body bytes>`, timestamp in Unix seconds, 300 s skew.
 *
 * Failure codes: the supplement pins none for legacy schemes, so we reuse the 9421 ones by
 * meaning (receivers answer 401 and `WWW-Authenticate` the same way for both modes):
 * - `webhook_signature_header_malformed`: a header missing or empty, a non-numeric
 *   timestamp, a signature that is not `sha256=` + 64 hex digits;
 * - `webhook_signature_window_invalid`: |now - timestamp| > 300 s;
 * - `webhook_signature_invalid`: well-formed but matches no configured secret.
 * The `step` mirrors the 9421 step of the same meaning (1 parse, 5 window, 10 verify).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { BrandProfile } from '../brand.js';
import { WebhookVerificationError } from '../errors/webhook-codes.js';

export const HMAC_MAX_SKEW_SECONDS = 300;

const SIGNATURE_PATTERN = /^sha256=([0-9a-fA-F]{64})$/;
/** Unix seconds: digits only (no sign, no fraction, no exponent), at most 12 of them. */
const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/;

type Body = Uint8Array | string;

function mac(secret: string, timestamp: string, body: Body): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(body).digest();
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export interface SignHmacInput {
  secret: string;
  /** The exact bytes sent (compact JSON); a string is taken as its UTF-8 bytes. */
  body: Body;
  /** Unix seconds; defaults to now. */
  timestamp?: number | string;
}

export interface HmacSignature {
  signature: string;
  timestamp: string;
}

export function signHmac(input: SignHmacInput): HmacSignature {
  const timestamp = String(input.timestamp ?? nowSeconds());
  if (!TIMESTAMP_PATTERN.test(timestamp)) throw new TypeError('timestamp must be Unix seconds');
  return {
    signature: `sha256=${mac(input.secret, timestamp, input.body).toString('hex')}`,
    timestamp,
  };
}

/** The two headers to send, named by the brand (`X-<BRAND>-Signature`, `-Timestamp`). */
export function hmacHeaders(
  input: SignHmacInput & { profile: BrandProfile },
): Record<string, string> {
  const signed = signHmac(input);
  return {
    [input.profile.hmacSignatureHeader]: signed.signature,
    [input.profile.hmacTimestampHeader]: signed.timestamp,
  };
}

export interface VerifyHmacInput {
  /** Current secret first, then the previous one during a rotation. */
  secrets: readonly string[];
  signature?: string | undefined;
  timestamp?: string | undefined;
  /** The raw body bytes as received. */
  body: Body;
  /** Unix seconds; defaults to now. */
  now?: number;
}

/**
 * The checks of `verifyHmac` that need no body (headers present, numeric timestamp, skew,
 * signature form), so a receiver can refuse before reading one; `verifyHmac` runs them first.
 */
export function checkHmacHeaders(input: Pick<VerifyHmacInput, 'signature' | 'timestamp' | 'now'>): {
  timestamp: string;
  received: Buffer;
} {
  const { signature, timestamp } = input;
  if (!signature || !timestamp) {
    throw new WebhookVerificationError(
      'webhook_signature_header_malformed',
      1,
      'HMAC signature or timestamp header missing',
    );
  }
  if (!TIMESTAMP_PATTERN.test(timestamp)) {
    throw new WebhookVerificationError(
      'webhook_signature_header_malformed',
      1,
      'non-numeric timestamp',
    );
  }
  const now = input.now ?? nowSeconds();
  if (Math.abs(now - Number(timestamp)) > HMAC_MAX_SKEW_SECONDS) {
    throw new WebhookVerificationError(
      'webhook_signature_window_invalid',
      5,
      'timestamp outside 300 s',
    );
  }
  const m = SIGNATURE_PATTERN.exec(signature.trim());
  if (!m) {
    throw new WebhookVerificationError(
      'webhook_signature_header_malformed',
      1,
      'signature is not sha256= followed by 64 hex digits',
    );
  }
  return { timestamp, received: Buffer.from(m[1] as string, 'hex') };
}

/**
 * Verifies in the order of §6.8: headers present, numeric timestamp, skew, then the
 * signature's form (`sha256=` + 64 hex, checked before any HMAC work) and a constant-time
 * compare against every configured secret (all are computed, so timing does
 * not reveal which one matched). Returns the index of the matching secret.
 */
export function verifyHmac(input: VerifyHmacInput): { secretIndex: number } {
  const { timestamp, received } = checkHmacHeaders(input);
  if (input.secrets.length === 0) throw new TypeError('verifyHmac needs at least one secret');
  let match = -1;
  input.secrets.forEach((secret, i) => {
    if (timingSafeEqual(mac(secret, timestamp, input.body), received) && match < 0) match = i;
  });
  if (match < 0) {
    throw new WebhookVerificationError('webhook_signature_invalid', 10, 'HMAC mismatch');
  }
  return { secretIndex: match };
}

/** Header lookup for `verifyHmac` from lower-cased request headers. */
export function hmacHeaderValues(
  headers: Record<string, string | string[] | undefined>,
  profile: BrandProfile,
): { signature: string | undefined; timestamp: string | undefined } {
  const one = (name: string): string | undefined => {
    const v = headers[name.toLowerCase()];
    // A repeated header is ambiguous: treat it as garbled (caught as missing/malformed).
    return Array.isArray(v) ? (v.length === 1 ? v[0] : '') : v;
  };
  return {
    signature: one(profile.hmacSignatureHeader),
    timestamp: one(profile.hmacTimestampHeader),
  };
}
export { assertLegacyCredential, legacyCredentialProblem } from './credential.js';
