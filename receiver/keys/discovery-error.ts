/**
 * A sender whose keys cannot be trusted or found, for a reason the supplement names (§2.6):
 * answered 401 `Signature error="request_signature_<reason>"` at step 7. The webhook
 * namespace has no twins of these codes (shared/errors/webhook-codes.ts says why the
 * request ones are used), and `webhook_signature_key_unknown` would hide an operator-fixable
 * cause behind "wrong key".
 */
import {
  WebhookVerificationError,
  type KeyDiscoveryCode,
} from '../../shared/errors/webhook-codes.js';
import type { DiscoveryFailure } from './brand-discovery.js';

export type KeyFailure =
  DiscoveryFailure | 'key_origin_mismatch' | 'key_origin_missing' | 'jwks_unavailable';

export function discoveryCode(reason: KeyFailure): KeyDiscoveryCode {
  return `request_signature_${reason}`;
}

export class KeyDiscoveryError extends WebhookVerificationError {
  static override readonly code = 'ERR_KEY_DISCOVERY';

  readonly reason: KeyFailure;
  readonly senderId: string;
  constructor(reason: KeyFailure, senderId: string, message?: string) {
    super(discoveryCode(reason), 7, message ?? reason);
    this.name = 'KeyDiscoveryError';
    this.reason = reason;
    this.senderId = senderId;
  }
}
