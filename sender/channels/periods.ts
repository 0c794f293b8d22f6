/**
 * UTC reporting periods (supplement §4.7): hourly, daily and monthly periods aligned on
 * UTC boundaries; a period is reported as `start` .. last second (daily 00:00:00Z-23:59:59Z).
 */
import type { ReportingFrequency, ReportingPeriod } from './types.js';

/** Start (ms) of the period containing `t`. */
export function periodStartContaining(frequency: ReportingFrequency, t: number): number {
  const d = new Date(t);
  switch (frequency) {
    case 'hourly':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours());
    case 'daily':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    case 'monthly':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }
}

/** Start (ms) of the period after the one starting at `start`. */
export function nextPeriodStart(frequency: ReportingFrequency, start: number): number {
  const d = new Date(start);
  switch (frequency) {
    case 'hourly':
      return start + 3_600_000;
    case 'daily':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
    case 'monthly':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
}

/** ISO 8601 UTC to the second, e.g. `2026-11-22T00:00:00Z`. */
export function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The wire form of [start, endExclusive): end is the last second inside the period. */
export function reportingPeriod(start: number, endExclusive: number): ReportingPeriod {
  return { start: isoSeconds(start), end: isoSeconds(Math.max(start, endExclusive - 1000)) };
}
