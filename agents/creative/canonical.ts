/**
 * The protocol's canonical creative formats (3.1 and up; the default in 3.2): a creative
 * names a `format_kind` (core/canonical-format-kind.json) instead of a legacy `format_id`,
 * its assets keyed by the canonical's slots (formats/canonical/<kind>.json `slots.default`),
 * and a creative agent publishes what it builds as `creative.supported_formats[]`
 * (`{capability_id, operations, format: <product-format-declaration>}`) in its
 * capabilities. Our standard formats project onto the canonicals: display sizes are
 * `image` at that size, videos `video_hosted`, audio `audio_hosted`, DOOH screens `image`.
 */
import { taskError } from '../runtime/errors.js';
import type { AssetRequirement, FormatRow, FormatType } from './formats.js';

export interface CanonicalSlot {
  asset_group_id: string;
  asset_type: string;
  required: boolean;
}

const slot = (asset_group_id: string, asset_type: string, required = false): CanonicalSlot => ({
  asset_group_id,
  asset_type,
  required,
});

/** Each canonical's default slots, as its published schema lists them (3.1.19, 3.2.0-beta.5). */
export const CANONICAL_SLOTS: Record<string, CanonicalSlot[]> = {
  image: [
    slot('image_main', 'image', true),
    slot('headline', 'text'),
    slot('body_text', 'text'),
    slot('primary_text', 'text'),
    slot('cta', 'text'),
    slot('landing_page_url', 'url'),
  ],
  html5: [
    slot('html5_bundle', 'zip', true),
    slot('backup_image', 'image'),
    slot('landing_page_url', 'url'),
  ],
  display_tag: [slot('tag_url', 'url', true), slot('backup_image', 'image')],
  image_carousel: [
    slot('cards', 'card', true),
    slot('primary_text', 'text'),
    slot('landing_page_url', 'url'),
  ],
  video_hosted: [
    slot('video_main', 'video', true),
    slot('headline', 'text'),
    slot('primary_text', 'text'),
    slot('cta', 'text'),
    slot('brand_name', 'text'),
    slot('companion_banner', 'image'),
    slot('landing_page_url', 'url'),
  ],
  video_vast: [slot('vast_tag', 'vast', true), slot('landing_page_url', 'url')],
  audio_hosted: [
    slot('audio_main', 'audio', true),
    slot('companion_image', 'image'),
    slot('brand_name', 'text'),
    slot('landing_page_url', 'url'),
  ],
  audio_daast: [slot('daast_tag', 'daast', true), slot('landing_page_url', 'url')],
  sponsored_placement: [
    slot('source_catalog', 'catalog', true),
    slot('hero_asset', 'image'),
    slot('landing_page_url', 'url'),
  ],
  native_in_feed: [
    slot('title', 'text', true),
    slot('body_text', 'text'),
    slot('main_image', 'image'),
    slot('icon', 'image'),
    slot('cta', 'text'),
    slot('advertiser_name', 'text', true),
    slot('sponsored_label', 'text'),
    slot('landing_page_url', 'url', true),
    slot('display_url', 'text'),
    slot('rating', 'text'),
    slot('price', 'text'),
    slot('impression_tracker', 'pixel_tracker'),
    slot('viewability_tracker', 'pixel_tracker'),
    slot('click_tracker', 'pixel_tracker'),
  ],
  responsive_creative: [
    slot('headlines', 'text', true),
    slot('long_headlines', 'text'),
    slot('descriptions', 'text', true),
    slot('images_landscape', 'image'),
    slot('images_square', 'image'),
    slot('images_vertical', 'image'),
    slot('video', 'video'),
    slot('logo', 'image', true),
    slot('landing_page_url', 'url', true),
  ],
  agent_placement: [slot('offering_ref', 'text'), slot('landing_page_url', 'url')],
};

/** The channel each canonical we accept is served in (our format types). */
const KIND_TYPE: Record<string, FormatType> = {
  image: 'display',
  html5: 'display',
  display_tag: 'display',
  image_carousel: 'display',
  native_in_feed: 'display',
  responsive_creative: 'display',
  sponsored_placement: 'display',
  agent_placement: 'display',
  video_hosted: 'video',
  video_vast: 'video',
  audio_hosted: 'audio',
  audio_daast: 'audio',
};

/**
 * The canonical `format_kind` a creative names, as a format our checks read: its slots as
 * the required assets (a tag slot takes its tag type, as checkAssets allows), its channel
 * as the type. `custom` (a seller-defined shape with its own schema) and a kind this
 * release does not define are FORMAT_NOT_SUPPORTED naming `field`.
 */
export function canonicalFormat(kind: string, field: string): FormatRow {
  const slots = CANONICAL_SLOTS[kind];
  const type = KIND_TYPE[kind];
  if (!slots || !type) {
    throw taskError(
      'FORMAT_NOT_SUPPORTED',
      `format_kind ${JSON.stringify(kind).slice(0, 60)} is not supported; use one of ${Object.keys(KIND_TYPE).join(', ')}`,
      { field },
    );
  }
  return {
    format_id: kind,
    name: kind,
    type,
    width: null,
    height: null,
    duration_ms: null,
    is_responsive: false,
    assets_required: slots.map((s): AssetRequirement => ({
      asset_id: s.asset_group_id,
      asset_type: s.asset_type as AssetRequirement['asset_type'],
      required: s.required,
    })),
    renders: [],
    requirements: {},
  };
}

/** The canonical a standard format of ours projects onto, with its narrowing params. */
export function canonicalOf(row: FormatRow): {
  format_kind: string;
  params: Record<string, unknown>;
} {
  const kind =
    row.type === 'video' ? 'video_hosted' : row.type === 'audio' ? 'audio_hosted' : 'image';
  const params: Record<string, unknown> = { slots: CANONICAL_SLOTS[kind] };
  if (kind === 'image' && row.width !== null && row.height !== null) {
    Object.assign(params, { width: row.width, height: row.height });
  }
  if (kind !== 'image' && row.duration_ms !== null) params.duration_ms_exact = row.duration_ms;
  return { format_kind: kind, params };
}

/**
 * The product-format declaration of one of our standard formats (a product's
 * `format_options[i]`, a creative agent's `supported_formats[i].format`): the canonical it
 * projects onto and `v1_format_ref`, the legacy format id it is the same format as.
 */
export function formatDeclaration(row: FormatRow, agentUrl: string): Record<string, unknown> {
  return {
    format_option_id: row.format_id,
    ...canonicalOf(row),
    display_name: row.name,
    v1_format_ref: [{ agent_url: agentUrl, id: row.format_id }],
  };
}

/**
 * `creative.supported_formats`: one build/preview capability per standard format, its
 * `capability_id` the format id (unique in the catalog), display (image) first.
 */
export function supportedFormats(rows: FormatRow[], agentUrl: string): Record<string, unknown>[] {
  const order: FormatType[] = ['display', 'video', 'audio', 'dooh'];
  return [...rows]
    .sort((a, b) => order.indexOf(a.type) - order.indexOf(b.type))
    .map((row) => {
      // A generic creative agent's entry names no publisher option (format_option_id is the
      // product's / publisher's namespace): the canonical, its params and the v1 link.
      const { format_option_id: _option, ...format } = formatDeclaration(row, agentUrl);
      return {
        capability_id: row.format_id,
        // Build only: a routable preview operation needs the 3.2 `creative.preview` routes block.
        operations: ['build'],
        format,
      };
    });
}
