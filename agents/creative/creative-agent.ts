/**
 * The creative agent: list_creative_formats (filters), build_creative (deterministic
 * generation from a brand manifest and message, or transformation of a manifest into
 * another format) and preview_creative (single or batch; previews stored and served by
 * the agent under `previewBaseUrl`, or returned as HTML).
 */
import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { canonicalFormat, canonicalOf } from './canonical.js';
import type { Pool } from '../../shared/infra/pg.js';
import { paginate, PaginationRequestSchema } from '../common/pagination.js';
import { checkAssets } from '../sales/creatives/creatives.js';
import { sandboxFixtures, SESSION } from '../sandbox/fixtures.js';
import type { AgentClock } from '../runtime/clock.js';
import { TaskError } from '../../shared/errors/task-errors.js';
import { taskError } from '../runtime/errors.js';
import type { TaskRegistry } from '../runtime/registry.js';
import type { TaskContext } from '../runtime/types.js';
import {
  BrandManifestSchema,
  FormatIdSchema,
  requireIdempotencyKey,
  type BrandManifest,
} from '../runtime/validation.js';
import {
  allFormats,
  ASSET_TYPES,
  FORMAT_TYPES,
  formatDefinition,
  pickFormats,
  resolveFormat,
  type FormatRow,
} from './formats.js';
import { libraryManifest, registerCreativeLibraryTasks } from './library.js';

const ListFormatsSchema = z.looseObject({
  format_ids: z.array(FormatIdSchema).max(100).optional(),
  type: z.enum(FORMAT_TYPES).optional(),
  asset_types: z.array(z.enum(ASSET_TYPES)).optional(),
  max_width: z.number().int().positive().optional(),
  max_height: z.number().int().positive().optional(),
  is_responsive: z.boolean().optional(),
  name_search: z.string().max(200).optional(),
  pagination: PaginationRequestSchema.optional(),
  account: z.looseObject({}).optional(),
});

/** A format the test controller seeded (name and type only; no asset slots). */
function seededFormat(f: { id: string; data: Record<string, unknown> }): FormatRow {
  return {
    format_id: f.id,
    name: String(f.data.name ?? f.id),
    type: (f.data.type as FormatRow['type'] | undefined) ?? 'display',
    width: null,
    height: null,
    duration_ms: null,
    is_responsive: false,
    assets_required: [],
    renders: [],
    requirements: {},
  };
}

async function listFormats(params: z.output<typeof ListFormatsSchema>, ctx: TaskContext) {
  const agentUrl = ctx.settings.urls.creative;
  const search = params.name_search?.toLowerCase();
  // A sandbox principal naming an account sees exactly the formats its test controller
  // session seeded, when it seeded any.
  const seeded = params.account
    ? await sandboxFixtures(
        ctx.db,
        ctx.schema,
        'creative',
        ctx.principal?.principal_id,
        SESSION,
        'creative_format',
      )
    : null;
  const catalog = seeded ? seeded.map(seededFormat) : await allFormats(ctx.db, ctx.schema);
  const formats = pickFormats(catalog, params.format_ids, agentUrl).filter(
    (f) =>
      (!params.type || f.type === params.type) &&
      (!params.asset_types ||
        f.assets_required.some((a) => params.asset_types!.includes(a.asset_type))) &&
      (params.max_width === undefined || (f.width !== null && f.width <= params.max_width)) &&
      (params.max_height === undefined || (f.height !== null && f.height <= params.max_height)) &&
      (params.is_responsive === undefined || f.is_responsive === params.is_responsive) &&
      (!search || f.name.toLowerCase().includes(search) || f.format_id.includes(search)),
  );
  // Published default page size: 50.
  const { page, pagination } = paginate(formats, params.pagination, 50);
  return {
    formats: page.map((f) => formatDefinition(f, agentUrl)),
    creative_agents: [],
    pagination,
  };
}

/**
 * A creative manifest names its format by the legacy `format_id` or (3.1+) a canonical
 * `format_kind`; a canonical manifest's slots may carry the canonical asset types
 * (`pixel_tracker`, `zip`, ...) and several assets per slot.
 */
const ManifestSchema = z.looseObject({
  format_id: FormatIdSchema.optional(),
  format_kind: z.string().min(1).max(64).optional(),
  assets: z
    .record(
      z.string(),
      z.union([
        z.looseObject({ asset_type: z.enum(ASSET_TYPES) }),
        z.looseObject({ asset_type: z.string().min(1).max(64) }),
        z
          .array(z.looseObject({ asset_type: z.string().min(1).max(64) }))
          .min(1)
          .max(100),
      ]),
    )
    .default({}),
});

const InputsSchema = z
  .array(
    z.looseObject({
      name: z.string().min(1).max(100),
      macros: z.record(z.string(), z.string().max(500)).optional(),
    }),
  )
  .max(20)
  .optional();

const BrandRefSchema = z.looseObject({
  domain: z
    .string()
    .min(3)
    .max(253)
    .regex(/^[a-z0-9.-]+\.[a-z]{2,}$/i, 'brand.domain must be a domain name'),
});

/** Members of the published build_creative request the spec's older form lacks. */
const PUBLISHED_ONLY_BUILD_MEMBERS = [
  'target_format_ids',
  'target_capability_id',
  'brand',
  'account',
  'creative_id',
  'include_preview',
  'preview_inputs',
  'preview_output_format',
  'mode',
  'concept_id',
  'media_buy_id',
  'package_id',
] as const;

/**
 * Published: `target_format_id` or `target_format_ids` (one manifest per format), `brand`
 * as a `{domain}` reference, `include_preview`. Older: `brand_manifest`.
 */
const BuildSchema = z
  .looseObject({
    message: z.string().max(5000).optional(),
    creative_manifest: ManifestSchema.optional(),
    /** A creative of this agent's library, in place of a creative_manifest. */
    creative_id: z.string().min(1).max(255).optional(),
    target_format_id: FormatIdSchema.optional(),
    target_format_ids: z.array(FormatIdSchema).min(1).max(20).optional(),
    /** 3.2: a `capability_id` of our `creative.supported_formats` (canonical build). */
    target_capability_id: z.string().min(1).max(255).optional(),
    brand_manifest: BrandManifestSchema.optional(),
    brand: BrandRefSchema.optional(),
    include_preview: z.boolean().optional(),
    preview_inputs: InputsSchema,
    preview_output_format: z.enum(['url', 'html']).optional(),
  })
  .superRefine((p, zctx) => {
    if (p.creative_id !== undefined && p.creative_manifest !== undefined) {
      zctx.addIssue({
        code: 'custom',
        path: ['creative_id'],
        message: 'give a creative_id or a creative_manifest, not both',
      });
    }
    const targets = [p.target_format_id, p.target_format_ids, p.target_capability_id];
    if (targets.filter((x) => x !== undefined).length !== 1) {
      zctx.addIssue({
        code: 'custom',
        path: ['target_format_id'],
        message: 'give exactly one of target_format_id, target_format_ids and target_capability_id',
      });
    }
  })
  .refine(
    // The spec's older request (`message`, `creative_manifest`, `target_format_id`) is a
    // subset of the published one, so a request of only those members cannot be told
    // apart: it stays accepted without a key (its key honoured when sent). A published-only
    // member makes it the published form, which requires the key.
    ...requireIdempotencyKey((v) => !PUBLISHED_ONLY_BUILD_MEMBERS.some((k) => v[k] !== undefined)),
  );

type Asset = Record<string, unknown> & { asset_type: string };

function brandOf(params: z.output<typeof BuildSchema>): BrandManifest | null {
  const offerings = params.creative_manifest?.assets?.promoted_offerings as
    { brand_manifest?: unknown } | undefined;
  const fromAssets = BrandManifestSchema.safeParse(offerings?.brand_manifest);
  if (fromAssets.success) return fromAssets.data;
  if (params.brand_manifest) return params.brand_manifest;
  return params.brand ? { url: `https://${params.brand.domain.toLowerCase()}` } : null;
}

function brandName(brand: BrandManifest | null): string {
  if (brand?.name) return brand.name;
  if (brand?.url) {
    try {
      const host = new URL(brand.url).hostname.replace(/^www\./, '');
      const word = host.split('.')[0] ?? host;
      return word.charAt(0).toUpperCase() + word.slice(1);
    } catch {
      /* fall through */
    }
  }
  return 'Your Brand';
}

function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const COLOR = /^#[0-9a-fA-F]{3,8}$/;

/** A deterministic SVG image (as a data: URL) with the brand's colours and the headline. */
function svgImage(
  width: number,
  height: number,
  headline: string,
  brand: BrandManifest | null,
): string {
  const colors = (brand?.colors ?? {}) as { primary?: string; secondary?: string };
  const bg = colors.primary && COLOR.test(colors.primary) ? colors.primary : '#1f3a93';
  const fg = colors.secondary && COLOR.test(colors.secondary) ? colors.secondary : '#ffffff';
  const size = Math.max(
    10,
    Math.round(Math.min(width / Math.max(headline.length, 8), height / 3) * 1.6),
  );
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<rect width="100%" height="100%" fill="${bg}"/>` +
    `<text x="50%" y="50%" fill="${fg}" font-family="Helvetica,Arial,sans-serif" font-size="${size}" ` +
    `text-anchor="middle" dominant-baseline="middle">${escapeXml(headline)}</text></svg>`;
  return `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
}

function digest(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 16);
}

function vast(id: string, seconds: number, clickUrl: string, title: string): string {
  const d = `00:00:${String(seconds).padStart(2, '0')}`;
  return (
    `<VAST version="4.2"><Ad id="${id}"><InLine><AdSystem>svc-creative</AdSystem><AdTitle>${escapeXml(title)}</AdTitle>` +
    `<Creatives><Creative><Linear><Duration>${d}</Duration><VideoClicks><ClickThrough>${escapeXml(clickUrl)}</ClickThrough>` +
    `</VideoClicks></Linear></Creative></Creatives></InLine></Ad></VAST>`
  );
}

/** Builds a complete manifest for `format` from whatever the request supplies. */
export function buildManifest(
  format: FormatRow,
  agentUrl: string,
  input: { message?: string; source?: Record<string, Asset>; brand: BrandManifest | null },
): Record<string, unknown> {
  const source = input.source ?? {};
  const brand = input.brand;
  const firstOf = (type: string) => Object.values(source).find((a) => a.asset_type === type);
  const sourceText = (source.headline ?? firstOf('text')) as Asset | undefined;
  const headline =
    input.message?.trim() ||
    (typeof sourceText?.content === 'string' ? sourceText.content : '') ||
    (brand?.tagline as string | undefined) ||
    brandName(brand);
  const clickSource = (source.click_url ?? firstOf('url')) as Asset | undefined;
  const clickUrl = (clickSource?.url as string | undefined) ?? brand?.url ?? 'https://example.com/';
  const id = digest(format.format_id, headline, clickUrl, JSON.stringify(brand ?? {}));
  const assets: Record<string, unknown> = {};
  for (const req of format.assets_required) {
    const existing = (source[req.asset_id] ?? firstOf(req.asset_type)) as Asset | undefined;
    switch (req.asset_type) {
      case 'image': {
        const w = (req.requirements?.width as number) ?? format.width ?? 300;
        const h = (req.requirements?.height as number) ?? format.height ?? 250;
        assets[req.asset_id] = {
          asset_type: 'image',
          url: svgImage(w, h, headline.slice(0, 90), brand),
          width: w,
          height: h,
        };
        break;
      }
      case 'text':
        assets[req.asset_id] = { asset_type: 'text', content: headline.slice(0, 90) };
        break;
      case 'url':
        assets[req.asset_id] = { asset_type: 'url', url: clickUrl };
        break;
      case 'video':
      case 'audio': {
        const seconds = Math.round((format.duration_ms ?? 30000) / 1000);
        if (existing && existing.asset_type === req.asset_type) {
          assets[req.asset_id] = {
            ...existing,
            duration_ms: format.duration_ms ?? existing.duration_ms,
          };
        } else {
          // A generated ad is an inline tag document (published `vast` / `daast` asset),
          // which the format's video/audio slot accepts in place of a hosted file.
          assets[req.asset_id] = {
            asset_type: req.asset_type === 'video' ? 'vast' : 'daast',
            delivery_type: 'inline',
            content: vast(`gen_${id}`, seconds, clickUrl, headline.slice(0, 90)),
            ...(req.asset_type === 'video' ? { vast_version: '4.2' } : {}),
            duration_ms: format.duration_ms,
          };
        }
        break;
      }
      default:
        if (existing) assets[req.asset_id] = existing;
    }
  }
  return { format_id: { agent_url: agentUrl, id: format.format_id }, assets };
}

/** Slots a canonical build fills beside the required ones (the ad's headline and link). */
const BUILT_OPTIONAL_SLOTS = new Set(['headline', 'landing_page_url']);

/**
 * The format a `target_capability_id` names (a `capability_id` of our supported_formats,
 * supportedFormats: the standard format's id) as its canonical, sized as the standard
 * format; an unknown id is FORMAT_NOT_SUPPORTED naming target_capability_id.
 */
async function capabilityTarget(ctx: TaskContext, capabilityId: string): Promise<FormatRow> {
  const row = (await allFormats(ctx.db, ctx.schema)).find((f) => f.format_id === capabilityId);
  if (!row) {
    throw taskError(
      'FORMAT_NOT_SUPPORTED',
      `capability ${JSON.stringify(capabilityId).slice(0, 80)} is not in this agent's creative.supported_formats`,
      { field: 'target_capability_id' },
    );
  }
  const { format_kind } = canonicalOf(row);
  const canonical = canonicalFormat(format_kind, 'target_capability_id');
  return {
    ...canonical,
    width: row.width,
    height: row.height,
    duration_ms: row.duration_ms,
    assets_required: canonical.assets_required.filter(
      (a) => a.required || BUILT_OPTIONAL_SLOTS.has(a.asset_id),
    ),
  };
}

async function buildCreative(input: z.output<typeof BuildSchema>, ctx: TaskContext) {
  const agentUrl = ctx.settings.urls.creative;
  // A library creative is the source manifest, as if the buyer had sent it.
  const params = input.creative_id
    ? {
        ...input,
        creative_manifest: (await libraryManifest(
          ctx,
          input.creative_id,
          'creative_id',
        )) as z.output<typeof ManifestSchema>,
      }
    : input;
  const formats: FormatRow[] = [];
  if (params.target_capability_id !== undefined) {
    formats.push(await capabilityTarget(ctx, params.target_capability_id));
  } else {
    const targets = params.target_format_ids
      ? params.target_format_ids.map((f, i) => ({ id: f, field: `target_format_ids[${i}]` }))
      : [{ id: params.target_format_id!, field: 'target_format_id' }];
    for (const t of targets) {
      formats.push(await resolveFormat(ctx.db, ctx.schema, t.id, agentUrl, t.field));
    }
  }
  const brand = brandOf(params);
  const source = params.creative_manifest?.assets as Record<string, Asset> | undefined;
  if (!params.message && !source && !brand) {
    throw taskError(
      'VALIDATION_ERROR',
      'build_creative needs a message, a creative_manifest or a brand to work from',
      { field: 'message' },
    );
  }
  if (params.creative_manifest?.format_id) {
    // Transformation: the source manifest must be valid for its own format.
    const from = await resolveFormat(
      ctx.db,
      ctx.schema,
      params.creative_manifest.format_id,
      agentUrl,
      'creative_manifest.format_id',
    );
    const hasAll = from.assets_required.every((r) => !r.required || source?.[r.asset_id]);
    if (hasAll) checkAssets(from, source ?? {}, 'creative_manifest.assets');
  }
  const manifests = formats.map((format) => {
    const built = buildManifest(format, agentUrl, {
      ...(params.message ? { message: params.message } : {}),
      ...(source ? { source } : {}),
      brand,
    });
    if (params.target_capability_id === undefined) return built;
    // The canonical path: the manifest names its format_kind, no legacy format id.
    const { format_id: _legacy, ...rest } = built;
    return { format_kind: format.format_id, ...rest };
  });
  const body: Record<string, unknown> = params.target_format_ids
    ? { creative_manifests: manifests }
    : { creative_manifest: manifests[0] };
  if (params.include_preview) {
    const expires = new Date(ctx.clock.nowMs() + ctx.settings.previewTtlSeconds * 1000);
    const outputFormat = params.preview_output_format ?? 'url';
    const previews: Array<Record<string, unknown>> = [];
    for (const manifest of manifests) {
      const item: PreviewItem = {
        creative_manifest: manifest as NonNullable<PreviewItem['creative_manifest']>,
        ...(params.preview_inputs ? { inputs: params.preview_inputs } : {}),
      };
      previews.push(...(await previewsOf(item, '', outputFormat, expires, ctx)));
    }
    body.preview = { previews, expires_at: expires.toISOString() };
  }
  return body;
}

/**
 * One preview request: the published form (`creative_manifest` carrying its `format_id`)
 * or the spec digest's (`format_id` beside the manifest). `creative_id` names a library
 * creative, which this agent does not keep.
 */
const PreviewItemSchema = z.looseObject({
  format_id: FormatIdSchema.optional(),
  creative_manifest: ManifestSchema.optional(),
  creative_id: z.string().min(1).max(255).optional(),
  inputs: InputsSchema,
  output_format: z.enum(['url', 'html']).optional(),
});

const PreviewSchema = z.discriminatedUnion(
  'request_type',
  [
    PreviewItemSchema.extend({ request_type: z.literal('single') }),
    z.looseObject({
      request_type: z.literal('batch'),
      requests: z.array(PreviewItemSchema).min(1).max(50),
      output_format: z.enum(['url', 'html']).optional(),
    }),
  ],
  { error: 'request_type must be single or batch (variant previews are not kept)' },
);

type PreviewItem = z.output<typeof PreviewItemSchema>;

/** Only web and inline-image URLs reach the preview page (no `javascript:` links). */
function safeUrl(u: unknown): string {
  return typeof u === 'string' &&
    /^(https?:\/\/|data:image\/(png|jpeg|webp|gif|svg\+xml);)/i.test(u)
    ? u
    : '#';
}

function renderHtml(
  format: FormatRow,
  assets: Record<string, Asset>,
  macros: Record<string, string>,
): string {
  const sub = (s: string) => s.replace(/\{([A-Z0-9_]{1,64})\}/g, (m, k: string) => macros[k] ?? m);
  const click = safeUrl(
    typeof assets.click_url?.url === 'string' ? sub(assets.click_url.url) : '#',
  );
  const text =
    typeof assets.headline?.content === 'string' ? escapeXml(sub(assets.headline.content)) : '';
  let body: string;
  const img = Object.values(assets).find((a) => a.asset_type === 'image');
  const media = Object.values(assets).find((a) =>
    ['video', 'audio', 'vast', 'daast'].includes(a.asset_type),
  );
  if (format.type === 'video' || format.type === 'audio') {
    const tag = format.type;
    body =
      media && typeof media.url === 'string'
        ? `<${tag} controls src="${escapeXml(safeUrl(media.url))}"></${tag}>`
        : `<pre>${escapeXml(String(media?.content ?? ''))}</pre>`;
  } else {
    const w = format.width ?? 300;
    const h = format.height ?? 250;
    body =
      img && typeof img.url === 'string'
        ? `<img src="${escapeXml(safeUrl(img.url))}" width="${w}" height="${h}" alt="${text}">`
        : '';
  }
  return (
    `<!doctype html><html><head><meta charset="utf-8"><title>${escapeXml(format.name)} preview</title></head>` +
    `<body style="margin:0"><a href="${escapeXml(click)}" target="_blank" rel="noopener">${body}</a>` +
    (text ? `<p>${text}</p>` : '') +
    `</body></html>`
  );
}

/** The manifest and format one preview item names; refusals name the item's fields. */
async function previewTarget(item: PreviewItem, prefix: string, ctx: TaskContext) {
  if (item.creative_id !== undefined && item.creative_manifest === undefined) {
    // A creative of this agent's library: previewed as stored.
    item = {
      ...item,
      creative_manifest: (await libraryManifest(
        ctx,
        item.creative_id,
        `${prefix}creative_id`,
      )) as NonNullable<PreviewItem['creative_manifest']>,
    };
  }
  if (item.creative_manifest === undefined) {
    throw taskError('VALIDATION_ERROR', 'creative_manifest is required', {
      field: `${prefix}creative_manifest`,
    });
  }
  if (
    item.creative_manifest.format_kind !== undefined &&
    item.creative_manifest.format_id === undefined &&
    item.format_id === undefined
  ) {
    return canonicalPreviewTarget(item.creative_manifest, prefix);
  }
  const inner = item.creative_manifest.format_id;
  if (inner && item.format_id && JSON.stringify(inner) !== JSON.stringify(item.format_id)) {
    throw taskError(
      'VALIDATION_ERROR',
      'format_id and creative_manifest.format_id name different formats',
      { field: `${prefix}format_id`, suggestion: 'send the format only inside the manifest' },
    );
  }
  const formatId = inner ?? item.format_id;
  if (!formatId) {
    throw taskError(
      'VALIDATION_ERROR',
      'creative_manifest.format_id (or format_id beside it) names the format to preview',
      { field: `${prefix}creative_manifest.format_id` },
    );
  }
  const field = item.creative_manifest.format_id ? 'creative_manifest.format_id' : 'format_id';
  const format = await resolveFormat(
    ctx.db,
    ctx.schema,
    formatId,
    ctx.settings.urls.creative,
    `${prefix}${field}`,
  );
  const assets = item.creative_manifest.assets as Record<string, Asset>;
  checkAssets(format, assets, `${prefix}creative_manifest.assets`);
  return { format, assets, canonical: false };
}

/**
 * A canonical manifest's preview: rendered from whatever assets it carries (the
 * storyboards preview canonical manifests keyed by their own asset names, and a preview
 * is not a validation), sized by its first image.
 */
function canonicalPreviewTarget(
  manifest: NonNullable<PreviewItem['creative_manifest']>,
  prefix: string,
): { format: FormatRow; assets: Record<string, Asset>; canonical: boolean } {
  const base = canonicalFormat(manifest.format_kind!, `${prefix}creative_manifest.format_kind`);
  const assets: Record<string, Asset> = {};
  for (const [k, v] of Object.entries(manifest.assets)) {
    const first = (Array.isArray(v) ? v[0] : v) as Asset | undefined;
    if (first) assets[k] = first;
  }
  const img = Object.values(assets).find((a) => a.asset_type === 'image');
  const dims =
    typeof img?.width === 'number' && typeof img?.height === 'number'
      ? { width: img.width, height: img.height }
      : {};
  return { format: { ...base, ...dims }, assets, canonical: true };
}

/** The previews of one item: one per input, each with one primary render. */
async function previewsOf(
  item: PreviewItem,
  prefix: string,
  outputFormat: 'url' | 'html',
  expires: Date,
  ctx: TaskContext,
): Promise<Array<Record<string, unknown>>> {
  const { format, assets, canonical } = await previewTarget(item, prefix, ctx);
  const inputs =
    item.inputs && item.inputs.length > 0 ? item.inputs : [{ name: 'default', macros: {} }];
  const previews: Array<Record<string, unknown>> = [];
  for (const input of inputs) {
    const html = renderHtml(format, assets, input.macros ?? {});
    const previewId = `prv_${randomUUID().replaceAll('-', '')}`;
    const render: Record<string, unknown> = {
      render_id: `${previewId}_primary`,
      output_format: outputFormat,
      role: 'primary',
    };
    if (format.width && format.height)
      render.dimensions = { width: format.width, height: format.height };
    if (outputFormat === 'html') render.preview_html = html;
    else {
      await ctx.db.query(
        `INSERT INTO ${ctx.schema}.previews (preview_id, html, expires_at) VALUES ($1, $2, $3)`,
        [previewId, html, expires],
      );
      render.preview_url = `${ctx.settings.previewBaseUrl.replace(/\/+$/, '')}/${previewId}`;
    }
    previews.push({
      preview_id: previewId,
      ...(canonical
        ? { format_kind: format.format_id }
        : { format_id: { agent_url: ctx.settings.urls.creative, id: format.format_id } }),
      renders: [render],
      input: { name: input.name, ...(input.macros ? { macros: input.macros } : {}) },
    });
  }
  return previews;
}

/**
 * Published response shapes: `single` -> `{response_type, previews[], expires_at}`;
 * `batch` -> `{response_type, results[]}` in request order, each `{success, creative_id,
 * response | errors}` (one bad item does not sink the others).
 */
async function previewCreative(params: z.output<typeof PreviewSchema>, ctx: TaskContext) {
  const expires = new Date(ctx.clock.nowMs() + ctx.settings.previewTtlSeconds * 1000);
  if (params.request_type === 'single') {
    const previews = await previewsOf(params, '', params.output_format ?? 'url', expires, ctx);
    return { response_type: 'single', previews, expires_at: expires.toISOString() };
  }
  const results: Array<Record<string, unknown>> = [];
  for (const [i, item] of params.requests.entries()) {
    const creativeId = item.creative_id ?? `request_${i}`;
    const outputFormat = item.output_format ?? params.output_format ?? 'url';
    try {
      const previews = await previewsOf(item, `requests[${i}].`, outputFormat, expires, ctx);
      results.push({
        success: true,
        creative_id: creativeId,
        response: { previews, expires_at: expires.toISOString() },
      });
    } catch (err) {
      if (!(err instanceof TaskError)) throw err;
      results.push({
        success: false,
        creative_id: creativeId,
        errors: [
          {
            code: err.code,
            message: err.message,
            ...(err.field !== undefined ? { field: err.field } : {}),
          },
        ],
      });
    }
  }
  return { response_type: 'batch', results };
}

/** A stored preview for the agent's HTTP route; null when unknown or expired. */
export async function getPreview(
  pool: Pick<Pool, 'query'>,
  schema: string,
  clock: AgentClock,
  previewId: string,
): Promise<{ html: string; expires_at: string } | null> {
  if (!/^prv_[0-9a-f]{32}$/.test(previewId)) return null;
  const { rows } = await pool.query<{ html: string; expires_at: Date }>(
    `SELECT html, expires_at FROM ${schema}.previews WHERE preview_id = $1 AND expires_at > $2`,
    [previewId, clock.now()],
  );
  const row = rows[0];
  return row ? { html: row.html, expires_at: row.expires_at.toISOString() } : null;
}

export function registerCreativeAgentTasks(registry: TaskRegistry): void {
  registerCreativeLibraryTasks(registry);
  registry.add({
    name: 'list_creative_formats',
    description: 'List the creative formats this agent builds and previews, with their assets.',
    agent: 'creative',
    schema: ListFormatsSchema,
    auth: { tier: 'public' },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    errorShape: 'single',
    handle: async (params, ctx) => ({ status: 'completed', body: await listFormats(params, ctx) }),
  });
  registry.add({
    name: 'build_creative',
    description: 'Generate or transform a creative manifest for a target format.',
    agent: 'creative',
    schema: BuildSchema,
    auth: { tier: 'authenticated', permission: { resource: 'creatives', permission: 'write' } },
    expectedDuration: '30s to 5min',
    mode: 'sync',
    // Mutating as the published request reads it (it requires idempotency_key): a replay
    // answers the first build, the same key with another request IDEMPOTENCY_CONFLICT.
    mutating: true,
    webhookTaskType: 'build_creative',
    errorShape: 'single',
    handle: async (params, ctx) => ({
      status: 'completed',
      body: await buildCreative(params, ctx),
    }),
  });
  registry.add({
    name: 'preview_creative',
    description: 'Render previews of creative manifests (single or batch).',
    agent: 'creative',
    schema: PreviewSchema,
    auth: { tier: 'authenticated', permission: { resource: 'creatives', permission: 'read' } },
    expectedDuration: '5s',
    mode: 'sync',
    mutating: false,
    webhookTaskType: 'preview_creative',
    errorShape: 'single',
    handle: async (params, ctx) => ({
      status: 'completed',
      body: await previewCreative(params, ctx),
    }),
  });
}
