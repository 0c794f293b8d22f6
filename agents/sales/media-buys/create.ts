/**
 * create_media_buy: checks the request against the catalog, stores the buy and its
 * packages, registers its webhook channels, and either answers with the buy (no approval
 * needed) or as the published submitted task envelope (`status: submitted`, `task_id`;
 * the buy lands on the task's completion result). The background steps walk the task
 * from review to approval; a canceled task cancels the pending buy.
 */
import { ReportingWebhookSchema } from '../../../shared/envelope/channel-config.js';
import type { PoolClient } from '../../../shared/infra/pg.js';
import { taskError } from '../../runtime/errors.js';
import type { Advance, HandlerOutcome, StoredTask, TaskContext } from '../../runtime/types.js';
import { fieldPath } from '../../runtime/validation.js';
import { isSandboxPrincipal, takeForcedCreateArm } from '../../sandbox/fixtures.js';
import { productRow, type ProductRow } from '../catalog/catalog.js';
import { assignCreatives } from '../creatives/assignments.js';
import { loadBuy, newMediaBuyId, newPackageId, type BuyRow } from './records.js';
import {
  endInstant,
  packageCreativeIds,
  startInstant,
  type CreateMediaBuyRequest,
  type PackageRequest,
} from './requests.js';
import { checkMeasurementTerms } from './terms.js';
import { buyResponse } from './views.js';
import { checkPackageOverlay } from '../catalog/package-overlay.js';
import {
  clearingRate,
  isAuction,
  isContingent,
  minimumBudget,
  type PricingOption,
} from '../catalog/pricing.js';

/** `reporting_webhook` accepted for the buy, or INVALID_REQUEST naming the member. */
export function checkReportingWebhook(
  value: unknown,
  products: ProductRow[],
): Record<string, unknown> {
  const parsed = ReportingWebhookSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = fieldPath(['reporting_webhook', ...issue.path]);
    throw taskError('INVALID_REQUEST', `${field}: ${issue.message}`, { field });
  }
  const freq = parsed.data.reporting_frequency;
  const unsupported = products.find((p) => !p.reporting_frequencies.includes(freq));
  if (unsupported) {
    throw taskError(
      'INVALID_REQUEST',
      `reporting_frequency ${freq} is not offered by product ${unsupported.product_id}`,
      { field: 'reporting_webhook.reporting_frequency' },
    );
  }
  return value as Record<string, unknown>;
}

/**
 * The request's `idempotency_key`, echoed on the answer: the protocol's idempotency
 * storyboard reads the key the buy was made under from the response (the published
 * responses allow the member).
 */
export function echoKey(params: { idempotency_key?: string | undefined }) {
  return params.idempotency_key !== undefined ? { idempotency_key: params.idempotency_key } : {};
}

/**
 * The published input-required payload of create_media_buy
 * (create-media-buy-async-response-input-required.json: `reason` from its enum).
 */
const INPUT_REQUIRED = { reason: 'APPROVAL_REQUIRED' } as const;

/** How far in the past a start_time may lie and still be accepted as given. */
const PAST_START_GRACE_MS = 24 * 3_600_000;

export async function productsById(
  db: Pick<PoolClient, 'query'>,
  schema: string,
  ids: string[],
): Promise<ProductRow[]> {
  const { rows } = await db.query<ProductRow>(
    `SELECT * FROM ${schema}.products WHERE product_id = ANY($1)`,
    [ids],
  );
  return rows.map(productRow);
}

/** Account, brand and budget checks of the request as a whole. */
async function checkBuyer(params: CreateMediaBuyRequest, ctx: TaskContext) {
  const principal = ctx.principal!;
  const brandManifest =
    params.brand_manifest ?? (params.brand ? { url: `https://${params.brand.domain}` } : null);
  if (!brandManifest) {
    throw taskError(
      'VALIDATION_ERROR',
      'brand is required ({domain}; or the older brand_manifest)',
      {
        field: 'brand',
      },
    );
  }
  if (params.account && 'account_id' in params.account) {
    const accountId = String(params.account.account_id);
    const { rowCount } = await ctx.db.query(
      `SELECT 1 FROM ${ctx.schema}.accounts WHERE agent = 'sales' AND account_id = $1 AND principal_id = $2`,
      [accountId, principal.principal_id],
    );
    if (!rowCount) {
      throw taskError(
        'ACCOUNT_NOT_FOUND',
        `no account ${accountId.slice(0, 80)} for this principal`,
        {
          field: 'account.account_id',
        },
      );
    }
  }
  if (params.total_budget) {
    const sum = params.packages.reduce((a, p) => a + p.budget, 0);
    if (Math.abs(sum - params.total_budget.amount) > 0.005) {
      throw taskError(
        'VALIDATION_ERROR',
        `package budgets add up to ${sum}, not total_budget.amount`,
        {
          field: 'total_budget.amount',
        },
      );
    }
    if (params.total_budget.currency !== 'USD') {
      throw taskError('VALIDATION_ERROR', 'this seller trades in USD', {
        field: 'total_budget.currency',
      });
    }
  }
  if (params.buyer_ref !== undefined) {
    const dup = await ctx.db.query(
      `SELECT 1 FROM ${ctx.schema}.media_buys WHERE principal_id = $1 AND buyer_ref = $2`,
      [principal.principal_id, params.buyer_ref],
    );
    if (dup.rowCount) {
      throw taskError(
        'VALIDATION_ERROR',
        'buyer_ref is already used by another media buy of yours',
        {
          field: 'buyer_ref',
        },
      );
    }
  }
  return brandManifest;
}

interface PlannedPackage {
  pkg: PackageRequest;
  option: PricingOption;
  rate: number;
  index: number;
}

/** The measurement windows a (seeded) product declares in its reporting capabilities. */
function productWindows(product: ProductRow): string[] {
  const reporting = product.fixture?.reporting_capabilities as
    { measurement_windows?: unknown } | undefined;
  const windows = Array.isArray(reporting?.measurement_windows)
    ? (reporting.measurement_windows as Array<{ window_id?: unknown }>)
    : [];
  return windows.flatMap((w) => (typeof w?.window_id === 'string' ? [w.window_id] : []));
}

/**
 * Each package against its product and pricing option: the rate it will pay. `bidRequired`:
 * the spec's digest requires a bid on an auction package (SVC_BRAND=svc); the published
 * protocol makes `bid_price` optional (3.1.19) and deprecated (3.2), a package without one
 * bidding automatically (clearing at the floor), so under adcp its absence is no refusal.
 * `pinned32`: the request is pinned to 3.2, the only release with revenue-share pricing.
 */
function planPackages(
  params: CreateMediaBuyRequest,
  products: ProductRow[],
  principalId: string,
  { bidRequired, pinned32 }: { bidRequired: boolean; pinned32: boolean },
): PlannedPackage[] {
  const byId = new Map(products.map((p) => [p.product_id, p]));
  const refs = new Set<string>();
  return params.packages.map((pkg, i) => {
    if (pkg.buyer_ref !== undefined) {
      if (refs.has(pkg.buyer_ref)) {
        throw taskError('VALIDATION_ERROR', `packages[${i}].buyer_ref repeats another package's`, {
          field: `packages[${i}].buyer_ref`,
        });
      }
      refs.add(pkg.buyer_ref);
    }
    const product = byId.get(pkg.product_id);
    if (
      !product ||
      (product.custom_principal !== null && product.custom_principal !== principalId)
    ) {
      throw taskError('PRODUCT_NOT_FOUND', `no product ${pkg.product_id.slice(0, 80)}`, {
        field: `packages[${i}].product_id`,
      });
    }
    // A revenue share is offered only to a 3.2 pin, as discovery shows it (catalog.ts).
    const option = product.pricing_options.find(
      (o) => o.pricing_option_id === pkg.pricing_option_id && (pinned32 || !isContingent(o)),
    );
    if (!option) {
      throw taskError(
        'VALIDATION_ERROR',
        `pricing option ${pkg.pricing_option_id.slice(0, 80)} is not offered by ${product.product_id}`,
        { field: `packages[${i}].pricing_option_id` },
      );
    }
    // The terms are the product's: refused before the package's own bid and budget.
    if (pkg.measurement_terms) {
      checkMeasurementTerms(pkg.measurement_terms, i, productWindows(product));
    }
    // Revenue share is paid on measured outcomes: there is nothing to bid (3.2 pricing-option).
    if (isContingent(option) && pkg.bid_price !== undefined) {
      throw taskError(
        'VALIDATION_ERROR',
        'bid_price does not apply to revenue_share pricing (spend is the commission on settled value)',
        { field: `packages[${i}].bid_price` },
      );
    }
    if (isAuction(option)) {
      if (pkg.bid_price === undefined && bidRequired) {
        throw taskError('VALIDATION_ERROR', 'bid_price is required for auction pricing', {
          field: `packages[${i}].bid_price`,
        });
      }
      if (pkg.bid_price !== undefined && pkg.bid_price < (option.floor_price ?? 0)) {
        throw taskError(
          'VALIDATION_ERROR',
          `bid_price must be at least the floor ${option.floor_price}`,
          {
            field: `packages[${i}].bid_price`,
          },
        );
      }
    }
    const minimum = minimumBudget(option);
    if (pkg.budget < minimum) {
      throw taskError(
        'VALIDATION_ERROR',
        `budget must be at least ${minimum} for this pricing option`,
        {
          field: `packages[${i}].budget`,
        },
      );
    }
    // A restated overlay applies exactly or is refused (3.2 core/targeting.json).
    if (pkg.targeting_overlay !== undefined) {
      checkPackageOverlay(product, pkg.targeting_overlay, `packages[${i}].targeting_overlay`);
    }
    // A configured product's package books the targeting bound at discovery unless the
    // buyer restates one (3.2: selecting the product accepts its targeting).
    const booked =
      pkg.targeting_overlay === undefined && product.bound_targeting
        ? { ...pkg, targeting_overlay: product.bound_targeting }
        : pkg;
    return { pkg: booked, option, rate: clearingRate(option, pkg.bid_price), index: i };
  });
}

/**
 * A configured product of the caller's past its `expires_at` (3.2 targeting-aware
 * discovery): PRODUCT_EXPIRED, so the buyer re-runs get_products. Another principal's
 * stays PRODUCT_NOT_FOUND (planPackages), as the published product says.
 */
function refuseExpired(
  params: CreateMediaBuyRequest,
  products: ProductRow[],
  principalId: string,
  now: Date,
): void {
  params.packages.forEach((pkg, i) => {
    const p = products.find((x) => x.product_id === pkg.product_id);
    if (!p?.expires_at || p.custom_principal !== principalId) return;
    if (p.expires_at.getTime() <= now.getTime()) {
      throw taskError(
        'PRODUCT_EXPIRED',
        `product ${p.product_id} expired; run get_products again`,
        {
          field: `packages[${i}].product_id`,
        },
      );
    }
  });
}

/**
 * The request against the catalog and the clock. Order of refusals: what the request says
 * of itself (reversed dates), then what it names (an unknown product, terms, bids), then
 * what depends on the clock (a flight already over, a past start).
 */
async function checkRequest(params: CreateMediaBuyRequest, ctx: TaskContext, now: Date) {
  const s = ctx.schema;
  const startAt = startInstant(params.start_time, now);
  const endAt = endInstant(params.end_time);
  if (!(endAt.getTime() > startAt.getTime())) {
    throw taskError('VALIDATION_ERROR', 'end_time must be after start_time', { field: 'end_time' });
  }
  const products = await productsById(
    ctx.db,
    s,
    params.packages.map((p) => p.product_id),
  );
  refuseExpired(params, products, ctx.principal!.principal_id, now);
  const planned = planPackages(params, products, ctx.principal!.principal_id, {
    bidRequired: ctx.settings.profile.brand !== 'adcp',
    pinned32: ctx.request.release === '3.2',
  });
  if (endAt.getTime() <= now.getTime()) {
    throw taskError('VALIDATION_ERROR', 'end_time must be in the future', { field: 'end_time' });
  }
  // A past start is refused, not silently kept or moved (the protocol allows either
  // refusing with INVALID_REQUEST or adjusting with notice); a start earlier today (a
  // date-only start reads as midnight UTC) or a little clock skew stays accepted.
  if (startAt.getTime() < now.getTime() - PAST_START_GRACE_MS) {
    throw taskError(
      'INVALID_REQUEST',
      'start_time is in the past; send "asap" or a time from now on',
      { field: 'start_time' },
    );
  }
  const reporting =
    params.reporting_webhook === undefined
      ? null
      : checkReportingWebhook(params.reporting_webhook, products);
  return { startAt, endAt, products, planned, reporting };
}

/** Whether the buy waits for the seller (submitted) or is confirmed at once. */
async function reviewPath(params: CreateMediaBuyRequest, ctx: TaskContext) {
  const s = ctx.schema;
  const principal = ctx.principal!;
  // A sandbox account (a request naming an account of a sandbox principal, test controller
  // on) has no human review: its buys are confirmed at once, as the protocol's compliance
  // storyboards expect; the controller's forced transitions stand in for the seller.
  const sandboxAccount =
    params.account !== undefined &&
    ctx.settings.testController &&
    (await isSandboxPrincipal(ctx.db, s, 'sales', principal.principal_id));
  // The controller may have forced this sandbox account's next create into the submitted
  // arm (force_create_media_buy_arm): the buy then waits like one under review.
  const forced = sandboxAccount
    ? await takeForcedCreateArm(ctx.db, s, principal.principal_id)
    : null;
  const needsApproval = forced !== null || (ctx.settings.approval !== 'never' && !sandboxAccount);
  return { needsApproval, forced };
}

/** The buy's packages (in request order) and the creatives each names. */
async function insertPackages(
  ctx: TaskContext,
  mediaBuyId: string,
  planned: PlannedPackage[],
): Promise<void> {
  const s = ctx.schema;
  for (const { pkg, option, rate, index } of planned) {
    const packageId = newPackageId();
    await ctx.db.query(
      `INSERT INTO ${s}.packages (package_id, media_buy_id, buyer_ref, product_id, pricing_option_id,
         pricing_model, rate, budget, bid_price, targeting_overlay, position, paused,
         measurement_terms)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)`,
      [
        packageId,
        mediaBuyId,
        pkg.buyer_ref ?? null,
        pkg.product_id,
        pkg.pricing_option_id,
        option.pricing_model,
        rate,
        pkg.budget,
        pkg.bid_price ?? null,
        pkg.targeting_overlay ?? null,
        index,
        pkg.paused ?? false,
        pkg.measurement_terms ?? null,
      ],
    );
    const creativeIds = packageCreativeIds(pkg);
    if (creativeIds.length > 0) {
      await assignCreatives(ctx, packageId, creativeIds);
    }
  }
}

export async function createMediaBuy(
  params: CreateMediaBuyRequest,
  ctx: TaskContext,
): Promise<HandlerOutcome> {
  const s = ctx.schema;
  const principal = ctx.principal!;
  const now = ctx.clock.now();
  const brandManifest = await checkBuyer(params, ctx);
  const { startAt, endAt, planned, reporting } = await checkRequest(params, ctx, now);
  const { needsApproval, forced } = await reviewPath(params, ctx);
  const taskId = forced?.arm === 'submitted' ? forced.task_id : ctx.taskId;
  const held = params.paused === true;
  const mediaBuyId = newMediaBuyId();
  const startTime =
    typeof params.start_time === 'string'
      ? params.start_time === 'asap'
        ? { type: 'asap' }
        : { type: 'scheduled', datetime: startAt.toISOString() }
      : params.start_time;
  await ctx.db.query(
    `INSERT INTO ${s}.media_buys (media_buy_id, principal_id, buyer_ref, status, brand_manifest,
       start_time, start_at, end_at, push_notification_config, reporting_webhook, context, task_id,
       accrued_until, approved_at, held, went_live)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$15 AND NOT $16)`,
    [
      mediaBuyId,
      principal.principal_id,
      params.buyer_ref ?? null,
      needsApproval ? 'pending' : held ? 'paused' : 'active',
      brandManifest,
      startTime,
      startAt,
      endAt,
      ctx.request.pushNotificationConfig ?? null,
      reporting,
      ctx.request.context ?? null,
      needsApproval ? taskId : null,
      needsApproval ? null : now,
      needsApproval ? null : now,
      held,
      needsApproval,
    ],
  );
  await insertPackages(ctx, mediaBuyId, planned);
  if (ctx.request.pushNotificationConfig || reporting) {
    await ctx.notifications.mediaBuyChannelsConfigured({
      mediaBuyId,
      principalId: principal.principal_id,
      ...(ctx.request.pushNotificationConfig
        ? { pushNotificationConfig: ctx.request.pushNotificationConfig }
        : {}),
      ...(reporting ? { reportingWebhook: reporting } : {}),
      flightStart: startAt.toISOString(),
      flightEnd: endAt.toISOString(),
      client: ctx.db,
    });
  }
  if (!needsApproval) {
    const buy = await loadBuy(ctx.db, s, mediaBuyId, principal.principal_id);
    return {
      status: 'completed',
      body: {
        ...(await buyResponse(ctx.db, s, buy, now, ctx.request.release)),
        ...echoKey(params),
        // Published 3.2 success: the executed proposal, echoed.
        ...(params.proposal_id !== undefined ? { proposal_id: params.proposal_id } : {}),
      },
    };
  }
  // The controller's input-required arm: the buy waits for approval from the first answer.
  if (forced?.arm === 'input-required') {
    const message = forced.message ?? 'media buy received; it awaits seller approval';
    return {
      status: 'input-required',
      body: { message, ...INPUT_REQUIRED, ...echoKey(params) },
      async: {
        runAfterMs: null,
        resourceId: mediaBuyId,
        state: { phase: 'approval' },
        result: { ...INPUT_REQUIRED },
        message,
      },
    };
  }
  // The published submitted envelope: no media_buy_id or packages until the task completes.
  return {
    status: 'submitted',
    body: {
      message: forced?.message ?? 'media buy received; it is pending seller approval',
      ...echoKey(params),
    },
    async: {
      runAfterMs: ctx.settings.taskStepMs,
      resourceId: mediaBuyId,
      state: { phase: 'review' },
      ...(forced ? { taskId } : {}),
    },
  };
}

/** Approval: the buy goes active (or paused, when created with `paused: true`). */
export async function activateBuy(
  db: PoolClient,
  schema: string,
  buy: BuyRow,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE ${schema}.media_buys SET status = CASE WHEN held THEN 'paused' ELSE 'active' END,
       went_live = held,
       approved_at = $2, accrued_until = $2, revision = revision + 1, updated_at = now()
      WHERE media_buy_id = $1`,
    [buy.media_buy_id, now],
  );
}

/** Background steps of create_media_buy: review (working), then approval. */
export async function advanceCreate(task: StoredTask, ctx: TaskContext): Promise<Advance | null> {
  const s = ctx.schema;
  const buy = await loadBuy(ctx.db, s, task.resource_id!, null, { forUpdate: true });
  if (buy.status === 'canceled') {
    return {
      status: 'canceled',
      result: await buyResponse(ctx.db, s, buy, ctx.clock.now()),
      message: 'media buy canceled',
    };
  }
  if (buy.status !== 'pending') {
    return { status: 'completed', result: await buyResponse(ctx.db, s, buy, ctx.clock.now()) };
  }
  const approval = ctx.settings.approval;
  if (task.status === 'submitted') {
    const wait = typeof approval === 'object' ? approval.autoAfterSeconds * 1000 : null;
    return {
      status: 'working',
      result: { percentage: 50, current_step: 'inventory_review', total_steps: 2, step_number: 1 },
      message: 'checking inventory and policy',
      runAfterMs: wait,
    };
  }
  if (typeof approval === 'object') {
    await activateBuy(ctx.db, s, buy, ctx.clock.now());
    const fresh = await loadBuy(ctx.db, s, buy.media_buy_id, null);
    return {
      status: 'completed',
      result: await buyResponse(ctx.db, s, fresh, ctx.clock.now()),
      message: 'media buy approved',
    };
  }
  return {
    status: 'input-required',
    result: { ...INPUT_REQUIRED, errors: [] },
    message: 'awaiting seller approval',
  };
}

/** The buyer canceled the create task: a still-pending buy is canceled with it. */
export async function cancelCreate(task: StoredTask, ctx: TaskContext): Promise<void> {
  if (!task.resource_id) return;
  const buy = await loadBuy(ctx.db, ctx.schema, task.resource_id, null, { forUpdate: true });
  if (buy.status !== 'pending') return;
  await ctx.db.query(
    `UPDATE ${ctx.schema}.media_buys SET status = 'canceled', revision = revision + 1,
       updated_at = now() WHERE media_buy_id = $1`,
    [buy.media_buy_id],
  );
  await ctx.notifications.mediaBuyTerminal({
    mediaBuyId: buy.media_buy_id,
    principalId: buy.principal_id,
    status: 'canceled',
    client: ctx.db,
  });
}
