/**
 * Deterministic relevance of catalog entries to a natural-language brief: terms of the
 * brief (lowercased words, stop words dropped) scored against keywords (3), the channel
 * (3) and name/description words (1). Same brief, same order, every time.
 */
const STOP = new Set(
  'the and for with that this from into our your are was were will would can could should about over under than then them they their there have has had not but all any per via its it is in on of to a an be by as at or we us i my me'.split(
    ' ',
  ),
);

export function briefTerms(brief: string | undefined): string[] {
  if (!brief) return [];
  const words = brief.toLowerCase().match(/[a-z0-9][a-z0-9-]*/g) ?? [];
  return [...new Set(words.filter((w) => w.length >= 2 && !STOP.has(w)))].slice(0, 64);
}

/** Crude stemming so "podcasts" meets "podcast" and "sports" meets "sport". */
function stem(w: string): string {
  return w.length > 4 && w.endsWith('s') ? w.slice(0, -1) : w;
}

export interface Rankable {
  keywords: string[];
  channel?: string;
  name: string;
  description: string;
}

export function score(item: Rankable, terms: string[]): { score: number; matched: string[] } {
  const keywords = new Set(item.keywords.map((k) => stem(k.toLowerCase())));
  const text = new Set(
    (`${item.name} ${item.description}`.toLowerCase().match(/[a-z0-9][a-z0-9-]*/g) ?? []).map(stem),
  );
  let total = 0;
  const matched: string[] = [];
  for (const term of terms) {
    const t = stem(term);
    let s = 0;
    if (keywords.has(t)) s += 3;
    if (item.channel && stem(item.channel) === t) s += 3;
    if (text.has(t)) s += 1;
    if (s > 0) matched.push(term);
    total += s;
  }
  return { score: total, matched };
}
