/** The four clauses of supplement §2.9, each tripping on its own, from crafted histories. */
import t from 'tap';
import {
  evaluateClauses,
  GUIDE_VALUES,
  percentile,
  WINDOW_SECONDS,
  type ClauseName,
  type ScopeHistory,
} from '../../../receiver/admission/clauses.js';
import { randomisedStart } from '../../../receiver/admission/thresholds.js';

const NOW = 2_000_000_000;
const DAY = 86_400;
const end = NOW - WINDOW_SECONDS;

function tripped(h: ScopeHistory, minNew = 3, thresholds = GUIDE_VALUES): ClauseName[] {
  return evaluateClauses(h, NOW, thresholds, minNew)
    .filter((r) => r.tripped)
    .map((r) => r.clause);
}

/** `n` first-seen times in each of `windows` windows ending `agoSeconds` before history end. */
function burst(windows: number, n: number, agoSeconds = 0): number[] {
  const out: number[] = [];
  for (let w = 0; w < windows; w++) {
    for (let i = 0; i < n; i++) out.push(end - agoSeconds - w * WINDOW_SECONDS - 1);
  }
  return out;
}

t.test('percentile counts the empty windows', async (t) => {
  t.equal(percentile([], 100, 95), 0);
  t.equal(percentile([5], 100, 95), 0, 'one busy window in 100 is under P95');
  t.equal(percentile([1, 2, 3, 4, 5, 6], 100, 95), 1, 'rank 95 of 100: the 1st of the 6 sorted');
  t.equal(percentile([7, 9], 2, 99), 9);
  t.equal(percentile([3], 0, 50), 0);
});

t.test('no history, one routine rotation: nothing trips', async (t) => {
  t.same(tripped({ past: [], current: 1, active30d: 3 }), []);
  t.same(tripped({ past: [], current: 2, active30d: 3 }), []);
});

t.test("a sender's initial key set is not a ratio burst; a flood at first sight is", async (t) => {
  t.same(tripped({ past: [], current: 6, active30d: 6, onboarding: 6 }), [], 'first sight');
  t.same(
    tripped({ past: [], current: 6, active30d: 6, onboarding: 0 }),
    ['a_short_ratio', 'b_medium_ratio'],
    'the same six from a known sender',
  );
  t.same(
    tripped({ past: [], current: 40, active30d: 40, onboarding: 40 }),
    ['c_long_ratio', 'd_ceiling'],
    'forty new keyids at first sight: over the ceiling',
  );
});

t.test('(a) short window: a burst over 3x the 24 h average', async (t) => {
  // One keyid per window for 30 days: the 24 h average and the 30-day P95 are both 1; with
  // (b) at 10x, only (a) (3x) trips at 4.
  const h: ScopeHistory = { past: burst(30 * 288, 1), current: 4, active30d: 9000 };
  const got = tripped(h, 3, { ...GUIDE_VALUES, mediumRatio: 10 });
  t.same(got, ['a_short_ratio']);
  t.same(tripped({ ...h, current: 3 }, 3, { ...GUIDE_VALUES, mediumRatio: 10 }), []);
});

t.test('(b) medium window: over 2x the 30-day P95', async (t) => {
  // Busy 24 h (average 10 per window, so (a) needs 30) over a quiet month.
  const h: ScopeHistory = { past: burst(288, 10), current: 12, active30d: 5000 };
  const got = tripped(h, 3, { ...GUIDE_VALUES, ceilingFraction: 0.5 });
  t.same(got, ['b_medium_ratio'], 'P95 of the month is 0: 12 > 0, and (a) needs > 30');
});

t.test('(c) long window: over 1.5x max(90-day P99, the ceiling floor)', async (t) => {
  // A month of 50 per window 60 days ago makes P99 50 and the 30-day P95 0.
  const quarter = burst(30 * 288, 2, 45 * DAY);
  const h: ScopeHistory = { past: quarter, current: 31, active30d: 0 };
  const r = evaluateClauses(h, NOW, { ...GUIDE_VALUES, shortRatio: 100, mediumRatio: 100 }, 1000);
  const c = r.find((x) => x.clause === 'c_long_ratio')!;
  t.equal(c.threshold, 1.5 * 20, 'P99 (2) is below the clause-d floor (20): 1.5 x 20');
  t.ok(c.tripped);
  t.same(
    r.filter((x) => x.tripped).map((x) => x.clause),
    ['c_long_ratio', 'd_ceiling'],
  );
  const quiet = evaluateClauses({ ...h, current: 30 }, NOW, GUIDE_VALUES, 1000);
  t.notOk(quiet.find((x) => x.clause === 'c_long_ratio')!.tripped, '30 is not over 30');
});

t.test('(d) proportional ceiling: max(20, 10% of the 30-day unique keyids)', async (t) => {
  // minNew 1e6 keeps the ratio clauses (0 x anything) out of the way.
  const only = { ...GUIDE_VALUES, longRatio: 1e6 };
  t.same(tripped({ past: [], current: 21, active30d: 100 }, 1e6, only), ['d_ceiling']);
  t.same(tripped({ past: [], current: 20, active30d: 100 }, 1e6, only), []);
  t.same(tripped({ past: [], current: 40, active30d: 500 }, 1e6, only), [], '10% of 500 is 50');
  t.same(tripped({ past: [], current: 51, active30d: 500 }, 1e6, only), ['d_ceiling']);
});

t.test('history outside the windows is ignored; current window is not history', async (t) => {
  const old = burst(10, 100, 100 * DAY);
  t.same(tripped({ past: old, current: 0, active30d: 0 }), []);
  const future = [NOW + 10, NOW + 100];
  t.same(tripped({ past: future, current: 0, active30d: 0 }), []);
});

t.test('randomised starting values stay in [0.5x, 2x], log-uniform', async (t) => {
  t.equal(
    randomisedStart(3, () => 0),
    1.5,
  );
  t.equal(
    randomisedStart(3, () => 1),
    6,
  );
  t.equal(
    randomisedStart(3, () => 0.5),
    3,
  );
  for (let i = 0; i < 100; i++) {
    const v = randomisedStart(20, Math.random);
    t.ok(v >= 10 && v <= 40);
  }
});
