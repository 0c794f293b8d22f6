/**
 * Sales agent catalog tasks: get_products (ranked against the brief, filtered; partial
 * catalog without credentials), list_authorized_properties, list_creative_formats.
 */
import { z } from 'zod';
import { hasPermission } from '../../auth/principal.js';
import {
  allFormats,
  formatDefinition,
  GENERIC_FORMAT_IDS,
  pickFormats,
  type FormatRow,
} from '../../creative/formats.js';
import { formatDeclaration } from '../../creative/canonical.js';
import { paginate, PaginationRequestSchema } from '../../common/pagination.js';
import { briefTerms, score } from '../../runtime/ranking.js';
import {
  sandboxFixtures,
  SESSION,
  takeForcedGetProductsArm,
  type ForcedGetProductsArm,
} from '../../sandbox/fixtures.js';
import type { TaskRegistry } from '../../runtime/registry.js';
import type { AgentSettings } from '../../runtime/settings.js';
import type { HandlerOutcome, TaskContext } from '../../runtime/types.js';
import { BrandManifestSchema, FormatIdSchema } from '../../runtime/validation.js';
import { takeStaleResponse } from '../../sandbox/stale-response.js';
import {
  isContingent,
  minimumBudget,
  normalizePricingOption,
  PRICING_STRUCTURES,
  withPricingStructures,
  type PricingOption,
} from './pricing.js';
import type { ProductRow } from './product-row.js';

export type { ProductRow } from './product-row.js';
import { planProposals, saveDrafts, wireProposal } from './proposals.js';
import { RefineSchema, refineProducts } from './refine.js';
import { refuseConflictingGeo } from './brief-targeting.js';
import { targetedProducts } from './targeting-aware.js';
import { publishedFixtureChannels } from './channels.js';

export type { PricingOption };

/** Our channels (the spec's words); the wire says the published `channels` of each. */
export const CHANNELS = ['video', 'ctv', 'display', 'audio', 'dooh'] as const;

/** The published channel enum values our products are sold as. */
const PUBLISHED_CHANNELS = ['olv', 'ctv', 'display', 'streaming_audio', 'podcast', 'dooh'] as const;

/** A request's channel (ours or published) as the published channels it means. */
function requestedChannels(channel: string): string[] {
  if (channel === 'video') return ['olv'];
  if (channel === 'audio') return ['streaming_audio', 'podcast'];
  return [channel];
}

/**
 * The published channels of a product: audio is a podcast or streaming audio; a seeded
 * product keeps its fixture's published channels (affiliate, ...) as given.
 */
export function productChannels(p: Pick<ProductRow, 'channel' | 'keywords' | 'fixture'>): string[] {
  const seeded = publishedFixtureChannels(p.fixture?.channels);
  if (seeded.length > 0) return seeded;
  if (p.channel === 'video') return ['olv'];
  if (p.channel === 'audio')
    return [p.keywords.includes('podcast') ? 'podcast' : 'streaming_audio'];
  return [p.channel];
}

const FORMAT_TYPES = ['video', 'display', 'audio', 'dooh'] as const;

/**
 * Published 3.x: `buying_mode` (brief | wholesale | refine) with `refine[]` in refine mode;
 * the spec's older request (a brief, no buying_mode) is a brief.
 */
export const GetProductsSchema = z
  .looseObject({
    buying_mode: z.enum(['brief', 'wholesale', 'refine']).optional(),
    refine: RefineSchema.optional(),
    brief: z.string().max(10000).optional(),
    brand_manifest: BrandManifestSchema.optional(),
    filters: z
      .looseObject({
        channels: z.array(z.enum([...CHANNELS, ...PUBLISHED_CHANNELS])).optional(),
        budget_range: z
          .looseObject({
            min: z.number().nonnegative().optional(),
            max: z.number().positive().optional(),
          })
          .refine((r) => r.min === undefined || r.max === undefined || r.min <= r.max, {
            message: 'min must not exceed max',
          })
          .optional(),
        delivery_type: z.enum(['guaranteed', 'non_guaranteed']).optional(),
        format_types: z.array(z.enum(FORMAT_TYPES)).optional(),
        /** Published: fixed-price (true) or auction (false) options only. */
        is_fixed_price: z.boolean().optional(),
        /** Published 3.2: options of these structures only (contingent: revenue share). */
        pricing_structures: z
          .array(z.enum(PRICING_STRUCTURES))
          .min(1)
          .refine((l) => new Set(l).size === l.length, 'pricing_structures must not repeat')
          .optional(),
        /** Published 3.1+: products reporting every one of these vendor metrics. */
        required_vendor_metrics: z
          .array(
            z
              .looseObject({
                vendor: z.looseObject({ domain: z.string().min(1).max(253) }).optional(),
                metric_id: z.string().min(1).max(200).optional(),
              })
              .refine((r) => r.vendor !== undefined || r.metric_id !== undefined, {
                message: 'each entry names a vendor, a metric_id or both',
              }),
          )
          .max(50)
          .optional(),
      })
      .optional(),
  })
  .superRefine((r, issue) => {
    const mode = r.buying_mode;
    if (mode === 'refine' && r.refine === undefined) {
      issue.addIssue({
        code: 'custom',
        path: ['refine'],
        message: 'buying_mode refine needs a refine array',
      });
    }
    if (r.refine !== undefined && mode !== 'refine') {
      issue.addIssue({
        code: 'custom',
        path: ['buying_mode'],
        message: 'a refine array needs buying_mode refine',
      });
    }
    if (r.brief !== undefined && (mode === 'wholesale' || mode === 'refine')) {
      issue.addIssue({
        code: 'custom',
        path: ['brief'],
        message: `brief must not be sent with buying_mode ${mode}`,
      });
    }
  });

/**
 * `filters.is_fixed_price`: each product with only its options of that structure (fixed:
 * a `fixed_price`; auction: a price set by bidding), and products left with none dropped.
 * Contingent options (revenue share) match neither, as the published filter says.
 */
function byPriceStructure(products: ProductRow[], fixed: boolean): ProductRow[] {
  return withPricingStructures(products, [fixed ? 'fixed' : 'auction']);
}

/**
 * `filters.required_vendor_metrics`: the product's `reporting_capabilities.vendor_metrics`
 * (a seeded product's; the catalog's report none) names each required vendor (and metric,
 * when one is named). Unmet requirements exclude the product silently, never an error.
 */
function reportsVendorMetrics(
  p: ProductRow,
  required: Array<{ vendor?: { domain: string } | undefined; metric_id?: string | undefined }>,
): boolean {
  const reporting = p.fixture?.reporting_capabilities as { vendor_metrics?: unknown } | undefined;
  const offered = Array.isArray(reporting?.vendor_metrics)
    ? (reporting.vendor_metrics as Array<{ vendor?: { domain?: unknown }; metric_id?: unknown }>)
    : [];
  return required.every((r) =>
    offered.some(
      (o) =>
        (r.vendor === undefined ||
          (typeof o?.vendor?.domain === 'string' &&
            o.vendor.domain.toLowerCase() === r.vendor.domain.toLowerCase())) &&
        (r.metric_id === undefined || o?.metric_id === r.metric_id),
    ),
  );
}

/** A product row with its pricing options in the internal (published) form. */
export function productRow(row: ProductRow): ProductRow {
  return {
    ...row,
    pricing_options: row.pricing_options.map((o) =>
      normalizePricingOption(o as unknown as Record<string, unknown>),
    ),
  };
}

/**
 * Products this caller may see: standard ones, and custom ones made for it. Seeded products
 * share sort_order 0, so the id breaks their ties: by row order alone, a re-seeded fixture
 * (a new row version) moved, and the same brief ranked them differently from run to run.
 */
export async function visibleProducts(ctx: TaskContext): Promise<ProductRow[]> {
  const s = ctx.schema;
  const { rows } = await ctx.db.query<ProductRow>(
    `SELECT * FROM ${s}.products
      WHERE (custom_principal IS NULL OR custom_principal = $1) AND configured_from IS NULL
      ORDER BY sort_order, product_id`,
    [ctx.principal?.principal_id ?? ''],
  );
  return rows.map(productRow);
}

/**
 * `publisher_properties` of every product: all properties of each publisher whose
 * adagents.json authorizes this sales agent (the seller's own host when none is configured).
 */
function publisherProperties(ctx: TaskContext): Array<Record<string, unknown>> {
  return portfolioDomains(ctx.settings).map((d) => ({
    publisher_domain: d,
    selection_type: 'all',
  }));
}

/** The publishers whose adagents.json authorizes this sales agent (else its own host). */
export function portfolioDomains(settings: Pick<AgentSettings, 'urls' | 'publishers'>): string[] {
  const salesUrl = settings.urls.sales;
  const domains = settings.publishers
    .filter((p) => p.authorized_agents.some((a) => sameUrl(a.url, salesUrl)))
    .map((p) => p.domain.toLowerCase());
  if (domains.length === 0) domains.push(new URL(salesUrl).hostname.toLowerCase());
  return domains;
}

/**
 * The seller's brief-routing scope (capabilities `media_buy.portfolio`, published 3.1+):
 * every channel a product of ours is sold as, and the countries the catalog targets.
 */
export function portfolio(settings: Pick<AgentSettings, 'urls' | 'publishers'>) {
  return {
    publisher_domains: portfolioDomains(settings),
    primary_channels: [...PUBLISHED_CHANNELS],
    primary_countries: ['US', 'CA'],
  };
}

/** A pricing option on the wire (published members only). */
function wirePricingOption(o: PricingOption): Record<string, unknown> {
  const opt: Record<string, unknown> = {
    pricing_option_id: o.pricing_option_id,
    pricing_model: o.pricing_model,
    currency: o.currency,
  };
  if (isContingent(o)) {
    const { event_type, custom_event_name, event_source_id, commission_rate } = o;
    const basis = o.commission_basis_description;
    Object.assign(opt, { event_type, event_source_id, commission_rate });
    if (custom_event_name !== undefined) opt.custom_event_name = custom_event_name;
    opt.commission_basis_description = basis;
  }
  if (o.fixed_price !== undefined) opt.fixed_price = o.fixed_price;
  if (o.floor_price !== undefined) opt.floor_price = o.floor_price;
  if (o.min_spend_per_package !== undefined) opt.min_spend_per_package = o.min_spend_per_package;
  return opt;
}

function formatTypeOf(formatId: string): string {
  return formatId.split('_')[0] ?? '';
}

/** Whether the answer is served as 3.2 (the buyer's pin, else this seller's release). */
function served32(ctx: TaskContext): boolean {
  return (ctx.request.release ?? ctx.settings.protocolVersion) === '3.2';
}

/** The catalog a get_products caller sees, filtered: the full one with credentials. */
async function filteredProducts(
  params: z.output<typeof GetProductsSchema>,
  ctx: TaskContext,
): Promise<{ full: boolean; products: ProductRow[] }> {
  const full =
    ctx.principal !== null &&
    hasPermission(ctx.principal, { resource: 'products', permission: 'read' });
  // A product is offered with its price: a seeded one without a pricing option yet is not
  // listed (the published product requires at least one).
  let products = (await visibleProducts(ctx)).filter((p) => p.pricing_options.length > 0);
  if (!full) products = products.filter((p) => p.is_standard && !p.custom_principal);
  // Revenue share is 3.2's (absent from 3.1.19's pricing-option union): only a request
  // pinned to 3.2 is shown it, as any other answer must be valid in every release.
  if (ctx.request.release !== '3.2') {
    products = withPricingStructures(products, ['fixed', 'auction']);
  }
  const f = params.filters ?? {};
  if (f.channels) {
    const wanted = new Set(f.channels.flatMap(requestedChannels));
    products = products.filter((p) => productChannels(p).some((c) => wanted.has(c)));
  }
  if (f.delivery_type) products = products.filter((p) => p.delivery_type === f.delivery_type);
  if (f.is_fixed_price !== undefined) products = byPriceStructure(products, f.is_fixed_price);
  if (f.pricing_structures) products = withPricingStructures(products, f.pricing_structures);
  if (f.format_types) {
    products = products.filter((p) =>
      p.format_ids.some((id) => f.format_types!.includes(formatTypeOf(id) as never)),
    );
  }
  if (f.required_vendor_metrics) {
    const required = f.required_vendor_metrics;
    products = products.filter((p) => reportsVendorMetrics(p, required));
  }
  if (f.budget_range?.max !== undefined) {
    const max = f.budget_range.max;
    products = products.filter((p) => p.pricing_options.some((o) => minimumBudget(o) <= max));
  }
  return { full, products };
}

/**
 * Products ranked against brief terms: only the matching ones when any match, best first
 * (ties in catalog order); all of them, in catalog order, without terms.
 */
export function rankProducts(
  products: ProductRow[],
  terms: string[],
): Array<{ p: ProductRow; matched: string[] }> {
  let ranked = products.map((p) => ({ p, ...score(p, terms) }));
  if (terms.length > 0) {
    const matching = ranked.filter((r) => r.score > 0);
    if (matching.length > 0) ranked = matching;
    ranked.sort((a, b) => b.score - a.score || a.p.sort_order - b.p.sort_order);
  }
  return ranked;
}

/** The published product of a row (the partial catalog shows only generic formats). */
function productWriter(ctx: TaskContext, full: boolean, formats: FormatRow[]) {
  const agentUrl = ctx.settings.urls.creative;
  const properties = publisherProperties(ctx);
  const byId = new Map(formats.map((f) => [f.format_id, f]));
  return (p: ProductRow, matched: string[]): Record<string, unknown> => {
    const formatIds = full ? p.format_ids : p.format_ids.filter((id) => GENERIC_FORMAT_IDS.has(id));
    const out: Record<string, unknown> = {
      product_id: p.product_id,
      name: p.name,
      description: p.description,
      publisher_properties: properties,
      channels: productChannels(p),
      channel: p.channel,
      delivery_type: p.delivery_type,
      format_ids: formatIds.map((id) => ({ agent_url: agentUrl, id })),
      // 3.1+ canonical path: each format projected onto its canonical (v1_format_ref links
      // the two), so a canonical-only buyer reads the same formats.
      ...formatOptions(formatIds, byId, agentUrl),
      targeting: p.targeting,
      is_custom: p.custom_principal !== null,
      ...(p.expires_at ? { expires_at: p.expires_at.toISOString() } : {}),
      // The published product requires its pricing; the partial catalog (no credentials)
      // narrows which products and formats are shown, not their rate card.
      pricing_options: p.pricing_options.map(wirePricingOption),
      reporting_capabilities: {
        available_reporting_frequencies: p.reporting_frequencies,
        expected_delay_minutes: p.expected_delay_minutes,
        timezone: 'UTC',
        supports_webhooks: true,
        available_metrics: ['impressions', 'spend', 'clicks', 'ctr'],
        date_range_support: 'date_range',
        windowed_pull_granularities: ctx.settings.windowedPullGranularities,
      },
    };
    if (matched.length > 0) out.brief_relevance = `matches: ${matched.join(', ')}`;
    // A seeded product answers the fixture's own published members (format_options,
    // creative_policy, ...) over ours; its reporting_capabilities add to ours (the
    // published object's required members stay).
    if (p.fixture) {
      // demographic_targeting and overlay_support are 3.2's: a 3.0/3.1 answer omits them.
      // A seeded product's placements are kept for 3.2's placement_selection and answered
      // with it (3.0's placement requires a name these fixtures lack).
      const {
        reporting_capabilities: reporting,
        demographic_targeting: demo,
        overlay_support: support,
        placements,
        browser_inventory: _inventory, // the seller's own forecast input, not a product member
        allowed_actions: allowed,
        ...rest
      } = p.fixture;
      // Published in 3.1 and 3.2; answered to 3.2 buyers, beside the rest of targeting-aware
      // discovery's fixture members (the buys' available_actions follow it, views.ts).
      if (allowed !== undefined && served32(ctx)) out.allowed_actions = allowed;
      // channels: answered as productChannels reads them (published values only).
      delete rest.channels;
      if (demo !== undefined && served32(ctx)) out.demographic_targeting = demo;
      if (support !== undefined && served32(ctx)) out.overlay_support = support;
      if (placements !== undefined && served32(ctx)) out.placements = placements;
      Object.assign(out, rest);
      if (reporting && typeof reporting === 'object') {
        out.reporting_capabilities = {
          ...(out.reporting_capabilities as Record<string, unknown>),
          ...(reporting as Record<string, unknown>),
        };
      }
    }
    return out;
  };
}

function formatOptions(
  ids: string[],
  byId: Map<string, FormatRow>,
  agentUrl: string,
): { format_options?: Record<string, unknown>[] } {
  const options = ids.flatMap((id) => {
    const row = byId.get(id);
    return row ? [formatDeclaration(row, agentUrl)] : [];
  });
  return options.length > 0 ? { format_options: options } : {};
}

/**
 * The test controller's forced arm (force_get_products_arm) for this request, taken: only
 * a brief-mode request naming an account of a sandbox principal (controller on) takes it,
 * and the rejected arm only a request pinned to 3.2 (GetProductsRejected is 3.2's; a 3.0 or
 * 3.1 buyer's answer has no such branch, so the directive waits for a request that can).
 */
async function forcedArm(
  params: z.output<typeof GetProductsSchema>,
  ctx: TaskContext,
): Promise<ForcedGetProductsArm | null> {
  const brief = params.buying_mode === 'brief' || params.buying_mode === undefined;
  if (!brief || !ctx.settings.testController || !ctx.principal) return null;
  if ((params as { account?: unknown }).account === undefined) return null;
  return takeForcedGetProductsArm(
    ctx.db,
    ctx.schema,
    ctx.principal.principal_id,
    (arm) => arm.arm === 'submitted' || ctx.request.release === '3.2',
  );
}

/** The answer of a forced arm: the submitted task envelope, or the business rejection. */
function forcedAnswer(arm: ForcedGetProductsArm): HandlerOutcome {
  if (arm.arm === 'rejected') {
    return {
      status: 'rejected',
      body: {
        reason: arm.reason,
        ...(arm.suggestions ? { suggestions: arm.suggestions } : {}),
      },
    };
  }
  const message = arm.message ?? 'product discovery received; the result follows';
  return {
    status: 'submitted',
    body: { message },
    async: { runAfterMs: null, taskId: arm.task_id, message },
  };
}

export async function getProducts(params: z.output<typeof GetProductsSchema>, ctx: TaskContext) {
  refuseConflictingGeo(params);
  const { full, products } = await filteredProducts(params, ctx);
  const wire = productWriter(ctx, full, await allFormats(ctx.db, ctx.schema));
  // Our rate card is the same for every account.
  const envelope = { cache_scope: 'public', ...(full ? {} : { catalog: 'partial' }) };
  if (params.buying_mode === 'refine') {
    return {
      ...(await refineProducts(params.refine!, ctx, { products, full, wire })),
      ...envelope,
    };
  }
  // 3.2: the brief's hard targeting and the structured overlay bind, required overlay
  // support filters (targeting-aware.ts); a 3.0/3.1 answer has none of these members.
  const countries = portfolio(ctx.settings).primary_countries;
  const targeted = served32(ctx)
    ? await targetedProducts(params, ctx, products, { full, countries })
    : { products, brief: null };
  const hard = targeted.brief;
  const eligible = targeted.products;
  const ranked = rankProducts(eligible, briefTerms(params.brief));
  const body: Record<string, unknown> = {
    products: ranked.map(({ p, matched }) => wire(p, matched)),
    ...(hard ? { targeting_resolution: { brief_targeting: hard } } : {}),
    ...envelope,
  };
  // A sandbox caller's forced-down upstream (force_upstream_unavailable): the same answer,
  // flagged as served from cache, only when there is something to serve.
  const stale = ranked.length > 0 ? await takeStaleResponse(ctx, 'get_products') : null;
  if (stale) body.errors = [stale];
  // Plans for a 3.x brief (a buyer that names its buying mode can refine and finalize them).
  if (params.buying_mode === 'brief' && full && ctx.principal) {
    const matched = [...new Set(ranked.flatMap((r) => r.matched))];
    const drafts = await saveDrafts(
      ctx,
      planProposals(
        ranked.map((r) => r.p),
        matched,
      ),
    );
    body.proposals = drafts.map(wireProposal);
  }
  return body;
}

export const ListCreativeFormatsSalesSchema = z.looseObject({
  format_types: z.array(z.enum(FORMAT_TYPES)).optional(),
  format_ids: z.array(FormatIdSchema).max(100).optional(),
  account: z.looseObject({}).optional(),
  pagination: PaginationRequestSchema.optional(),
});

/**
 * The formats a sandbox principal's test controller seeded for the sales agent, when the
 * request names an account and any were seeded (as the creative agent lists its own).
 */
async function seededFormats(
  params: z.output<typeof ListCreativeFormatsSalesSchema>,
  ctx: TaskContext,
  agentUrl: string,
): Promise<Array<Record<string, unknown>> | null> {
  if (!params.account) return null;
  const seeded = await sandboxFixtures(
    ctx.db,
    ctx.schema,
    'sales',
    ctx.principal?.principal_id,
    SESSION,
    'creative_format',
  );
  return seeded
    ? pickFormats(
        seeded.map((f) => ({ ...f, format_id: f.id })),
        params.format_ids,
        agentUrl,
      ).map((f) => ({
        format_id: { agent_url: agentUrl, id: f.id },
        name: String(f.data.name ?? f.id),
        ...(typeof f.data.type === 'string' ? { type: f.data.type } : {}),
      }))
    : null;
}

export function registerCatalogTasks(registry: TaskRegistry): void {
  registry.add({
    name: 'get_products',
    description: 'Discover products matching a natural-language brief, with filters.',
    agent: 'sales',
    schema: GetProductsSchema,
    auth: { tier: 'public-limited', permission: { resource: 'products', permission: 'read' } },
    expectedDuration: '60s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    errorShape: 'single',
    webhookTaskType: 'get_products',
    handle: async (params, ctx) => {
      const arm = await forcedArm(params, ctx);
      if (arm) return forcedAnswer(arm);
      return { status: 'completed', body: await getProducts(params, ctx) };
    },
  });

  registry.add({
    name: 'list_authorized_properties',
    description: 'List the publisher domains this agent is authorized to sell.',
    agent: 'sales',
    schema: z.looseObject({}),
    auth: { tier: 'public' },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    errorShape: 'single',
    handle: async (_params, ctx) => {
      const salesUrl = ctx.settings.urls.sales;
      const domains = ctx.settings.publishers
        .filter((p) => p.authorized_agents.some((a) => sameUrl(a.url, salesUrl)))
        .map((p) => p.domain);
      return { status: 'completed', body: { publisher_domains: domains } };
    },
  });

  registry.add({
    name: 'list_creative_formats',
    description: 'List the creative formats (structured format ids) supported.',
    agent: 'sales',
    schema: ListCreativeFormatsSalesSchema,
    auth: { tier: 'public' },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    errorShape: 'single',
    handle: async (params, ctx) => {
      const s = ctx.schema;
      const agentUrl = ctx.settings.urls.creative;
      const seeded = await seededFormats(params, ctx, agentUrl);
      if (seeded) {
        const { page, pagination } = paginate(seeded, params.pagination, 50);
        return {
          status: 'completed',
          body: { formats: page, creative_agents: [{ agent_url: agentUrl }], pagination },
        };
      }
      const { rows } = await ctx.db.query<{ id: string }>(
        `SELECT DISTINCT jsonb_array_elements_text(format_ids) AS id FROM ${s}.products
          WHERE custom_principal IS NULL OR custom_principal = $1`,
        [ctx.principal?.principal_id ?? ''],
      );
      const used = new Set(rows.map((r) => r.id));
      // A `format_ids` filter answers in the request's order.
      const formats = pickFormats(await allFormats(ctx.db, s), params.format_ids, agentUrl)
        .filter((f) => used.has(f.format_id))
        .filter((f) => !params.format_types || params.format_types.includes(f.type as never))
        .map((f) => ({
          ...formatDefinition(f, agentUrl),
          requirements: f.requirements,
          asset_schemas: Object.fromEntries(
            f.assets_required.map((a) => [
              a.asset_id,
              { asset_type: a.asset_type, required: a.required, ...a.requirements },
            ]),
          ),
        }));
      // Published cursor pagination, default page size 50.
      const { page, pagination } = paginate(formats, params.pagination, 50);
      return {
        status: 'completed',
        body: { formats: page, creative_agents: [{ agent_url: agentUrl }], pagination },
      };
    },
  });
}

export function sameUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, '').toLowerCase() === b.replace(/\/+$/, '').toLowerCase();
}
