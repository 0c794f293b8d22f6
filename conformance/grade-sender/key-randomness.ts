/**
 * Heuristics for "cryptographically random" delivery keys (supplement §4.3: sequential or
 * timestamp keys are non-conformant). No test proves randomness; these catch the usual
 * mistakes without flagging a CSPRNG key except with negligible probability: a clock
 * reading (seconds or milliseconds within a day of capture, or the capture date), a
 * counter (keys that differ only in a small number), or too little that varies.
 *
 * A clock reading counts only when most keys carry one. A random hex key holds a ten-digit
 * run close to the capture time with a chance of a few in a million, which over many
 * graded keys would flag a correct sender now and then; a timestamp key carries its
 * reading every time, so requiring a majority costs nothing in detection.
 */

const DAY_S = 86_400;

function dateStamps(atMs: number): string[] {
  return [-1, 0, 1].map((d) => new Date(atMs + d * DAY_S * 1000).toISOString().slice(0, 10));
}

/** The clock reading a key contains, if any. */
export function timestampIn(key: string, atMs: number): string | null {
  const nowS = atMs / 1000;
  for (const run of key.match(/\d{10,}/g) ?? []) {
    for (const len of [13, 10].filter((l) => l <= run.length)) {
      for (let i = 0; i + len <= run.length; i++) {
        const v = Number(run.slice(i, i + len));
        const seconds = len === 13 ? v / 1000 : v;
        if (Math.abs(seconds - nowS) <= DAY_S) return run.slice(i, i + len);
      }
    }
  }
  for (const day of dateStamps(atMs)) {
    const [y, m, d] = day.split('-');
    const re = new RegExp(`${y}[-_.:]?${m}[-_.:]?${d}`);
    const hit = re.exec(key);
    if (hit) return hit[0];
  }
  return null;
}

function commonPrefix(keys: string[]): number {
  let n = 0;
  while (keys.every((k) => n < k.length && k[n] === keys[0]![n])) n++;
  return n;
}

function commonSuffix(keys: string[], prefix: number): number {
  let n = 0;
  while (
    keys.every(
      (k) =>
        k.length - n - 1 >= prefix && k[k.length - n - 1] === keys[0]![keys[0]!.length - n - 1],
    )
  ) {
    n++;
  }
  return n;
}

export interface RandomnessVerdict {
  problems: string[];
  /** Rough bits of what varies between keys (null with fewer than two keys). */
  estimatedBits: number | null;
}

/** `keys`: distinct delivery keys with the time each was captured (ms). */
export function judgeKeyRandomness(keys: Array<{ key: string; at: number }>): RandomnessVerdict {
  const problems: string[] = [];
  const readings = keys.flatMap(({ key, at }) => {
    const ts = timestampIn(key, at);
    return ts ? [`${key} contains a clock reading (${ts})`] : [];
  });
  if (readings.length * 2 > keys.length) problems.push(...readings);
  const distinct = [...new Set(keys.map((k) => k.key))];
  if (distinct.length < 2) return { problems, estimatedBits: null };
  const pre = commonPrefix(distinct);
  const suf = commonSuffix(distinct, pre);
  const varying = distinct.map((k) => k.slice(pre, k.length - suf));
  if (varying.every((v) => /^\d{1,15}$/.test(v))) {
    const nums = varying.map(Number).sort((a, b) => a - b);
    if (nums[nums.length - 1]! - nums[0]! < 1_000_000) {
      problems.push(`keys differ only in a small counter (${varying.join(', ')})`);
    }
  }
  const alphabet = new Set(varying.join('')).size;
  const shortest = Math.min(...varying.map((v) => v.length));
  const bits = Math.round(shortest * Math.log2(Math.max(alphabet, 2)));
  if (bits < 64) {
    problems.push(
      `only ~${bits} bits vary between keys (${shortest} characters over ${alphabet} symbols)`,
    );
  }
  return { problems, estimatedBits: bits };
}
