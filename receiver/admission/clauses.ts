/**
 * The four alarm clauses of new-keyid admission pressure (supplement §2.9), evaluated on the
 * number of first-time keyids in the current 5-minute window against history of the same
 * windows. Pure: the tracker feeds it counts from PostgreSQL.
 *
 *   (a) short:  current > a × the 24 h moving average per window
 *   (b) medium: current > b × the 30-day P95 per window
 *   (c) long:   current > c × max(the 90-day P99 per window, the clause-d ceiling)
 *   (d) ceiling: current > max(d_min, d_fraction × unique keyids of the last 30 days)
 *
 * With little history the ratio clauses would trip on any single rotation (0 × anything is
 * 0), so (a) and (b) also need at least `minNew` new keyids in the window [gap: ours].
 * A sender's initial key set (its keyids first seen within one window of its very first
 * one: a sender just added to the trust file, a fresh deployment, the first hour's demo)
 * has no baseline to be a multiple of, so (a) and (b) do not count it [gap: ours]; (c) and
 * (d), whose floor is the clause-d ceiling, still do, so a flood at first sight alarms.
 */

export const WINDOW_SECONDS = 300;
const DAY = 86_400;

export type ClauseName = 'a_short_ratio' | 'b_medium_ratio' | 'c_long_ratio' | 'd_ceiling';

export interface Thresholds {
  /** (a) multiplier of the 24 h moving average (non-normative start: 3). */
  shortRatio: number;
  /** (b) multiplier of the 30-day P95 (start: 2). */
  mediumRatio: number;
  /** (c) multiplier of max(90-day P99, clause-d ceiling) (start: 1.5). */
  longRatio: number;
  /** (d) floor of the ceiling, keyids per window (start: 20). */
  ceilingMin: number;
  /** (d) fraction of the 30-day unique keyids (start: 0.1). */
  ceilingFraction: number;
}

export const THRESHOLD_NAMES = [
  'shortRatio',
  'mediumRatio',
  'longRatio',
  'ceilingMin',
  'ceilingFraction',
] as const satisfies ReadonlyArray<keyof Thresholds>;

/** The tuning guide's non-normative starting values. */
export const GUIDE_VALUES: Thresholds = {
  shortRatio: 3,
  mediumRatio: 2,
  longRatio: 1.5,
  ceilingMin: 20,
  ceilingFraction: 0.1,
};

/** History of one scope: first-seen times (Unix seconds) of its keyids over 90 days. */
export interface ScopeHistory {
  /** First-seen times before the current window, within the last 90 days. */
  past: number[];
  /** First-time keyids in the current window (now − 300 s, now]. */
  current: number;
  /** Distinct keyids seen in the last 30 days (first seen then or earlier). */
  active30d: number;
  /** Of `current`, those in their sender's initial key set (not counted by (a) and (b)). */
  onboarding?: number;
}

export interface ClauseResult {
  clause: ClauseName;
  tripped: boolean;
  /** The count the current window had to exceed. */
  threshold: number;
}

/** Nearest-rank percentile over `windows` windows of which only `nonZero` had keyids. */
export function percentile(nonZero: number[], windows: number, p: number): number {
  if (windows <= 0) return 0;
  const rank = Math.ceil((p / 100) * windows); // 1-based rank in ascending order
  const zeros = windows - nonZero.length;
  if (rank <= zeros) return 0;
  const sorted = [...nonZero].sort((x, y) => x - y);
  return sorted[rank - zeros - 1] ?? sorted[sorted.length - 1] ?? 0;
}

/** Counts per window of the first-seen times in (from, to], windows aligned on `to`. */
function windowCounts(times: number[], from: number, to: number): number[] {
  const counts = new Map<number, number>();
  for (const ts of times) {
    if (ts <= from || ts > to) continue;
    const w = Math.floor((to - ts) / WINDOW_SECONDS);
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  return [...counts.values()];
}

export function evaluateClauses(
  h: ScopeHistory,
  nowSeconds: number,
  t: Thresholds,
  minNew: number,
): ClauseResult[] {
  const end = nowSeconds - WINDOW_SECONDS; // history ends where the current window starts
  const day = windowCounts(h.past, end - DAY, end);
  const month = windowCounts(h.past, end - 30 * DAY, end);
  const quarter = windowCounts(h.past, end - 90 * DAY, end);
  const mean24h = day.reduce((a, b) => a + b, 0) / (DAY / WINDOW_SECONDS);
  const p95 = percentile(month, (30 * DAY) / WINDOW_SECONDS, 95);
  const p99 = percentile(quarter, (90 * DAY) / WINDOW_SECONDS, 99);
  const ceiling = Math.max(t.ceilingMin, t.ceilingFraction * h.active30d);
  const c = h.current;
  const rotated = c - (h.onboarding ?? 0);
  const a = t.shortRatio * mean24h;
  const b = t.mediumRatio * p95;
  const l = t.longRatio * Math.max(p99, ceiling);
  return [
    { clause: 'a_short_ratio', tripped: rotated >= minNew && rotated > a, threshold: a },
    { clause: 'b_medium_ratio', tripped: rotated >= minNew && rotated > b, threshold: b },
    { clause: 'c_long_ratio', tripped: c > l, threshold: l },
    { clause: 'd_ceiling', tripped: c > ceiling, threshold: ceiling },
  ];
}
