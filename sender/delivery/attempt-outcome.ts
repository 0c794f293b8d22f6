/**
 * One attempt's outcome, decided and described (service spec "Delivery": retries with
 * back-off until the retry horizon): the state the row is left in and when it is tried
 * again, the activity record's status and message, and the one log line per attempt.
 * Pure: the worker (worker.ts) applies it.
 */
import type { ActivityStatus } from '../activity/activity-log.js';
import { keyPrefix } from '../outbox/keys.js';
import type { ClaimedEvent } from '../outbox/outbox.js';
import { nextDelay, type BackoffOptions } from './backoff.js';
import type { AttemptResult, Verdict } from './classify.js';
import type { AttemptReport } from './worker-options.js';

export interface DecidedOutcome {
  state: AttemptReport['state'];
  /** Unix ms of the next attempt (pending only), else null. */
  nextAt: number | null;
  /** The retry's delay (pending only). */
  delayMs?: number;
  error: string | null;
}

/**
 * Delivered, stopped, or retried after the back-off unless that passes the horizon (counted
 * from the first attempt, on the database clock): then expired.
 */
export function decideOutcome(
  c: ClaimedEvent,
  verdict: Verdict,
  at: { firedAt: Date; completedAt: Date; backoff?: BackoffOptions },
): DecidedOutcome {
  if (verdict.action === 'delivered') return { state: 'delivered', nextAt: null, error: null };
  if (verdict.action === 'stop') return { state: 'stopped', nextAt: null, error: verdict.reason };
  const delay = nextDelay(c.attempt, verdict.retryAfterMs, at.backoff);
  const horizonEnd = c.firstAttemptAt + c.horizonSeconds * 1000;
  const nowDb = c.dbNow + (at.completedAt.getTime() - at.firedAt.getTime());
  if (nowDb + delay >= horizonEnd) return { state: 'expired', nextAt: null, error: verdict.reason };
  return { state: 'pending', nextAt: Date.now() + delay, delayMs: delay, error: verdict.reason };
}

export function activityStatus(result: AttemptResult): Exclude<ActivityStatus, 'pending'> {
  if (result.kind === 'response') {
    return result.status >= 200 && result.status < 300 ? 'success' : 'failed';
  }
  return result.failure === 'timeout' ? 'timeout' : 'connection_error';
}

export function errorMessage(result: AttemptResult, verdict: Verdict): string | null {
  if (result.kind === 'error') return `${result.failure}: ${result.detail}`;
  if (verdict.action === 'delivered') return null;
  return verdict.reason;
}

/** This delivery's own credentials, masked in its response snippet. */
export function authSecrets(auth: ClaimedEvent['auth']): string[] {
  return auth.mode === 'hmac' ? [auth.secret] : auth.mode === 'bearer' ? [auth.token] : [];
}

export function httpStatus(result: AttemptResult): number | null {
  return result.kind === 'response' ? result.status : null;
}

/**
 * One info line per attempt outcome: where (origin only: a path may carry tokens), what came
 * back, and when the next try is; never the body, headers or credentials.
 */
export function attemptLogLine(
  c: ClaimedEvent,
  o: {
    origin: string;
    result: AttemptResult;
    verdict: Verdict;
    state: AttemptReport['state'];
    nextAt: number | null;
    elapsed: number;
  },
): { fields: Record<string, unknown>; message: string } {
  const { origin, result, verdict, state, nextAt } = o;
  const fields = {
    event: 'webhook_attempt',
    outboxId: c.id,
    type: c.notificationType,
    key: keyPrefix(c.idempotencyKey),
    origin,
    attempt: c.attempt,
    status: httpStatus(result),
    state,
    ...(verdict.action === 'delivered' ? {} : { reason: verdict.reason }),
    ...(nextAt !== null ? { next_attempt_at: new Date(nextAt).toISOString() } : {}),
    ms: Math.round(o.elapsed),
  };
  const message = `webhook ${state}: ${origin} attempt ${c.attempt}, ${
    httpStatus(result) !== null
      ? `HTTP ${httpStatus(result)}`
      : (verdict as { reason: string }).reason
  }${nextAt !== null ? `, next at ${new Date(nextAt).toISOString()}` : ''}`;
  return { fields, message };
}
