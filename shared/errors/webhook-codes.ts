/**
 * The 17 webhook verification error codes (supplement §1). Every one is answered with
 * 401 and `WWW-Authenticate: Signature error="<code>"`, and every one is non-retryable
 * for the sender.
 */
import { SvcError } from './base.js';
import type { SvcErrorCode } from './codes.js';
export const WEBHOOK_ERROR_CODES = [
  'webhook_signature_header_malformed',
  'webhook_signature_params_incomplete',
  'webhook_signature_tag_invalid',
  'webhook_signature_alg_not_allowed',
  'webhook_signature_window_invalid',
  'webhook_signature_components_incomplete',
  'webhook_signature_key_unknown',
  'webhook_signature_key_purpose_invalid',
  'webhook_signature_key_revoked',
  'webhook_signature_revocation_stale',
  'webhook_signature_invalid',
  'webhook_signature_digest_mismatch',
  'webhook_signature_replayed',
  'webhook_signature_rate_abuse',
  'webhook_body_malformed',
  'webhook_target_uri_malformed',
  'webhook_mode_mismatch',
] as const;

export type WebhookErrorCode = (typeof WEBHOOK_ERROR_CODES)[number];

/**
 * Key discovery failures (supplement §2.6). The webhook namespace has no twins of these, so
 * the receiver answers them with the request-namespace codes the supplement lists (still a
 * 401 `Signature error="<code>"`); a sender that does not know them retries, as for any
 * 401 it cannot classify, which suits failures an operator can fix.
 */
export const KEY_DISCOVERY_CODES = [
  'request_signature_brand_json_url_missing',
  'request_signature_capabilities_unreachable',
  'request_signature_brand_json_unreachable',
  'request_signature_brand_json_malformed',
  'request_signature_brand_origin_mismatch',
  'request_signature_agent_not_in_brand_json',
  'request_signature_brand_json_ambiguous',
  'request_signature_key_origin_mismatch',
  'request_signature_key_origin_missing',
  'request_signature_jwks_unavailable',
] as const;

export type KeyDiscoveryCode = (typeof KEY_DISCOVERY_CODES)[number];

export function isWebhookErrorCode(value: unknown): value is WebhookErrorCode {
  return typeof value === 'string' && (WEBHOOK_ERROR_CODES as readonly string[]).includes(value);
}

/** A verification failure: the code is the contract, the message is for logs only. */
export class WebhookVerificationError extends SvcError {
  static override readonly code: SvcErrorCode = 'ERR_WEBHOOK_VERIFICATION';

  /** The protocol code (the wire contract), not the class code `ERR_WEBHOOK_VERIFICATION`. */
  declare readonly code: WebhookErrorCode | KeyDiscoveryCode;
  /** The checklist step that failed (1-14; "9a" for the per-keyid cap), informational. */
  readonly step: string;
  readonly status = 401;
  constructor(code: WebhookErrorCode | KeyDiscoveryCode, step: number | string, message?: string) {
    super(message ?? code, { code });
    this.step = String(step);
  }

  /** The exact header value: no realm, no other parameters. */
  get wwwAuthenticate(): string {
    return `Signature error="${this.code}"`;
  }
}

/** Reads the code back out of a `WWW-Authenticate` header (sender-side classification). */
export function webhookCodeFromWwwAuthenticate(
  header: string | undefined,
): WebhookErrorCode | null {
  if (!header) return null;
  const m = /(?:^|[\s,])error="?([a-z_]+)"?/.exec(header);
  return m && isWebhookErrorCode(m[1]) ? m[1] : null;
}
