/**
 * "Did you mean": the known names closest to a mistyped one (Levenshtein distance, plus
 * names that contain it or that it contains), for UNKNOWN_TASK and unknown commands.
 */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        prev[j]! + 1,
        row[j - 1]! + 1,
        prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** Up to `max` names within a third of the input's length in edits, nearest first. */
export function nearestNames(input: string, names: readonly string[], max = 3): string[] {
  const needle = input.toLowerCase();
  const limit = Math.max(2, Math.ceil(needle.length / 3));
  return names
    .map((name) => {
      const n = name.toLowerCase();
      const d = n.includes(needle) || needle.includes(n) ? 1 : editDistance(needle, n);
      return { name, d };
    })
    .filter((x) => x.d <= limit && needle.length > 0)
    .sort((x, y) => x.d - y.d || x.name.localeCompare(y.name))
    .slice(0, max)
    .map((x) => x.name);
}
