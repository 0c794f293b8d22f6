/** The receiver's answers. Bodies are small JSON documents that never echo the request. */
import type { WebhookVerificationError } from '../../shared/errors/webhook-codes.js';

export interface ReceiverResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const JSON_TYPE = { 'content-type': 'application/json' };

export function errorResponse(
  status: number,
  code: string,
  message: string,
  extra: Record<string, string> = {},
  fields?: string[],
): ReceiverResponse {
  const error: Record<string, unknown> = { code, message };
  if (fields) error.fields = fields;
  return { status, headers: { ...JSON_TYPE, ...extra }, body: JSON.stringify({ error }) };
}

/** 401 with exactly `Signature error="<code>"`: no realm, no other parameters. */
export function verificationFailure(err: WebhookVerificationError): ReceiverResponse {
  return errorResponse(401, err.code, 'webhook verification failed', {
    'www-authenticate': err.wwwAuthenticate,
  });
}

export function ok(outcome: string): ReceiverResponse {
  return { status: 200, headers: JSON_TYPE, body: JSON.stringify({ status: outcome }) };
}

/** Retryable: the sender keeps the delivery and tries again later. */
export function retryLater(code: string, message: string, seconds: number): ReceiverResponse {
  return errorResponse(503, code, message, { 'retry-after': String(seconds) });
}
