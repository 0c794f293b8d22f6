/**
 * Structured discovery targeting (published 3.2 get_products `targeting_overlay` and
 * `required_overlay_support`; core/targeting.json, core/targeting-overlay-requirements.json,
 * core/targeting-overlay-support.json, core/placement-selection.json): both members checked
 * against the release's own schemas, whether a product's `overlay_support` covers a buyer's
 * minimum (capability containment), and whether a product delivers an exact overlay.
 *
 * A product's selectable support is what it declares (a seeded product's `overlay_support`);
 * catalog products declare none, since create_media_buy stores a package overlay but
 * enforces no per-dimension limit for them, so they never claim future selection. Inherent
 * scope still counts for an exact overlay where the product describes it: its countries,
 * its age intervals, its complete fixed placement set.
 */
import { issuesFromAjv, publishedDefinitionValidator } from '../../protocol/index.js';
import { validationError } from '../../runtime/errors.js';
import { honorsBriefTargeting } from './brief-targeting.js';
import type { ProductRow } from './product-row.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export interface DiscoveryTargeting {
  /** Exact delivery constraints (core/targeting.json), null when none were sent. */
  overlay: Obj | null;
  /** Minimum later-selectable support (targeting-overlay-requirements.json), or null. */
  required: Obj | null;
}

const MEMBERS = [
  ['targeting_overlay', 'core/targeting.json'],
  ['required_overlay_support', 'core/targeting-overlay-requirements.json'],
] as const;

/**
 * The request's two structured members, each valid against 3.2.0-beta.5 (the release that
 * defines them): VALIDATION_ERROR naming every offending field otherwise.
 */
export function readDiscoveryTargeting(params: Obj): DiscoveryTargeting {
  const issues = MEMBERS.flatMap(([member, path]) => {
    const value = params[member];
    if (value === undefined) return [];
    const check = publishedDefinitionValidator('3.2.0-beta.5', path);
    if (check(value)) return [];
    return issuesFromAjv(check.errors).map((i) => ({ ...i, pointer: `/${member}${i.pointer}` }));
  });
  if (issues.length > 0) throw validationError(issues);
  const overlay = params.targeting_overlay as Obj | undefined;
  const required = params.required_overlay_support as Obj | undefined;
  return {
    overlay: overlay && Object.keys(overlay).length > 0 ? overlay : null,
    required: required && Object.keys(required).length > 0 ? required : null,
  };
}

/** A product's declared selectable support (a seeded product's fixture), or none. */
export function overlaySupportOf(p: ProductRow): Obj {
  const s = p.fixture?.overlay_support;
  return isObj(s) ? s : {};
}

/**
 * Capability containment (targeting-overlay-requirements.json): a requirement `true`
 * matches support `true` or any support object; support `true` satisfies every structured
 * requirement; otherwise the support object holds every requested boolean and a superset
 * of every requested array (a region list is also met by `all_values`). Numeric seller
 * limits never take part; a field the support lacks never matches.
 */
function contains(support: unknown, want: unknown): boolean {
  if (support === undefined || support === null || support === false) return false;
  if (want === true || support === true) return true;
  if (!isObj(support) || !isObj(want)) return false;
  return Object.entries(want).every(([k, w]) => {
    const have = support[k];
    if (Array.isArray(w)) {
      if (k === 'values' && support.all_values === true) return true;
      return Array.isArray(have) && w.every((x) => have.some((h) => same(h, x)));
    }
    if (w === true) return have === true || isObj(have);
    if (isObj(w)) return contains(have, w);
    return same(have, w);
  });
}

/** Whether the product covers every field of the buyer's `required_overlay_support`. */
export function meetsRequiredSupport(p: ProductRow, required: Obj): boolean {
  const support = overlaySupportOf(p);
  return Object.entries(required).every(([k, want]) => contains(support[k], want));
}

interface PlacementRef {
  publisher_domain?: string;
  placement_id: string;
}

const refKey = (r: PlacementRef) => `${r.publisher_domain ?? ''} ${r.placement_id}`;

/**
 * A `placement_selection`: `default` always; `selected` either as the exact complete set
 * of the product's fixed `included` placements (inherent equality), or as targetable
 * placements of the product under its declared placement support and its limit.
 */
function honorsPlacements(p: ProductRow, selection: Obj, support: Obj): boolean {
  if (selection.mode !== 'selected') return true;
  const refs = (selection.placement_refs ?? []) as PlacementRef[];
  const placements = (Array.isArray(p.fixture?.placements) ? p.fixture.placements : []) as Array<
    PlacementRef & { mode?: string }
  >;
  const keys = (mode: string) => new Set(placements.filter((x) => x.mode === mode).map(refKey));
  const included = keys('included');
  const wanted = new Set(refs.map(refKey));
  if (included.size > 0) {
    return wanted.size === included.size && [...wanted].every((k) => included.has(k));
  }
  const targetable = keys('targetable');
  return (
    withinLimit(support.placement_selection, refs) && [...wanted].every((k) => targetable.has(k))
  );
}

/** Declared support for a dimension, within its `max_values_per_package` when it has one. */
function withinLimit(support: unknown, value: unknown): boolean {
  if (support === undefined || support === false) return false;
  const max = isObj(support) ? support.max_values_per_package : undefined;
  return typeof max !== 'number' || !Array.isArray(value) || value.length <= max;
}

/** One overlay dimension against the product's declared support for it. */
function supportsValue(key: string, value: unknown, s: unknown): boolean {
  if (!withinLimit(s, value)) return false;
  if (!isObj(s)) return true;
  const values = Array.isArray(value) ? value : [];
  if (Array.isArray(s.families)) return values.every((v) => (s.families as unknown[]).includes(v));
  if (Array.isArray(s.systems) && key.startsWith('geo_metros')) {
    return values.every((v) => (s.systems as unknown[]).includes((v as Obj | null)?.system));
  }
  if (Array.isArray(s.supported_match_types) && key === 'keyword_targets') {
    return values.every((v) =>
      (s.supported_match_types as unknown[]).includes((v as Obj | null)?.match_type),
    );
  }
  if (key === 'geo_proximity') {
    return values.every((v) =>
      ['radius', 'travel_time', 'geometry'].every((kind) => !isObj(v) || !(kind in v) || !!s[kind]),
    );
  }
  return true;
}

/**
 * Whether the product delivers exactly this overlay: countries within its own (or the
 * seller's `countries`), an age range its intervals tile, placements as honorsPlacements
 * says, and every other dimension under its declared support (values within listed
 * families, systems and match types; counts within limits). Anything else: omitted.
 */
export function honorsOverlay(p: ProductRow, overlay: Obj, countries: string[]): boolean {
  const support = overlaySupportOf(p);
  return Object.entries(overlay).every(([key, value]) => {
    if (key === 'geo_countries') {
      return honorsBriefTargeting(p, { geo_countries: value as string[] }, countries);
    }
    if (key === 'demographics' && isObj(value) && Object.keys(value).every((k) => k === 'age')) {
      const age = value.age as { min?: number; max?: number } | undefined;
      if (typeof age?.min !== 'number' || typeof age.max !== 'number') return false;
      return honorsBriefTargeting(
        p,
        { demographics: { age: { min: age.min, max: age.max, include_unknown: false } } },
        countries,
      );
    }
    if (key === 'placement_selection' && isObj(value)) return honorsPlacements(p, value, support);
    return supportsValue(key, value, support[key]);
  });
}
