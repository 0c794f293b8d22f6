/**
 * A package's `targeting_overlay` at create_media_buy and update_media_buy against what its
 * product declares (published 3.2 core/targeting.json: "a fresh create/update request MUST
 * be applied exactly or rejected"; targeting_aware_discovery.yaml :669-:788, :1001,
 * :1220-:1529). Checked only for products that declare selectable support or placements
 * (a seeded product's `overlay_support`, `placements`): catalog products declare none and
 * keep storing any overlay as before.
 *
 * - placement_selection: each reference once (INVALID_REQUEST), within the product's
 *   publishers and its placements (INVALID_REQUEST naming the reference); a fixed
 *   `included` set restated whole or refused (UNSUPPORTED_FEATURE, partial selection needs
 *   a selectable product); targetable placements only under declared support and limit.
 * - an age range only as the product's intervals tile it (UNSUPPORTED_FEATURE).
 * - every other dimension within its declared `max_values_per_package` and families
 *   (UNSUPPORTED_FEATURE naming the field).
 * - a browser family with no platform the package allows (the product's
 *   `browser_inventory.platform_compatibility`: Safari on Android) is unenforceable.
 */
import { taskError } from '../../runtime/errors.js';
import { honorsOverlay, overlaySupportOf } from './overlay.js';
import type { ProductRow } from './product-row.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Placement {
  publisher_domain?: string;
  placement_id: string;
  mode?: string;
}

const key = (r: Placement) => `${r.publisher_domain ?? ''} ${r.placement_id}`;

/** Refuses (throws) an overlay the product cannot apply exactly; `field` names the overlay. */
export function checkPackageOverlay(p: ProductRow, overlay: Obj, field: string): void {
  const support = overlaySupportOf(p);
  const placements = Array.isArray(p.fixture?.placements)
    ? (p.fixture.placements as Placement[])
    : [];
  if (Object.keys(support).length === 0 && placements.length === 0) return;
  for (const [k, value] of Object.entries(overlay)) {
    if (k === 'placement_selection' && isObj(value)) {
      checkPlacements(value, placements, support, `${field}.placement_selection`);
    } else if (
      k === 'demographics' &&
      isObj(value) &&
      !honorsOverlay(p, { demographics: value }, [])
    ) {
      // Ages are booked only as the product's intervals tile them (no silent narrowing).
      throw taskError(
        'UNSUPPORTED_FEATURE',
        `${field}.demographics: not an age range this product delivers exactly`,
        {
          field: `${field}.demographics`,
        },
      );
    } else if (Object.keys(support).length > 0) {
      checkDimension(value, support[k], `${field}.${k}`);
    }
  }
  checkBrowserPlatforms(p, overlay, `${field}.browser`);
}

function checkPlacements(selection: Obj, placements: Placement[], support: Obj, field: string) {
  if (selection.mode !== 'selected') return;
  const refs = (Array.isArray(selection.placement_refs) ? selection.placement_refs : []) as
    Placement[] | [];
  const publishers = new Set(placements.map((x) => x.publisher_domain ?? ''));
  const seen = new Set<string>();
  refs.forEach((r, j) => {
    const at = `${field}.placement_refs[${j}]`;
    if (seen.has(key(r))) {
      throw taskError('INVALID_REQUEST', `${at}: placement_refs is a set; this one repeats`, {
        field: at,
      });
    }
    seen.add(key(r));
    if (!publishers.has(r.publisher_domain ?? '')) {
      throw taskError('INVALID_REQUEST', `${at}: not a publisher of this product`, { field: at });
    }
  });
  const of = (mode: string) => new Set(placements.filter((x) => x.mode === mode).map(key));
  const included = of('included');
  if (included.size > 0) {
    if (seen.size !== included.size || ![...seen].every((k) => included.has(k))) {
      throw taskError(
        'UNSUPPORTED_FEATURE',
        `${field}: this product's placements are a fixed set; restate all ${included.size} or buy a product with selectable placements`,
        { field },
      );
    }
    return;
  }
  const targetable = of('targetable');
  refs.forEach((r, j) => {
    if (!targetable.has(key(r))) {
      const at = `${field}.placement_refs[${j}]`;
      throw taskError('INVALID_REQUEST', `${at}: not a placement of this product`, { field: at });
    }
  });
  checkDimension(refs, support.placement_selection, field);
}

/** Declared support for one dimension, its per-package limit and its families. */
function checkDimension(value: unknown, support: unknown, field: string) {
  if (support === undefined || support === false) {
    throw taskError('UNSUPPORTED_FEATURE', `${field}: this product cannot target it`, { field });
  }
  if (!isObj(support) || !Array.isArray(value)) return;
  const max = support.max_values_per_package;
  if (typeof max === 'number' && value.length > max) {
    throw taskError(
      'UNSUPPORTED_FEATURE',
      `${field}: at most ${max} value${max === 1 ? '' : 's'} per package on this product`,
      { field },
    );
  }
  const families = support.families;
  if (Array.isArray(families)) {
    const other = value.find((v) => !families.includes(v));
    if (other !== undefined) {
      throw taskError('UNSUPPORTED_FEATURE', `${field}: ${String(other)} is not selectable here`, {
        field,
      });
    }
  }
}

/**
 * Each included browser family (not also excluded) that lists its platforms must run on
 * one the package allows, else that part of the package could never deliver.
 */
function checkBrowserPlatforms(p: ProductRow, overlay: Obj, field: string) {
  const inventory = p.fixture?.browser_inventory;
  const compat = isObj(inventory) ? inventory.platform_compatibility : undefined;
  const platforms = overlay.device_platform;
  if (!isObj(compat) || !Array.isArray(platforms) || !Array.isArray(overlay.browser)) return;
  const excluded = new Set(Array.isArray(overlay.browser_exclude) ? overlay.browser_exclude : []);
  const allowed = platforms.filter(
    (x) =>
      !(
        Array.isArray(overlay.device_platform_exclude) &&
        overlay.device_platform_exclude.includes(x)
      ),
  );
  for (const family of overlay.browser as unknown[]) {
    const runsOn = compat[String(family)];
    if (excluded.has(family) || !Array.isArray(runsOn)) continue;
    if (!allowed.some((x) => runsOn.includes(x))) {
      throw taskError(
        'UNSUPPORTED_FEATURE',
        `${field}: ${String(family)} runs only on ${runsOn.join(', ')}, none of this package's device_platform`,
        { field },
      );
    }
  }
}
