/**
 * Sparse modifications of a discovery overlay (published 3.2 core/targeting-modification.json,
 * core/product-targeting-resolution.json; targeting_aware_discovery.yaml:883): when a product
 * cannot deliver the buyer's `targeting_overlay` exactly, get_products may offer it as a
 * distinct configured product whose ordered `targeting_resolution.modifications` say what
 * changed; selecting it accepts them. Two changes are offered, both narrowing only:
 *
 * - an age range the product's enumerated intervals do not tile becomes the widest run of
 *   contiguous intervals inside it (`replace` of /demographics/age; 21-35 → 25-34);
 * - browser families the product recognizes but has no forecastable inventory for
 *   (`browser_inventory.unavailable_families`) are removed from an inclusion that keeps at
 *   least one family (`remove_values` on /browser), unless the buyer already excludes them.
 *
 * Anything else that is not exact leaves the product out, as before.
 */
import { honorsOverlay } from './overlay.js';
import type { ProductRow } from './product-row.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The targeting a product delivers for a request, and how it differs from the request. */
export interface OverlayResolution {
  overlay: Obj;
  /** Empty for exact acceptance (answered without any echo). */
  modifications: Obj[];
}

/** What the product can deliver of `overlay`: exactly, sparsely modified, or null. */
export function resolveOverlay(
  p: ProductRow,
  overlay: Obj,
  countries: string[],
): OverlayResolution | null {
  const modifications: Obj[] = [];
  let effective = overlay;
  const demographics = overlay.demographics;
  if (
    isObj(demographics) &&
    isObj(demographics.age) &&
    !honorsOverlay(p, { demographics }, countries)
  ) {
    const applied = intervalsWithin(p, demographics.age);
    if (!applied) return null;
    effective = { ...effective, demographics: { ...demographics, age: applied } };
    modifications.push({
      operation: 'replace',
      path: '/demographics/age',
      applied,
      reason: `this product delivers ages in intervals; ${applied.min}-${applied.max} is the widest run of them inside the request`,
    });
  }
  const gone = unavailableBrowsers(p, effective);
  if (gone.length > 0) {
    const kept = (effective.browser as unknown[]).filter((b) => !gone.includes(String(b)));
    if (kept.length === 0) return null;
    effective = { ...effective, browser: kept };
    modifications.push({
      operation: 'remove_values',
      path: '/browser',
      values: gone,
      reason: `no forecastable inventory for ${gone.join(', ')} in the forecast window`,
    });
  }
  if (!honorsOverlay(p, effective, countries)) return null;
  return { overlay: effective, modifications };
}

interface AgeInterval {
  age?: { min?: unknown; max?: unknown };
}

/** The widest contiguous run of the product's age intervals inside [min, max], or null. */
function intervalsWithin(
  p: ProductRow,
  age: Obj,
): { min: number; max: number; include_unknown: false } | null {
  const demo = (p.fixture?.demographic_targeting as { age?: { intervals?: unknown } } | undefined)
    ?.age;
  if (!Array.isArray(demo?.intervals) || typeof age.min !== 'number') return null;
  const lo = age.min;
  const hi = typeof age.max === 'number' ? age.max : Infinity;
  const spans = (demo.intervals as AgeInterval[])
    .map((i) => [Number(i?.age?.min), Number(i?.age?.max)] as const)
    .filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b) && a >= lo && b <= hi)
    .sort((x, y) => x[0] - y[0]);
  let best: [number, number] | null = null;
  let run: [number, number] | null = null;
  for (const [a, b] of spans) {
    run = run && a === run[1] + 1 ? [run[0], b] : [a, b];
    if (!best || run[1] - run[0] > best[1] - best[0]) best = run;
  }
  return best ? { min: best[0], max: best[1], include_unknown: false } : null;
}

/** Included browser families (not excluded) the product has no inventory for. */
function unavailableBrowsers(p: ProductRow, overlay: Obj): string[] {
  const inventory = p.fixture?.browser_inventory;
  const unavailable = isObj(inventory) ? inventory.unavailable_families : undefined;
  if (!Array.isArray(unavailable) || !Array.isArray(overlay.browser)) return [];
  const excluded = Array.isArray(overlay.browser_exclude) ? overlay.browser_exclude : [];
  return (overlay.browser as unknown[])
    .filter((b) => unavailable.includes(b) && !excluded.includes(b))
    .map(String);
}
