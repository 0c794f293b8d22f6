/**
 * The creative agent's standard formats: what each needs and renders. Rows live in the
 * `formats` table (seeded from here; the column keeps the spec digest's name
 * `assets_required`); on the wire a format is the published `core/format.json`: format ids
 * `{agent_url: <creative agent URL>, id}`, `assets[]` (`item_type: individual`, requirement
 * names of the published `*-asset-requirements`), `renders[]` each with `dimensions`.
 */
import type { PoolClient, Pool } from '../../shared/infra/pg.js';
import { taskError } from '../runtime/errors.js';
import type { FormatId } from '../runtime/validation.js';

export const FORMAT_TYPES = ['video', 'display', 'audio', 'dooh'] as const;
export type FormatType = (typeof FORMAT_TYPES)[number];

export const ASSET_TYPES = [
  'image',
  'video',
  'audio',
  'text',
  'html',
  'javascript',
  'url',
  'vast',
  'daast',
] as const;
export type AssetType = (typeof ASSET_TYPES)[number];

export interface AssetRequirement {
  asset_id: string;
  asset_type: AssetType;
  required: boolean;
  requirements?: Record<string, unknown>;
}

export interface FormatRow {
  format_id: string;
  name: string;
  type: FormatType;
  width: number | null;
  height: number | null;
  duration_ms: number | null;
  is_responsive: boolean;
  assets_required: AssetRequirement[];
  renders: Array<Record<string, unknown>>;
  requirements: Record<string, unknown>;
}

const image = (w: number, h: number): AssetRequirement => ({
  asset_id: 'image',
  asset_type: 'image',
  required: true,
  requirements: { width: w, height: h, file_types: ['jpg', 'png', 'webp', 'svg'] },
});
const headline = (required = false): AssetRequirement => ({
  asset_id: 'headline',
  asset_type: 'text',
  required,
  requirements: { max_length: 90 },
});
/**
 * The click-through URL: optional, as in the published standard formats (an image or a
 * video plays without one; a VAST/DAAST tag carries its own click-through).
 */
const clickUrl: AssetRequirement = { asset_id: 'click_url', asset_type: 'url', required: false };

function display(w: number, h: number, name: string): FormatRow {
  return {
    format_id: `display_${w}x${h}`,
    name,
    type: 'display',
    width: w,
    height: h,
    duration_ms: null,
    is_responsive: false,
    assets_required: [image(w, h), headline(), clickUrl],
    renders: [{ role: 'primary', dimensions: { width: w, height: h, unit: 'px' } }],
    requirements: { max_file_size_kb: 200 },
  };
}

function video(id: string, name: string, seconds: number, w: number, h: number): FormatRow {
  return {
    format_id: id,
    name,
    type: 'video',
    width: w,
    height: h,
    duration_ms: seconds * 1000,
    is_responsive: false,
    assets_required: [
      {
        asset_id: 'video',
        asset_type: 'video',
        required: true,
        requirements: { duration_ms: seconds * 1000, containers: ['mp4', 'webm', 'vast'] },
      },
      clickUrl,
    ],
    renders: [{ role: 'primary', dimensions: { width: w, height: h, unit: 'px' } }],
    requirements: { aspect_ratio: '16:9', max_bitrate_kbps: 8000 },
  };
}

function audio(seconds: number): FormatRow {
  return {
    format_id: `audio_${seconds}s`,
    name: `Audio ${seconds}s`,
    type: 'audio',
    width: null,
    height: null,
    duration_ms: seconds * 1000,
    is_responsive: false,
    assets_required: [
      {
        asset_id: 'audio',
        asset_type: 'audio',
        required: true,
        requirements: { duration_ms: seconds * 1000, containers: ['mp3', 'm4a', 'daast'] },
      },
      { asset_id: 'companion_image', asset_type: 'image', required: false },
      clickUrl,
    ],
    renders: [{ role: 'primary' }],
    requirements: {},
  };
}

function dooh(w: number, h: number, name: string): FormatRow {
  return {
    format_id: `dooh_${w}x${h}`,
    name,
    type: 'dooh',
    width: w,
    height: h,
    duration_ms: 10000,
    is_responsive: false,
    assets_required: [image(w, h), headline()],
    renders: [{ role: 'primary', dimensions: { width: w, height: h, unit: 'px' } }],
    requirements: { loop_seconds: 10 },
  };
}

export const STANDARD_FORMATS: FormatRow[] = [
  display(300, 250, 'Medium Rectangle 300x250'),
  display(728, 90, 'Leaderboard 728x90'),
  display(320, 50, 'Mobile Banner 320x50'),
  display(160, 600, 'Wide Skyscraper 160x600'),
  display(300, 600, 'Half Page 300x600'),
  {
    format_id: 'display_responsive',
    name: 'Responsive Display',
    type: 'display',
    width: null,
    height: null,
    duration_ms: null,
    is_responsive: true,
    assets_required: [image(1200, 628), headline(true), clickUrl],
    renders: [{ role: 'primary', dimensions: { responsive: { width: true, height: true } } }],
    requirements: {},
  },
  video('video_15s', 'Online Video 15s', 15, 1280, 720),
  video('video_30s', 'Online Video 30s', 30, 1280, 720),
  video('video_ctv_30s', 'CTV Video 30s (1080p)', 30, 1920, 1080),
  audio(15),
  audio(30),
  dooh(1920, 1080, 'DOOH Landscape 1920x1080'),
  dooh(1080, 1920, 'DOOH Portrait 1080x1920'),
];

/** The generic formats the unauthenticated catalog advertises. */
export const GENERIC_FORMAT_IDS = new Set([
  'display_300x250',
  'display_728x90',
  'video_30s',
  'audio_30s',
  'dooh_1920x1080',
]);

export function sameAgentUrl(a: string, b: string): boolean {
  const norm = (u: string) => u.replace(/\/+$/, '').toLowerCase();
  return norm(a) === norm(b);
}

/**
 * `rows` narrowed to the requested format ids, in the request's order (a buyer resolving
 * `products[].format_ids` reads the answer positionally); ids of another creative agent,
 * unknown ids and repeats are left out. No `ids`: every row, as is.
 */
export function pickFormats<T extends { format_id: string }>(
  rows: T[],
  ids: FormatId[] | undefined,
  agentUrl: string,
): T[] {
  if (!ids) return rows;
  const byId = new Map(rows.map((r) => [r.format_id, r]));
  const out: T[] = [];
  for (const id of ids) {
    const row = sameAgentUrl(id.agent_url, agentUrl) ? byId.get(id.id) : undefined;
    if (row && !out.includes(row)) out.push(row);
  }
  return out;
}

const VIDEO_CONTAINERS = new Set(['mp4', 'webm', 'mov', 'avi', 'mkv']);
const AUDIO_FORMATS = new Set(['mp3', 'aac', 'wav', 'ogg', 'flac']);

/** Our requirement members under the published `*-asset-requirements` names and enums. */
function wireRequirements(a: AssetRequirement): Record<string, unknown> | undefined {
  const r = a.requirements;
  if (!r) return undefined;
  const { width, height, file_types, duration_ms, ...rest } = r as Record<string, unknown> & {
    width?: number;
    height?: number;
    file_types?: string[];
    duration_ms?: number;
  };
  const { containers, ...others } = rest as { containers?: string[] };
  const out: Record<string, unknown> = { ...others };
  // Tag documents (vast, daast) are accepted too but are asset types, not file containers.
  if (containers && a.asset_type === 'video') {
    out.containers = containers.filter((c) => VIDEO_CONTAINERS.has(c));
  }
  if (containers && a.asset_type === 'audio') {
    out.formats = containers.filter((c) => AUDIO_FORMATS.has(c));
  }
  if (typeof width === 'number') Object.assign(out, { min_width: width, max_width: width });
  if (typeof height === 'number') Object.assign(out, { min_height: height, max_height: height });
  if (file_types) out.formats = file_types;
  if (typeof duration_ms === 'number') {
    Object.assign(out, { min_duration_ms: duration_ms, max_duration_ms: duration_ms });
  }
  return out;
}

/** The wire definition of a format (published `core/format.json`). */
export function formatDefinition(row: FormatRow, agentUrl: string): Record<string, unknown> {
  const def: Record<string, unknown> = {
    format_id: { agent_url: agentUrl, id: row.format_id },
    name: row.name,
    type: row.type,
    is_responsive: row.is_responsive,
    assets: row.assets_required.map((a) => {
      const requirements = wireRequirements(a);
      return {
        item_type: 'individual',
        asset_id: a.asset_id,
        asset_type: a.asset_type,
        required: a.required,
        ...(requirements ? { requirements } : {}),
      };
    }),
  };
  // Every published render carries `dimensions`; a format without a visual surface
  // (audio) has no render to describe.
  const renders = row.renders.filter((r) => r.dimensions !== undefined);
  if (renders.length > 0) def.renders = renders;
  if (row.width !== null && row.height !== null) {
    def.dimensions = { width: row.width, height: row.height, unit: 'px' };
  }
  if (row.duration_ms !== null) def.duration_ms = row.duration_ms;
  return def;
}

const caches = new Map<string, { at: number; rows: FormatRow[] }>();

/** All formats; cached briefly (the list is read on hot paths and changes only by seed). */
export async function allFormats(
  db: Pick<Pool | PoolClient, 'query'>,
  schema: string,
): Promise<FormatRow[]> {
  const now = Date.now();
  const cache = caches.get(schema);
  if (cache && now - cache.at < 5000 && cache.rows.length > 0) return cache.rows;
  const { rows } = await db.query<FormatRow>(`SELECT * FROM ${schema}.formats ORDER BY format_id`);
  caches.set(schema, { at: now, rows });
  return rows;
}

export function clearFormatCache(): void {
  caches.clear();
}

/** The format a format id names at our creative agent; FORMAT_NOT_SUPPORTED otherwise. */
export async function resolveFormat(
  db: Pick<Pool | PoolClient, 'query'>,
  schema: string,
  formatId: FormatId,
  creativeAgentUrl: string,
  field: string,
): Promise<FormatRow> {
  if (!sameAgentUrl(formatId.agent_url, creativeAgentUrl)) {
    throw taskError(
      'FORMAT_NOT_SUPPORTED',
      `formats of ${formatId.agent_url} are not supported; use formats of ${creativeAgentUrl}`,
      { field: `${field}.agent_url` },
    );
  }
  const row = (await allFormats(db, schema)).find((f) => f.format_id === formatId.id);
  if (!row) {
    throw taskError(
      'FORMAT_NOT_SUPPORTED',
      `format ${formatId.id} is not defined by the creative agent`,
      {
        field: `${field}.id`,
      },
    );
  }
  return row;
}
