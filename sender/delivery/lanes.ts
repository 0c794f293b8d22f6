/**
 * Live first (issue #26, a bulk redeliver beside live delivery): the worker's two lanes.
 * Live rows (fresh events, their retries, a resumed destination's rows) never wait here.
 * Recovered rows (a console recover, a Redis-loss recovery: the `recovery` queues of
 * queue.ts) each take a slot of this gate before their attempt: up to `cap` of them run
 * while no live row is in the process, and only `whileLive` (at least 1) while any is.
 *
 * Why a gate on rows and not a priority on jobs: one worker process shares its CPU, its
 * database sessions and its origin slots between both lanes, so what slows live delivery is
 * recovered attempts running beside it, whichever queue their jobs came from. Why
 * `whileLive` is never 0: a steady live stream must not stop a recovery for good; one row
 * at a time keeps it moving at the pace of one attempt.
 */

export class LiveFirst {
  /** Live rows in the process (their job taken, their attempt not finished). */
  private live = 0;
  /** Recovered rows holding a slot. */
  private recovering = 0;
  private readonly waiting: Array<() => void> = [];
  /**
   * The most recovered rows running at once when one was let in while a live row was in
   * (tests: at most `whileLive`; rows already running when live rows came are not counted).
   */
  peakWhileLive = 0;

  constructor(
    private readonly cap: number,
    private readonly whileLive = 1,
  ) {
    if (!(cap >= 1) || !(whileLive >= 1)) throw new RangeError('lane sizes must be at least 1');
  }

  /** `n` live rows came in (a job taken): recovered rows start only `whileLive` at a time. */
  liveBegin(n: number): void {
    this.live += n;
  }

  /** `n` live rows are done: with none left, recovered rows take up to `cap` again. */
  liveEnd(n: number): void {
    this.live -= n;
    if (this.live === 0) this.wake();
  }

  /** A recovered row's slot, granted in arrival order. */
  acquireRecovery(): Promise<void> {
    if (this.waiting.length === 0 && this.room() > 0) {
      this.take();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  releaseRecovery(): void {
    this.recovering--;
    this.wake();
  }

  /**
   * Runs one row of `lane`: a live row is counted in while it runs, a recovered row first
   * takes its slot.
   */
  async run<T>(lane: 'live' | 'recovery', fn: () => Promise<T>): Promise<T> {
    if (lane === 'live') {
      this.liveBegin(1);
      try {
        return await fn();
      } finally {
        this.liveEnd(1);
      }
    }
    await this.acquireRecovery();
    try {
      return await fn();
    } finally {
      this.releaseRecovery();
    }
  }

  /** Live rows in, recovered rows running, recovered rows waiting (metrics, tests). */
  state(): { live: number; recovering: number; waiting: number } {
    return { live: this.live, recovering: this.recovering, waiting: this.waiting.length };
  }

  private room(): number {
    return (this.live > 0 ? this.whileLive : this.cap) - this.recovering;
  }

  private take(): void {
    this.recovering++;
    if (this.live > 0) this.peakWhileLive = Math.max(this.peakWhileLive, this.recovering);
  }

  private wake(): void {
    while (this.waiting.length > 0 && this.room() > 0) {
      this.take();
      this.waiting.shift()!();
    }
  }
}
