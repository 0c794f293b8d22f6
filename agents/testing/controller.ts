/**
 * `comply_test_controller`, the protocol's test controller (published
 * `compliance/comply-test-controller-*.json`). It exists only when the deployment turns it
 * on (`settings.testController`; `svc start` does, for its demo principals) and answers
 * only sandbox principals: a production principal gets FORBIDDEN, and an account or entity
 * of anyone else is NOT_FOUND, so no production account can ever be changed.
 *
 * Outcomes are the published response branches: `{success: true, ...}` or the
 * ControllerError `{success: false, error, error_detail}` (a completed task either way,
 * as the protocol's harness expects).
 */
import type { AgentKind } from '../auth/principal.js';
import { CREATIVE_STATUSES } from '../creative/library.js';
import { ACCOUNT_STATUSES } from '../sales/accounts/accounts.js';
import { storedFormatRef } from '../sales/creatives/creatives.js';
import { revenueShareOption } from '../sales/catalog/pricing.js';
import type { TaskRegistry } from '../runtime/registry.js';
import type { TaskContext } from '../runtime/types.js';
import { isSandboxPrincipal, putFixture, SESSION } from '../sandbox/fixtures.js';
import {
  forceCreateMediaBuyArm,
  forceMediaBuyStatus,
  simulateBudgetSpend,
} from './media-buy-lifecycle.js';
import { seedMediaBuy, simulateDelivery } from './media-buy-scenarios.js';
import { forceGetProductsArm, forceGetSignalsArm, forceTaskCompletion } from './discovery-arms.js';
import { ControllerSchema, type ControllerRequest } from './request.js';
import { refuse, str } from './replies.js';
import { forceUpstreamUnavailable } from './upstream.js';
import { seedAccount } from './account-scenarios.js';
import { CONTROLLER_SCENARIOS } from '../sandbox/scenarios.js';

const FORMAT_TYPES = ['display', 'video', 'audio', 'dooh'] as const;

/**
 * The published scenarios' required params (the request schema's per-scenario rules):
 * missing ones are INVALID_PARAMS whether or not this agent implements the scenario.
 */
const REQUIRED_PARAMS: Record<string, string[]> = {
  force_creative_status: ['creative_id', 'status'],
  force_creative_purge: ['creative_id'],
  force_account_status: ['account_id', 'status'],
  force_media_buy_status: ['media_buy_id', 'status'],
  force_create_media_buy_arm: ['arm'],
  force_get_products_arm: ['arm'],
  force_get_signals_arm: ['arm'],
  force_task_completion: ['task_id', 'result'],
  force_session_status: ['session_id', 'status'],
  simulate_delivery: ['media_buy_id'],
  simulate_budget_spend: ['spend_percentage'],
  seed_product: ['product_id'],
  seed_pricing_option: ['product_id', 'pricing_option_id'],
  seed_creative: ['creative_id'],
  seed_plan: ['plan_id'],
  seed_media_buy: ['media_buy_id'],
  seed_account: ['account_id'],
  seed_creative_format: ['format_id'],
};

/** The entity a published force scenario targets, when this agent holds none of its kind. */
const ENTITY_OF: Record<string, { param: string; holder: AgentKind }> = {
  force_creative_status: { param: 'creative_id', holder: 'sales' },
  force_creative_purge: { param: 'creative_id', holder: 'sales' },
  force_account_status: { param: 'account_id', holder: 'sales' },
  force_media_buy_status: { param: 'media_buy_id', holder: 'sales' },
  simulate_delivery: { param: 'media_buy_id', holder: 'sales' },
  simulate_budget_spend: { param: 'media_buy_id', holder: 'sales' },
};

// Members spelled out: buyers' SDKs strip what a tool's input schema does not declare.

async function forceAccountStatus(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const accountId = str(p.account_id);
  const status = p.status as string;
  if (!accountId || !(ACCOUNT_STATUSES as readonly string[]).includes(status)) {
    return refuse(
      'INVALID_PARAMS',
      `params.account_id and params.status (one of ${ACCOUNT_STATUSES.join(', ')}) are required`,
    );
  }
  // Only the caller's own (sandbox) accounts: another principal's account does not exist here.
  const { rows } = await ctx.db.query<{ status: string }>(
    `SELECT status FROM ${ctx.schema}.accounts WHERE agent = $1 AND account_id = $2 AND principal_id = $3 FOR UPDATE`,
    [ctx.agent, accountId, ctx.principal!.principal_id],
  );
  const row = rows[0];
  if (!row) return refuse('NOT_FOUND', `no sandbox account ${accountId.slice(0, 100)}`, null);
  if (row.status === 'closed' && status !== 'closed') {
    return refuse('INVALID_TRANSITION', 'a closed account stays closed', row.status);
  }
  await ctx.db.query(
    `UPDATE ${ctx.schema}.accounts SET status = $3, updated_at = now() WHERE agent = $1 AND account_id = $2`,
    [ctx.agent, accountId, status],
  );
  return { success: true, previous_state: row.status, current_state: status };
}

/** Internal creative status `active` is the published `approved`. */
const internalCreative = (s: string) => (s === 'approved' ? 'active' : s);
const wireCreative = (s: string) => (s === 'active' ? 'approved' : s);

async function forceCreativeStatus(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const creativeId = str(p.creative_id);
  const status = p.status as string;
  if (!creativeId || !(CREATIVE_STATUSES as readonly string[]).includes(status)) {
    return refuse(
      'INVALID_PARAMS',
      `params.creative_id and params.status (one of ${CREATIVE_STATUSES.join(', ')}) are required`,
    );
  }
  const { rows } = await ctx.db.query<{ status: string }>(
    `SELECT status FROM ${ctx.schema}.creatives WHERE principal_id = $1 AND creative_id = $2 FOR UPDATE`,
    [ctx.principal!.principal_id, creativeId],
  );
  const row = rows[0];
  if (!row) return refuse('NOT_FOUND', `no sandbox creative ${creativeId.slice(0, 100)}`, null);
  const from = wireCreative(row.status);
  // Review is behind a creative once it left processing; a rejected one is only archived.
  if (
    (status === 'processing' && from !== 'processing') ||
    (from === 'rejected' && !['rejected', 'archived'].includes(status))
  ) {
    return refuse('INVALID_TRANSITION', `a ${from} creative cannot become ${status}`, from);
  }
  await ctx.db.query(
    `UPDATE ${ctx.schema}.creatives SET status = $3, updated_at = now() WHERE principal_id = $1 AND creative_id = $2`,
    [ctx.principal!.principal_id, creativeId, internalCreative(status)],
  );
  return { success: true, previous_state: from, current_state: status };
}

const CHANNELS = ['ctv', 'display', 'audio', 'dooh', 'video'];
const ID = /^[A-Za-z0-9_.:-]{1,100}$/;

/**
 * The seeded product's row, when it is the caller's own (or new). Product ids are global:
 * one held by the catalog or by another principal is never overwritten.
 */
async function ownProduct(ctx: TaskContext, productId: string) {
  const { rows } = await ctx.db.query<{
    custom_principal: string | null;
    pricing_options: unknown[];
  }>(
    `SELECT custom_principal, pricing_options FROM ${ctx.schema}.products WHERE product_id = $1 FOR UPDATE`,
    [productId],
  );
  const row = rows[0];
  if (row && row.custom_principal !== ctx.principal!.principal_id) return 'taken' as const;
  return row ?? null;
}

/**
 * Published product members a fixture may carry that our columns do not model: kept as
 * given and answered on the product (the canonical `format_options`, the creative policy's
 * `accepted_verifiers` / `provenance_required`).
 */
const PUBLISHED_AS_OURS: Record<string, string> = {
  olv: 'video',
  podcast: 'audio',
  streaming_audio: 'audio',
};

const KEPT_FIXTURE_MEMBERS = [
  // The published channels as given (affiliate, ...: ours are five; productChannels).
  'channels',
  'format_options',
  'creative_policy',
  'reporting_capabilities',
  // 3.2: the age intervals a product delivers (brief targeting eligibility, brief-targeting.ts).
  'demographic_targeting',
  // 3.2: the dimensions selectable on packages later (targeting-aware discovery, overlay.ts),
  // the placements a placement_selection names, and the list targeting the product allows
  // (3.2 requires it beside list support; both releases publish all but overlay_support).
  'overlay_support',
  'placements',
  'property_targeting_allowed',
  'collection_targeting_allowed',
  // Storyboard-only (targeting_aware_discovery.yaml:124): which browser families have
  // inventory and the platforms each runs on; read by package-overlay.ts, never answered.
  'browser_inventory',
  // The actions buys of the product allow (the buy's available_actions, views.ts).
  'allowed_actions',
] as const;

/**
 * A fixture's pricing option (inline `pricing_options[]` of seed_product, or
 * seed_pricing_option's), in our stored form: the price is `fixed_price`, the storyboards'
 * older `rate` / `price`, or an auction's `floor_price`. Null with the reason when unusable.
 */
function fixturePricingOption(
  optionId: unknown,
  raw: Record<string, unknown>,
): { option: Record<string, unknown> } | { error: string } {
  if (typeof optionId !== 'string' || !ID.test(optionId)) {
    return { error: 'pricing_option_id (letters, digits, _ . : -) is required' };
  }
  // 3.2's contingent option carries a commission rate instead of any price.
  if (raw.pricing_model === 'revenue_share') {
    const r = revenueShareOption(optionId, raw);
    return 'error' in r ? r : { option: { ...r.option } };
  }
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);
  const fixed = num(raw.fixed_price) ?? num(raw.rate) ?? num(raw.price);
  const floor = num(raw.floor_price);
  if (fixed === null && floor === null) {
    return { error: `${optionId}: fixed_price (or rate, or floor_price) must be a number >= 0` };
  }
  return {
    option: {
      pricing_option_id: optionId,
      pricing_model: typeof raw.pricing_model === 'string' ? raw.pricing_model : 'cpm',
      currency: typeof raw.currency === 'string' ? raw.currency : 'USD',
      ...(fixed !== null ? { fixed_price: fixed } : { floor_price: floor }),
      ...(num(raw.min_spend_per_package) !== null
        ? { min_spend_per_package: num(raw.min_spend_per_package) }
        : {}),
    },
  };
}

/** seed_product's inline `fixture.pricing_options`, or null with the refusal. */
function inlinePricingOptions(
  fixture: Record<string, unknown>,
): { options: Record<string, unknown>[] } | { error: string } {
  const raw = fixture.pricing_options;
  if (raw === undefined) return { options: [] };
  if (!Array.isArray(raw) || raw.length > 50) {
    return { error: 'params.fixture.pricing_options must be an array (at most 50)' };
  }
  const options: Record<string, unknown>[] = [];
  for (const [i, o] of raw.entries()) {
    if (!o || typeof o !== 'object' || Array.isArray(o)) {
      return { error: `params.fixture.pricing_options[${i}] must be an object` };
    }
    const r = fixturePricingOption((o as Record<string, unknown>).pricing_option_id, o);
    if ('error' in r) return { error: `params.fixture.pricing_options[${i}]: ${r.error}` };
    options.push(r.option);
  }
  return { options };
}

/** A product visible to the caller only (`custom_principal`), as the fixture describes it. */
async function seedProduct(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const productId = str(p.product_id);
  const fixture = (p.fixture ?? {}) as Record<string, unknown>;
  if (!productId || !ID.test(productId)) {
    return refuse('INVALID_PARAMS', 'params.product_id (letters, digits, _ . : -) is required');
  }
  if (typeof fixture !== 'object' || Array.isArray(fixture)) {
    return refuse('INVALID_PARAMS', 'params.fixture must be an object');
  }
  const inline = inlinePricingOptions(fixture);
  if ('error' in inline) return refuse('INVALID_PARAMS', inline.error);
  const own = await ownProduct(ctx, productId);
  if (own === 'taken') {
    return refuse('FORBIDDEN', `product ${productId} belongs to the catalog or another principal`);
  }
  // The fixture's own options replace the product's; without any, a re-seed keeps those
  // seed_pricing_option added.
  const pricingOptions = inline.options.length > 0 ? inline.options : (own?.pricing_options ?? []);
  const channels = Array.isArray(fixture.channels) ? (fixture.channels as unknown[]) : [];
  // The published channels name ours differently (olv is our video; podcast and
  // streaming_audio our audio): a seeded olv product is found by a channels: ['olv'] filter.
  const ours = channels.map((c) => PUBLISHED_AS_OURS[String(c)] ?? c);
  const channel = CHANNELS.find((c) => ours.includes(c)) ?? 'display';
  const deliveryType = fixture.delivery_type === 'non_guaranteed' ? 'non_guaranteed' : 'guaranteed';
  const formatIds = (Array.isArray(fixture.format_ids) ? (fixture.format_ids as unknown[]) : [])
    .map((f) => (typeof f === 'string' ? f : (f as { id?: unknown })?.id))
    .filter((id): id is string => typeof id === 'string');
  const name = typeof fixture.name === 'string' ? fixture.name.slice(0, 200) : productId;
  const kept = Object.fromEntries(
    KEPT_FIXTURE_MEMBERS.filter((k) => fixture[k] !== undefined).map((k) => [k, fixture[k]]),
  );
  // A configured product's tombstone (3.2, is_custom with a past expires_at): create answers
  // PRODUCT_EXPIRED for it, as for a configured offer that lapsed.
  const expires = fixture.is_custom === true ? fixture.expires_at : undefined;
  if (expires !== undefined && (typeof expires !== 'string' || Number.isNaN(Date.parse(expires)))) {
    return refuse('INVALID_PARAMS', 'params.fixture.expires_at must be an RFC 3339 date-time');
  }
  await ctx.db.query(
    `INSERT INTO ${ctx.schema}.products (product_id, name, description, channel, delivery_type,
       is_standard, custom_principal, format_ids, pricing_options, targeting, keywords, fixture,
       expires_at)
     VALUES ($1, $2, $3, $4, $5, false, $6, $7, $8, '{}', $9, $10, $11)
     ON CONFLICT (product_id) DO UPDATE SET name = EXCLUDED.name, description = EXCLUDED.description,
       channel = EXCLUDED.channel, delivery_type = EXCLUDED.delivery_type,
       format_ids = EXCLUDED.format_ids, keywords = EXCLUDED.keywords, fixture = EXCLUDED.fixture,
       pricing_options = EXCLUDED.pricing_options, expires_at = EXCLUDED.expires_at`,
    [
      productId,
      name,
      typeof fixture.description === 'string' ? fixture.description.slice(0, 1000) : name,
      channel,
      deliveryType,
      ctx.principal!.principal_id,
      JSON.stringify(formatIds.length > 0 ? formatIds : ['display_300x250']),
      JSON.stringify(pricingOptions),
      productId
        .split(/[^A-Za-z0-9]+/)
        .filter(Boolean)
        .concat(channel),
      JSON.stringify(kept),
      expires === undefined ? null : new Date(expires),
    ],
  );
  return { success: true, message: `product ${productId} seeded (visible to you only)` };
}

/** A pricing option on one of the caller's seeded products (replaces one with its id). */
async function seedPricingOption(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const productId = str(p.product_id);
  const optionId = str(p.pricing_option_id);
  const fixture = (p.fixture ?? {}) as Record<string, unknown>;
  if (!productId || !optionId || !ID.test(optionId)) {
    return refuse('INVALID_PARAMS', 'params.product_id and params.pricing_option_id are required');
  }
  if (typeof fixture !== 'object' || fixture === null || Array.isArray(fixture)) {
    return refuse('INVALID_PARAMS', 'params.fixture must be an object');
  }
  const parsed = fixturePricingOption(optionId, fixture);
  if ('error' in parsed) return refuse('INVALID_PARAMS', `params.fixture: ${parsed.error}`);
  const own = await ownProduct(ctx, productId);
  if (own === 'taken') {
    return refuse('FORBIDDEN', `product ${productId} belongs to the catalog or another principal`);
  }
  if (!own) return refuse('NOT_FOUND', `no seeded product ${productId}; seed_product first`, null);
  const option = parsed.option;
  const options = (own.pricing_options as Array<{ pricing_option_id?: unknown }>).filter(
    (o) => o.pricing_option_id !== optionId,
  );
  await ctx.db.query(
    `UPDATE ${ctx.schema}.products SET pricing_options = $2 WHERE product_id = $1`,
    [productId, JSON.stringify([...options, option])],
  );
  return { success: true, message: `pricing option ${optionId} seeded on ${productId}` };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A creative fixture's format, as stored (storedFormatRef's forms): its legacy `format_id`
 * as given (an agent's URL and id), or its canonical `format_kind` with the
 * `format_option_ref` it names; neither is our display_300x250. The format type follows a
 * canonical's channel. A string when malformed.
 */
function fixtureFormatRef(
  fixture: Record<string, unknown>,
  agentUrl: string,
): { stored: Record<string, unknown>; type: string } | string {
  const manifest = isPlainObject(fixture.manifest) ? fixture.manifest : {};
  const kind = fixture.format_kind ?? manifest.format_kind;
  const fid = fixture.format_id ?? manifest.format_id;
  if (kind !== undefined) {
    if (typeof kind !== 'string' || !/^[a-z][a-z0-9_]{0,63}$/.test(kind)) {
      return 'params.fixture.format_kind must be a canonical format kind (image, video_hosted...)';
    }
    const option = fixture.format_option_ref ?? manifest.format_option_ref;
    if (option !== undefined && !isPlainObject(option)) {
      return 'params.fixture.format_option_ref must be an object';
    }
    const type = kind.startsWith('video')
      ? 'video'
      : kind.startsWith('audio')
        ? 'audio'
        : 'display';
    return {
      stored: storedFormatRef({ format_kind: kind, format_option_ref: option }) as Record<
        string,
        unknown
      >,
      type,
    };
  }
  if (fid === undefined)
    return { stored: { agent_url: agentUrl, id: 'display_300x250' }, type: 'display' };
  // A format id without its agent is one of ours (the storyboards' fixtures name only the id).
  if (
    !isPlainObject(fid) ||
    (fid.agent_url !== undefined && typeof fid.agent_url !== 'string') ||
    typeof fid.id !== 'string' ||
    fid.id === '' ||
    fid.id.length > 255
  ) {
    return 'params.fixture.format_id must be {agent_url, id}';
  }
  return { stored: { agent_url: fid.agent_url ?? agentUrl, id: fid.id }, type: 'display' };
}

/** A library creative of the caller's, as the fixture describes it (upsert). */
async function seedCreative(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const creativeId = str(p.creative_id);
  const fixture = (p.fixture ?? {}) as Record<string, unknown>;
  if (!creativeId || creativeId.length > 255) {
    return refuse('INVALID_PARAMS', 'params.creative_id (1-255 characters) is required');
  }
  if (typeof fixture !== 'object' || Array.isArray(fixture)) {
    return refuse('INVALID_PARAMS', 'params.fixture must be an object');
  }
  const status = (fixture.status as string | undefined) ?? 'approved';
  if (!(CREATIVE_STATUSES as readonly string[]).includes(status)) {
    return refuse(
      'INVALID_PARAMS',
      `params.fixture.status must be one of ${CREATIVE_STATUSES.join(', ')}`,
    );
  }
  const ref = fixtureFormatRef(fixture, ctx.settings.urls.creative);
  if (typeof ref === 'string') return refuse('INVALID_PARAMS', ref);
  // The manifest's assets (the 3.2 fixtures nest them under `manifest`), else the fixture's.
  const manifest = fixture.manifest ?? {};
  const assets = fixture.assets ?? (manifest as { assets?: unknown }).assets ?? {};
  if (!isPlainObject(manifest) || !isPlainObject(assets)) {
    return refuse('INVALID_PARAMS', 'params.fixture.manifest and its assets must be objects');
  }
  // The creative agent seeds its own library, which stores the published status words.
  const library = ctx.agent === 'creative';
  const table = library ? 'creative_library' : 'creatives';
  await ctx.db.query(
    `INSERT INTO ${ctx.schema}.${table} (principal_id, creative_id, name, format_id, format_type, assets, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (principal_id, creative_id) DO UPDATE SET name = EXCLUDED.name,
       format_id = EXCLUDED.format_id, format_type = EXCLUDED.format_type, assets = EXCLUDED.assets, status = EXCLUDED.status,
       updated_at = now()`,
    [
      ctx.principal!.principal_id,
      creativeId,
      typeof fixture.name === 'string' ? fixture.name.slice(0, 500) : creativeId,
      JSON.stringify(ref.stored),
      ref.type,
      JSON.stringify(assets),
      library ? status : internalCreative(status),
    ],
  );
  return { success: true, message: `creative ${creativeId} seeded` };
}

async function seedCreativeFormat(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const formatId = str(p.format_id);
  const fixture = (p.fixture ?? {}) as Record<string, unknown>;
  if (!formatId || !/^[A-Za-z0-9_.-]{1,100}$/.test(formatId)) {
    return refuse('INVALID_PARAMS', 'params.format_id (letters, digits, _ . -) is required');
  }
  if (typeof fixture !== 'object' || Array.isArray(fixture)) {
    return refuse('INVALID_PARAMS', 'params.fixture must be an object');
  }
  const type = fixture.type ?? 'display';
  if (!(FORMAT_TYPES as readonly unknown[]).includes(type)) {
    return refuse(
      'INVALID_PARAMS',
      `params.fixture.type must be one of ${FORMAT_TYPES.join(', ')}`,
    );
  }
  const name = typeof fixture.name === 'string' ? fixture.name.slice(0, 200) : formatId;
  await putFixture(
    ctx.db,
    ctx.schema,
    {
      agent: ctx.agent,
      principalId: ctx.principal!.principal_id,
      // Formats belong to the session: the harness seeds them under its own account
      // reference and lists them under the storyboard's.
      account: SESSION,
      kind: 'creative_format',
      id: formatId,
    },
    { name, type },
  );
  return { success: true, message: `format ${formatId} seeded for this sandbox account` };
}

async function control(req: ControllerRequest, ctx: TaskContext) {
  const agent = ctx.agent;
  const scenarios = CONTROLLER_SCENARIOS[agent];
  if (!(await isSandboxPrincipal(ctx.db, ctx.schema, agent, ctx.principal!.principal_id))) {
    return refuse('FORBIDDEN', 'the test controller answers sandbox accounts only');
  }
  if (req.scenario === 'list_scenarios') return { success: true, scenarios: [...scenarios] };
  const required = REQUIRED_PARAMS[req.scenario];
  const missing = (required ?? []).filter((k) => {
    const v = (req.params ?? {})[k];
    return v === undefined || v === null || v === '';
  });
  if (missing.length > 0) {
    return refuse('INVALID_PARAMS', `${req.scenario} needs params.${missing.join(', params.')}`);
  }
  const entity = ENTITY_OF[req.scenario];
  if (!scenarios.includes(req.scenario) && entity && entity.holder !== agent) {
    const id = String((req.params ?? {})[entity.param]).slice(0, 100);
    return refuse(
      'NOT_FOUND',
      `the ${agent} agent holds no ${entity.param.replace('_id', '')} ${id}`,
      null,
    );
  }
  if (!scenarios.includes(req.scenario)) {
    return refuse(
      'UNKNOWN_SCENARIO',
      `scenario ${req.scenario.slice(0, 100)} is not supported; list_scenarios names the supported ones`,
    );
  }
  // The seller's own record decides (the caller is a sandbox principal, checked above); an
  // account the request names must still assert sandbox: true. Protocol 3.0.6 runners send
  // no account on some calls, so its absence is not refused.
  if (req.account !== undefined && req.account.sandbox !== true) {
    return refuse('INVALID_PARAMS', 'the account must assert sandbox: true');
  }
  if (
    agent !== 'sales' &&
    (req.scenario === 'seed_product' || req.scenario === 'seed_pricing_option')
  ) {
    return {
      success: true,
      message: `the ${agent} agent has no product catalog: the fixture is acknowledged, nothing changes`,
    };
  }
  switch (req.scenario) {
    case 'force_account_status':
      return forceAccountStatus(req, ctx);
    case 'force_creative_status':
      return forceCreativeStatus(req, ctx);
    case 'seed_creative':
      return seedCreative(req, ctx);
    case 'seed_product':
      return seedProduct(req, ctx);
    case 'seed_pricing_option':
      return seedPricingOption(req, ctx);
    case 'seed_media_buy':
      return seedMediaBuy(req, ctx);
    case 'simulate_delivery':
      return simulateDelivery(req, ctx);
    case 'force_media_buy_status':
      return forceMediaBuyStatus(req, ctx);
    case 'force_create_media_buy_arm':
      return forceCreateMediaBuyArm(req, ctx);
    case 'force_get_products_arm':
      return forceGetProductsArm(req, ctx);
    case 'force_get_signals_arm':
      return forceGetSignalsArm(req, ctx);
    case 'force_task_completion':
      return forceTaskCompletion(req, ctx);
    case 'simulate_budget_spend':
      return simulateBudgetSpend(req, ctx);
    case 'seed_account':
      return seedAccount(req, ctx);
    case 'force_upstream_unavailable':
      return forceUpstreamUnavailable(req, ctx);
    default:
      return seedCreativeFormat(req, ctx);
  }
}

/** Registers the controller on every agent that has scenarios (only when switched on). */
export function registerTestController(registry: TaskRegistry): void {
  for (const [agent, scenarios] of Object.entries(CONTROLLER_SCENARIOS)) {
    if (scenarios.length === 0) continue;
    registry.add({
      name: 'comply_test_controller',
      description: 'Sandbox only: force task, media-buy and creative states for compliance tests.',
      agent: agent as AgentKind,
      schema: ControllerSchema,
      auth: { tier: 'authenticated' },
      expectedDuration: '1s',
      mode: 'sync',
      mutating: true,
      errorShape: 'single',
      handle: async (params, ctx) => ({ status: 'completed', body: await control(params, ctx) }),
    });
  }
}
