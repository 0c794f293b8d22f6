/**
 * The retry schedule: exponential with ±25 % jitter, the first retries within seconds
 * (the conformance runner expects a second delivery within 90 s of three 503s), capped,
 * and never past the horizon counted from the first attempt.
 */
export interface BackoffOptions {
  /** Delay after the first failed attempt; default 1 s. */
  baseMs?: number;
  /** Longest delay between attempts; default 10 min. */
  capMs?: number;
  /** Relative jitter, 0-1; default 0.25. */
  jitter?: number;
  /** Bounds applied to a receiver's `Retry-After`; default 1 s to 1 h. */
  retryAfterMinMs?: number;
  retryAfterMaxMs?: number;
}

export function backoffDelay(
  failedAttempts: number,
  options: BackoffOptions = {},
  random: () => number = Math.random,
): number {
  const base = options.baseMs ?? 1000;
  const cap = options.capMs ?? 600_000;
  const jitter = options.jitter ?? 0.25;
  const raw = Math.min(cap, base * 2 ** Math.max(0, Math.min(failedAttempts - 1, 40)));
  return Math.max(0, Math.round(raw * (1 + jitter * (2 * random() - 1))));
}

/** The delay before the next attempt, honouring `Retry-After` within bounds. */
export function nextDelay(
  failedAttempts: number,
  retryAfterMs: number | undefined,
  options: BackoffOptions = {},
  random: () => number = Math.random,
): number {
  const computed = backoffDelay(failedAttempts, options, random);
  if (retryAfterMs === undefined) return computed;
  const lo = options.retryAfterMinMs ?? 1000;
  const hi = options.retryAfterMaxMs ?? 3_600_000;
  return Math.max(computed, Math.min(hi, Math.max(lo, retryAfterMs)));
}
