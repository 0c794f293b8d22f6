/**
 * Time for the channels: one source (ms since epoch) for schedules and coalescence
 * windows, plus how often the runner ticks. Tests and demos speed it up.
 */

export interface ReportingClock {
  now(): number;
  /** How often `start()` runs `tick()`, in real milliseconds (default 1000). */
  tickIntervalMs?: number;
}

/** A clock running `factor` times faster than the wall clock, from `start` (default now). */
export function acceleratedClock(options: {
  factor: number;
  start?: number;
  tickIntervalMs?: number;
}): ReportingClock {
  if (!(options.factor > 0)) throw new RangeError('factor must be > 0');
  const t0 = Date.now();
  const start = options.start ?? t0;
  return {
    now: () => start + (Date.now() - t0) * options.factor,
    tickIntervalMs: options.tickIntervalMs ?? 1000,
  };
}

/** The runner's wall clock with the tick interval from `SVC_CHANNEL_TICK_MS`. */
export function wallClock(tickIntervalMs = 1000): ReportingClock {
  return { now: () => Date.now(), tickIntervalMs };
}
