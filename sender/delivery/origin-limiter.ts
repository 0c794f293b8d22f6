/**
 * Per-origin admission inside one worker process: at most N attempts in flight per
 * origin, and an origin that answered 429 paused for its Retry-After. A job refused here
 * is pushed back to the delayed set, so a slow or throttled buyer holds none of the
 * worker's slots that the other buyers need.
 */
export type Admission = { ok: true; release: () => void } | { ok: false; waitMs: number };

export class OriginLimiter {
  private readonly active = new Map<string, number>();
  private readonly pausedUntil = new Map<string, number>();

  constructor(
    private readonly perOrigin: number,
    private readonly random: () => number = Math.random,
  ) {}

  tryAcquire(origin: string, now = Date.now()): Admission {
    const until = this.pausedUntil.get(origin);
    if (until !== undefined) {
      if (until > now) return { ok: false, waitMs: until - now + Math.floor(this.random() * 100) };
      this.pausedUntil.delete(origin);
    }
    const n = this.active.get(origin) ?? 0;
    if (n >= this.perOrigin) return { ok: false, waitMs: 50 + Math.floor(this.random() * 200) };
    this.active.set(origin, n + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        const left = (this.active.get(origin) ?? 1) - 1;
        if (left <= 0) this.active.delete(origin);
        else this.active.set(origin, left);
      },
    };
  }

  pause(origin: string, ms: number, now = Date.now()): void {
    const until = now + ms;
    if ((this.pausedUntil.get(origin) ?? 0) < until) this.pausedUntil.set(origin, until);
  }

  inFlight(origin: string): number {
    return this.active.get(origin) ?? 0;
  }
}
