/** The receiver's answers. Bodies are small JSON documents that never echo the request. */
import type { WebhookVerificationError } from '../../shared/errors/webhook-codes.js';
import { BodyBudgetError, BodyDeadlineError, BodyReadError, BodyTooLargeError } from './gates.js';

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

const CLOSE = { connection: 'close' };

export function payloadTooLarge(maxBody: number): ReceiverResponse {
  return errorResponse(413, 'payload_too_large', `body over ${maxBody} bytes`, CLOSE);
}

/**
 * The answer to a body that could not be read within its bounds, or null for any other
 * error. Each closes the connection: the rest of the body is not wanted.
 */
export function bodyRefusal(
  err: unknown,
  maxBody: number,
): { res: ReceiverResponse; code: string } | null {
  if (err instanceof BodyTooLargeError) {
    return { res: payloadTooLarge(maxBody), code: 'payload_too_large' };
  }
  if (err instanceof BodyBudgetError) {
    // Bodies in flight free up within seconds: come back soon.
    const busy = retryLater('receiver_busy', 'too many request bodies in flight', 1);
    return { res: { ...busy, headers: { ...busy.headers, ...CLOSE } }, code: 'receiver_busy' };
  }
  if (err instanceof BodyDeadlineError) {
    const res = errorResponse(408, 'body_timeout', 'the body did not arrive in time', CLOSE);
    return { res, code: 'body_timeout' };
  }
  if (err instanceof BodyReadError) {
    const res = errorResponse(400, 'body_incomplete', 'the body did not arrive whole', CLOSE);
    return { res, code: 'body_incomplete' };
  }
  return null;
}
