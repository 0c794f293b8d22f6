/**
 * What one attempt's outcome means for the delivery (supplement §4.1): done, stop this
 * key, or try again. Nothing here disables a target: a later event is always tried.
 */
import type { AttemptTiming } from './timing.js';
import { webhookCodeFromWwwAuthenticate } from '../../shared/errors/webhook-codes.js';

export type AttemptFailure = 'timeout' | 'connection_error' | 'target_refused';

export type AttemptResult =
  | {
      kind: 'response';
      status: number;
      wwwAuthenticate?: string;
      retryAfter?: string;
      /** The first bytes of the response body (for the attempt's snippet), if any. */
      head?: Buffer;
      /** The response's headers as undici gives them (for the attempt's exchange record). */
      headers?: Record<string, string | string[] | undefined>;
      timing?: AttemptTiming;
    }
  | { kind: 'error'; failure: AttemptFailure; detail: string; timing?: AttemptTiming };

export type Verdict =
  | { action: 'delivered' }
  | { action: 'stop'; reason: string }
  | { action: 'retry'; reason: string; retryAfterMs?: number };

/** `Retry-After` as delay-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, nowMs = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP date (IMF-fixdate, or the obsolete forms, all ending in GMT); Date.parse
  // alone would read "-1" or "1.5" as dates.
  if (!/^[A-Za-z]{3},? .* GMT$/.test(v)) return null;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

export function classify(result: AttemptResult, nowMs = Date.now()): Verdict {
  if (result.kind === 'error') {
    // A refused target (scheme, reserved address) will not fix itself by waiting.
    if (result.failure === 'target_refused') return { action: 'stop', reason: 'target_refused' };
    return { action: 'retry', reason: result.failure };
  }
  const { status } = result;
  if (status >= 200 && status < 300) return { action: 'delivered' };
  // The receiver holds a different payload under this key: resending cannot succeed.
  if (status === 409) return { action: 'stop', reason: 'http_409_conflict' };
  if (status === 401) {
    const code = webhookCodeFromWwwAuthenticate(result.wwwAuthenticate);
    // A verifier verdict on this delivery: stop it (later events still go).
    if (code) return { action: 'stop', reason: code };
    // A bare 401 is a receiver misconfiguration that may be fixed: keep trying.
    return { action: 'retry', reason: 'http_401' };
  }
  if (status === 429 || status >= 500 || status === 408 || (status >= 300 && status < 400)) {
    const retryAfterMs = parseRetryAfter(result.retryAfter, nowMs);
    return retryAfterMs === null
      ? { action: 'retry', reason: `http_${status}` }
      : { action: 'retry', reason: `http_${status}`, retryAfterMs };
  }
  return { action: 'stop', reason: `http_${status}` };
}
