/**
 * Hard targeting inferred from a brief's prose (published 3.2 get_products
 * `targeting_resolution.brief_targeting`, get-products-targeting-resolution.json): explicit
 * "only in <country>" and "ages N through M" / "ages N-M" / "N-M year olds" statements, as a
 * core/targeting.json object, and whether a product can honor it.
 *
 * Narrow on purpose: a seller that invents targeting from a vague brief silently drops
 * inventory the buyer wanted. Only a country list introduced by "only in", of names mapped
 * safely to ISO 3166-1 codes, and an age interval in a sentence that states a hard
 * requirement ("only", "must", "exclusively", "strictly") are read. Anything ambiguous (an
 * unknown country name, "not only in", two different age intervals, min over max, an age
 * over 150) yields no inference for that dimension, never an error. Also the refusal of
 * contradictory structured geography (refuseConflictingGeo).
 */
import { taskError } from '../../runtime/errors.js';
import type { ProductRow } from './product-row.js';

/** Country names read safely (unambiguous in English prose) and their ISO 3166-1 codes. */
const COUNTRIES: Record<string, string> = {
  us: 'US',
  usa: 'US',
  'u.s.': 'US',
  'u.s.a.': 'US',
  'united states': 'US',
  'united states of america': 'US',
  canada: 'CA',
  uk: 'GB',
  'u.k.': 'GB',
  'united kingdom': 'GB',
  'great britain': 'GB',
  mexico: 'MX',
  germany: 'DE',
  france: 'FR',
  spain: 'ES',
  italy: 'IT',
  japan: 'JP',
  australia: 'AU',
  brazil: 'BR',
  ireland: 'IE',
  netherlands: 'NL',
};

/** Longest names first, so "united states of america" wins over "united states". */
const NAME = Object.keys(COUNTRIES)
  .sort((a, b) => b.length - a.length)
  .map((n) => n.replace(/\./g, '\\.'))
  .join('|');
const COUNTRY = `(?:the )?(${NAME})`;
const ONLY_IN = new RegExp(`(not )?\\bonly in ${COUNTRY}((?:(?:,? and|,? or|,) ${COUNTRY})*)`, 'g');
const LIST_ITEM = new RegExp(COUNTRY, 'g');

const HARD = /\b(only|must|exclusively|strictly)\b/;
const AGES = [
  /\bage[sd]? (\d{1,3}) ?(?:through|thru|to|-|–) ?(\d{1,3})\b/g,
  /\b(\d{1,3}) ?(?:-|–) ?(\d{1,3})[- ]year[- ]olds?\b/g,
];

export interface BriefTargeting {
  geo_countries?: string[];
  demographics?: { age: { min: number; max: number; include_unknown: boolean } };
}

/** The countries of the brief's "only in" statements: one consistent set, else none. */
function briefCountries(text: string): string[] | undefined {
  const sets = new Set<string>();
  for (const m of text.matchAll(ONLY_IN)) {
    if (m[1]) return undefined; // "not only in the US" widens, it does not restrict
    const names = [m[2]!, ...[...(m[3] ?? '').matchAll(LIST_ITEM)].map((x) => x[1]!)];
    sets.add(JSON.stringify([...new Set(names.map((n) => COUNTRIES[n]!))].sort()));
  }
  return sets.size === 1 ? (JSON.parse([...sets][0]!) as string[]) : undefined;
}

/** The one age interval stated in a hard sentence of the brief, else none. */
function briefAge(text: string): { min: number; max: number } | undefined {
  const found = new Set<string>();
  for (const sentence of text.split(/[.;!?]\s/)) {
    if (!HARD.test(sentence)) continue;
    for (const re of AGES) {
      for (const m of sentence.matchAll(re)) found.add(`${m[1]}-${m[2]}`);
    }
  }
  if (found.size !== 1) return undefined;
  const [min, max] = [...found][0]!.split('-').map(Number) as [number, number];
  return min <= max && max <= 150 ? { min, max } : undefined;
}

/** The hard targeting a brief states explicitly, or null when it states none we can read. */
export function inferBriefTargeting(brief: string | undefined): BriefTargeting | null {
  if (!brief) return null;
  const text = brief.toLowerCase().replace(/\s+/g, ' ');
  const out: BriefTargeting = {};
  const countries = briefCountries(text);
  if (countries) out.geo_countries = countries;
  const age = briefAge(text);
  // "only to people ages 18 through 44": people whose age is unknown are not among them.
  if (age) out.demographics = { age: { ...age, include_unknown: false } };
  return Object.keys(out).length > 0 ? out : null;
}

interface AgeInterval {
  age?: { min?: unknown; max?: unknown };
}

/**
 * Whether the product's declared age support delivers exactly [min, max]: enumerated
 * intervals that tile it with no gap or overrun, or open age support (overlay_support).
 */
function honorsAge(p: ProductRow, age: { min: number; max: number }): boolean {
  const f = p.fixture ?? {};
  const demo = (f.demographic_targeting as { age?: { intervals?: unknown } } | undefined)?.age;
  if (Array.isArray(demo?.intervals)) {
    const spans = (demo.intervals as AgeInterval[])
      .map((i) => [Number(i?.age?.min), Number(i?.age?.max)] as const)
      .filter(([lo, hi]) => lo >= age.min && hi <= age.max)
      .sort((a, b) => a[0] - b[0]);
    let next = age.min;
    for (const [lo, hi] of spans) if (lo === next) next = hi + 1;
    return next === age.max + 1;
  }
  const overlay = f.overlay_support as { demographics?: { age?: unknown } } | undefined;
  return overlay?.demographics?.age === true;
}

/**
 * Whether the product can deliver under the inferred targeting: every country among the
 * product's own geo_countries (a product declaring none is sold across the seller's
 * `countries`), and the age interval exactly (honorsAge).
 */
export function honorsBriefTargeting(
  p: ProductRow,
  t: BriefTargeting,
  countries: string[],
): boolean {
  if (t.geo_countries) {
    const own = p.targeting?.geo_countries;
    const sold = Array.isArray(own) ? (own as string[]) : countries;
    if (!t.geo_countries.every((c) => sold.includes(c))) return false;
  }
  return !t.demographics || honorsAge(p, t.demographics.age);
}

/**
 * 3.2: the legacy `filters.countries` and the structured `targeting_overlay.geo_countries`
 * naming different countries are contradictory delivery constraints: INVALID_REQUEST
 * (the seller must not pick one). The same countries in both, or either alone, are fine.
 */
export function refuseConflictingGeo(params: Record<string, unknown>): void {
  const legacy = (params.filters as { countries?: unknown } | undefined)?.countries;
  const overlay = (params.targeting_overlay as { geo_countries?: unknown } | undefined)
    ?.geo_countries;
  if (!Array.isArray(legacy) || !Array.isArray(overlay)) return;
  const key = (a: unknown[]) => JSON.stringify(a.map(String).sort());
  if (key(legacy) !== key(overlay)) {
    throw taskError(
      'INVALID_REQUEST',
      'filters.countries and targeting_overlay.geo_countries name different countries',
      {
        field: 'targeting_overlay.geo_countries',
        suggestion: 'send the countries once, in targeting_overlay.geo_countries',
      },
    );
  }
}
