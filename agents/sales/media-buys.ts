/**
 * Media buys: create_media_buy (pending approval -> active, async with a task), update,
 * get_media_buys (impairments, webhook_activity), the operator's approve/reject, and the
 * channel registrations handed to the sender.
 */
import { z } from 'zod';
import { ReportingWebhookSchema } from '../../shared/envelope/channel-config.js';
import { withTransaction, type Pool, type PoolClient } from '../../shared/infra/pg.js';
import type { AgentClock } from '../runtime/clock.js';
import { taskError } from '../runtime/errors.js';
import type { TaskRegistry } from '../runtime/registry.js';
import type { TaskStore } from '../runtime/task-store.js';
import type { Advance, AgentNotifications, StoredTask, TaskContext } from '../runtime/types.js';
import {
  BrandManifestSchema,
  DateSchema,
  DateTimeSchema,
  fieldPath,
} from '../runtime/validation.js';
import type { ProductRow } from './catalog.js';
import { assignCreatives } from './creatives.js';
import { accrueBuy } from './delivery-simulator.js';
import {
  assignmentsOf,
  loadBuy,
  loadPackages,
  lockBuyAndTask,
  newMediaBuyId,
  newPackageId,
  packageView,
  TERMINAL_BUY,
  withoutCredentials,
  type BuyRow,
} from './media-buy-records.js';

const positive = (what: string) =>
  z.number({ error: `${what} must be a number` }).refine((n) => n > 0 && Number.isFinite(n), {
    message: `${what} must be greater than 0`,
  });

const PackageSchema = z.looseObject({
  buyer_ref: z.string().min(1).max(255),
  product_id: z.string().min(1).max(255),
  pricing_option_id: z.string().min(1).max(255),
  budget: positive('budget'),
  bid_price: positive('bid_price').optional(),
  targeting_overlay: z.record(z.string(), z.unknown()).optional(),
  creative_ids: z.array(z.string().min(1).max(255)).max(100).optional(),
  creatives: z
    .array(z.looseObject({ creative_id: z.string().min(1).max(255) }))
    .max(100)
    .optional(),
});

const StartTimeSchema = z.union(
  [
    z.looseObject({ type: z.literal('asap') }),
    z.looseObject({ type: z.literal('scheduled'), datetime: DateTimeSchema }),
    z.looseObject({ type: z.literal('date'), date: DateSchema }),
    z.literal('asap'),
    DateTimeSchema,
    DateSchema,
  ],
  { error: 'start_time must be {type: asap}, {type: scheduled, datetime} or {type: date, date}' },
);

export const CreateMediaBuySchema = z.looseObject({
  buyer_ref: z.string().min(1).max(255),
  /** Required unless the 3.2 `brand: {domain}` form names the brand. */
  brand_manifest: BrandManifestSchema.optional(),
  brand: z
    .looseObject({
      domain: z.string().regex(/^[A-Za-z0-9.-]{1,253}$/, 'domain must be a host name'),
    })
    .optional(),
  account: z.looseObject({ account_id: z.string().min(1).max(128) }).optional(),
  total_budget: z
    .looseObject({
      amount: positive('total_budget.amount'),
      currency: z.string().regex(/^[A-Z]{3}$/),
    })
    .optional(),
  proposal_id: z.string().min(1).max(255).optional(),
  packages: z.array(PackageSchema).min(1, 'at least one package is required').max(50),
  start_time: StartTimeSchema,
  end_time: z.union([DateTimeSchema, DateSchema], {
    error: 'end_time must be an ISO 8601 date-time',
  }),
  push_notification_config: z.unknown().optional(),
  reporting_webhook: z.unknown().optional(),
  idempotency_key: z.string().optional(),
  context: z.unknown().optional(),
});

function startInstant(start: z.output<typeof StartTimeSchema>, now: Date): Date {
  if (typeof start === 'string') return start === 'asap' ? now : new Date(start);
  if (start.type === 'asap') return now;
  if (start.type === 'scheduled') return new Date(start.datetime as string);
  return new Date(`${start.date as string}T00:00:00Z`);
}

function endInstant(end: string): Date {
  return new Date(/^\d{4}-\d{2}-\d{2}$/.test(end) ? `${end}T23:59:59Z` : end);
}

/** `reporting_webhook` accepted for the buy, or INVALID_REQUEST naming the member. */
function checkReportingWebhook(value: unknown, products: ProductRow[]): Record<string, unknown> {
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

/** The full response of create/update: the buy as it stands. */
export async function buyResponse(
  db: Pick<PoolClient, 'query'>,
  schema: string,
  buy: BuyRow,
): Promise<Record<string, unknown>> {
  const packages = await loadPackages(db, schema, [buy.media_buy_id]);
  const assigned = await assignmentsOf(
    db,
    schema,
    packages.map((p) => p.package_id),
  );
  return {
    media_buy_id: buy.media_buy_id,
    buyer_ref: buy.buyer_ref,
    media_buy_status: buy.status,
    packages: packages.map((p) => packageView(p, assigned.get(p.package_id))),
  };
}

async function createMediaBuy(params: z.output<typeof CreateMediaBuySchema>, ctx: TaskContext) {
  const s = ctx.schema;
  const principal = ctx.principal!;
  const now = ctx.clock.now();
  const brandManifest =
    params.brand_manifest ?? (params.brand ? { url: `https://${params.brand.domain}` } : null);
  if (!brandManifest) {
    throw taskError('VALIDATION_ERROR', 'brand_manifest is required (or brand: {domain})', {
      field: 'brand_manifest',
    });
  }
  if (params.account) {
    const { rowCount } = await ctx.db.query(
      `SELECT 1 FROM ${s}.accounts WHERE agent = 'sales' AND account_id = $1 AND principal_id = $2`,
      [params.account.account_id, principal.principal_id],
    );
    if (!rowCount) {
      throw taskError(
        'ACCOUNT_NOT_FOUND',
        `no account ${params.account.account_id.slice(0, 80)} for this principal`,
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
  const startAt = startInstant(params.start_time, now);
  const endAt = endInstant(params.end_time);
  if (!(endAt.getTime() > startAt.getTime())) {
    throw taskError('VALIDATION_ERROR', 'end_time must be after start_time', { field: 'end_time' });
  }
  if (endAt.getTime() <= now.getTime()) {
    throw taskError('VALIDATION_ERROR', 'end_time must be in the future', { field: 'end_time' });
  }
  const refs = new Set<string>();
  const { rows: products } = await ctx.db.query<ProductRow>(
    `SELECT * FROM ${s}.products WHERE product_id = ANY($1)`,
    [params.packages.map((p) => p.product_id)],
  );
  const byId = new Map(products.map((p) => [p.product_id, p]));
  const planned = params.packages.map((pkg, i) => {
    if (refs.has(pkg.buyer_ref)) {
      throw taskError('VALIDATION_ERROR', `packages[${i}].buyer_ref repeats another package's`, {
        field: `packages[${i}].buyer_ref`,
      });
    }
    refs.add(pkg.buyer_ref);
    const product = byId.get(pkg.product_id);
    if (
      !product ||
      (product.custom_principal !== null && product.custom_principal !== principal.principal_id)
    ) {
      throw taskError('PRODUCT_NOT_FOUND', `no product ${pkg.product_id.slice(0, 80)}`, {
        field: `packages[${i}].product_id`,
      });
    }
    const option = product.pricing_options.find(
      (o) => o.pricing_option_id === pkg.pricing_option_id,
    );
    if (!option) {
      throw taskError(
        'VALIDATION_ERROR',
        `pricing option ${pkg.pricing_option_id.slice(0, 80)} is not offered by ${product.product_id}`,
        { field: `packages[${i}].pricing_option_id` },
      );
    }
    let rate: number;
    if (option.pricing_model === 'cpm-auction') {
      if (pkg.bid_price === undefined) {
        throw taskError('VALIDATION_ERROR', 'bid_price is required for auction pricing', {
          field: `packages[${i}].bid_price`,
        });
      }
      if (pkg.bid_price < (option.floor ?? 0)) {
        throw taskError(
          'VALIDATION_ERROR',
          `bid_price must be at least the floor ${option.floor}`,
          {
            field: `packages[${i}].bid_price`,
          },
        );
      }
      // Second-price-like clearing between the floor and the bid.
      rate = (option.floor ?? 0) + 0.7 * (pkg.bid_price - (option.floor ?? 0));
    } else {
      rate = option.price ?? 0;
    }
    const minimum =
      option.pricing_model === 'flat-fee' ? (option.price ?? 0) : (option.min_spend ?? 0);
    if (pkg.budget < minimum) {
      throw taskError(
        'VALIDATION_ERROR',
        `budget must be at least ${minimum} for this pricing option`,
        {
          field: `packages[${i}].budget`,
        },
      );
    }
    return { pkg, product, option, rate, index: i };
  });
  const reporting =
    params.reporting_webhook === undefined
      ? null
      : checkReportingWebhook(params.reporting_webhook, products);

  const dup = await ctx.db.query(
    `SELECT 1 FROM ${s}.media_buys WHERE principal_id = $1 AND buyer_ref = $2`,
    [principal.principal_id, params.buyer_ref],
  );
  if (dup.rowCount) {
    throw taskError('VALIDATION_ERROR', 'buyer_ref is already used by another media buy of yours', {
      field: 'buyer_ref',
    });
  }

  const approval = ctx.settings.approval;
  const needsApproval = approval !== 'never';
  const mediaBuyId = newMediaBuyId();
  const startTime =
    typeof params.start_time === 'string'
      ? params.start_time === 'asap'
        ? { type: 'asap' }
        : { type: 'scheduled', datetime: params.start_time }
      : params.start_time;
  await ctx.db.query(
    `INSERT INTO ${s}.media_buys (media_buy_id, principal_id, buyer_ref, status, brand_manifest,
       start_time, start_at, end_at, push_notification_config, reporting_webhook, context, task_id,
       accrued_until, approved_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)`,
    [
      mediaBuyId,
      principal.principal_id,
      params.buyer_ref,
      needsApproval ? 'pending' : 'active',
      brandManifest,
      startTime,
      startAt,
      endAt,
      ctx.request.pushNotificationConfig ?? null,
      reporting,
      ctx.request.context ?? null,
      needsApproval ? ctx.taskId : null,
      needsApproval ? null : now,
      needsApproval ? null : now,
    ],
  );
  for (const { pkg, option, rate, index } of planned) {
    const packageId = newPackageId();
    await ctx.db.query(
      `INSERT INTO ${s}.packages (package_id, media_buy_id, buyer_ref, product_id, pricing_option_id,
         pricing_model, rate, budget, bid_price, targeting_overlay, position)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)`,
      [
        packageId,
        mediaBuyId,
        pkg.buyer_ref,
        pkg.product_id,
        pkg.pricing_option_id,
        option.pricing_model,
        rate,
        pkg.budget,
        pkg.bid_price ?? null,
        pkg.targeting_overlay ?? null,
        index,
      ],
    );
    const creativeIds = [
      ...(pkg.creative_ids ?? []),
      ...(pkg.creatives ?? []).map((c) => c.creative_id),
    ];
    if (creativeIds.length > 0) {
      await assignCreatives(ctx, packageId, creativeIds, `packages[${index}].creative_ids`);
    }
  }
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
  const buy = await loadBuy(ctx.db, s, mediaBuyId, principal.principal_id);
  const body = await buyResponse(ctx.db, s, buy);
  if (!needsApproval) return { status: 'completed' as const, body };
  return {
    status: 'submitted' as const,
    body: { ...body, message: 'media buy received; it is pending seller approval' },
    async: {
      runAfterMs: ctx.settings.taskStepMs,
      resourceId: mediaBuyId,
      state: { phase: 'review' },
    },
  };
}

/** Background steps of create_media_buy: review (working), then approval. */
async function advanceCreate(task: StoredTask, ctx: TaskContext): Promise<Advance | null> {
  const s = ctx.schema;
  const buy = await loadBuy(ctx.db, s, task.resource_id!, null, { forUpdate: true });
  if (buy.status === 'canceled') {
    return {
      status: 'canceled',
      result: await buyResponse(ctx.db, s, buy),
      message: 'media buy canceled',
    };
  }
  if (buy.status !== 'pending') {
    return { status: 'completed', result: await buyResponse(ctx.db, s, buy) };
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
      result: await buyResponse(ctx.db, s, fresh),
      message: 'media buy approved',
    };
  }
  return {
    status: 'input-required',
    result: { reason: 'awaiting seller approval', errors: [] },
    message: 'awaiting seller approval',
  };
}

async function activateBuy(db: PoolClient, schema: string, buy: BuyRow, now: Date): Promise<void> {
  await db.query(
    `UPDATE ${schema}.media_buys SET status = 'active', approved_at = $2, accrued_until = $2,
       updated_at = now() WHERE media_buy_id = $1`,
    [buy.media_buy_id, now],
  );
}

const UpdateMediaBuySchema = z.looseObject({
  media_buy_id: z.string().min(1).max(255),
  updates: z
    .looseObject({
      budget_change: z
        .number()
        .refine(Number.isFinite, 'budget_change must be a finite number')
        .optional(),
      end_time: DateTimeSchema.optional(),
      status: z.enum(['active', 'paused', 'canceled']).optional(),
      targeting: z.record(z.string(), z.unknown()).optional(),
      packages: z
        .array(
          z.looseObject({
            package_id: z.string().min(1),
            budget: positive('budget').optional(),
            paused: z.boolean().optional(),
            creative_ids: z.array(z.string().min(1)).optional(),
          }),
        )
        .optional(),
    })
    .default({}),
  push_notification_config: z.unknown().optional(),
  reporting_webhook: z.unknown().optional(),
  idempotency_key: z.string().optional(),
  context: z.unknown().optional(),
});

const TRANSITIONS: Record<string, string[]> = {
  pending: ['canceled'],
  active: ['paused', 'canceled', 'active'],
  paused: ['active', 'canceled', 'paused'],
  reporting_delayed: ['paused', 'canceled', 'active'],
};

async function updateMediaBuy(
  params: z.output<typeof UpdateMediaBuySchema>,
  ctx: TaskContext,
  tasks: TaskStore,
) {
  const s = ctx.schema;
  const principal = ctx.principal!;
  const buy = await lockBuyAndTask(ctx.db, s, params.media_buy_id, principal.principal_id);
  if (TERMINAL_BUY.has(buy.status)) {
    throw taskError('INVALID_STATE', `media buy is ${buy.status}; it can no longer be changed`, {
      field: 'media_buy_id',
    });
  }
  const now = ctx.clock.now();
  const u = params.updates;
  // Settle delivery up to now before anything changes what accrues.
  await accrueBuy(ctx.db, s, buy, now, ctx.notifications);
  const packages = await loadPackages(ctx.db, s, [buy.media_buy_id]);
  const changed: string[] = [];

  // The reporting schedule ends with the flight: a new end_time moves the channels' end too.
  let flightEnd: string | undefined;
  if (u.end_time !== undefined) {
    const end = new Date(u.end_time);
    if (end.getTime() <= Math.max(now.getTime(), buy.start_at.getTime())) {
      throw taskError('VALIDATION_ERROR', 'end_time must be in the future and after the start', {
        field: 'updates.end_time',
      });
    }
    await ctx.db.query(`UPDATE ${s}.media_buys SET end_at = $2 WHERE media_buy_id = $1`, [
      buy.media_buy_id,
      end,
    ]);
    flightEnd = end.toISOString();
    changed.push('end_time');
  }
  if (u.budget_change !== undefined && u.budget_change !== 0) {
    const total = packages.reduce((a, p) => a + p.budget, 0);
    const newTotal = total + u.budget_change;
    if (!(newTotal > 0)) {
      throw taskError('VALIDATION_ERROR', 'the budget after budget_change must be greater than 0', {
        field: 'updates.budget_change',
      });
    }
    // Spread proportionally over the packages.
    for (const p of packages) {
      await ctx.db.query(`UPDATE ${s}.packages SET budget = $2 WHERE package_id = $1`, [
        p.package_id,
        (p.budget / total) * newTotal,
      ]);
    }
    changed.push('budget');
  }
  for (const [i, pu] of (u.packages ?? []).entries()) {
    const p = packages.find((x) => x.package_id === pu.package_id);
    if (!p) {
      throw taskError(
        'PACKAGE_NOT_FOUND',
        `no package ${pu.package_id.slice(0, 80)} in this media buy`,
        {
          field: `updates.packages[${i}].package_id`,
        },
      );
    }
    if (pu.budget !== undefined) {
      await ctx.db.query(`UPDATE ${s}.packages SET budget = $2 WHERE package_id = $1`, [
        p.package_id,
        pu.budget,
      ]);
    }
    if (pu.paused !== undefined) {
      await ctx.db.query(`UPDATE ${s}.packages SET paused = $2 WHERE package_id = $1`, [
        p.package_id,
        pu.paused,
      ]);
    }
    if (pu.creative_ids) {
      await assignCreatives(
        ctx,
        p.package_id,
        pu.creative_ids,
        `updates.packages[${i}].creative_ids`,
      );
    }
    changed.push(`packages[${i}]`);
  }
  if (u.targeting !== undefined) {
    await ctx.db.query(
      `UPDATE ${s}.packages SET targeting_overlay = COALESCE(targeting_overlay, '{}'::jsonb) || $2::jsonb
        WHERE media_buy_id = $1`,
      [buy.media_buy_id, u.targeting],
    );
    changed.push('targeting');
  }
  if (u.status !== undefined && u.status !== buy.status) {
    // Resuming a paused buy starts accruing from now; a reporting delay never stopped it.
    const resumes = u.status === 'active' && buy.status === 'paused';
    if (!TRANSITIONS[buy.status]?.includes(u.status)) {
      throw taskError('INVALID_STATE', `a ${buy.status} media buy cannot become ${u.status}`, {
        field: 'updates.status',
      });
    }
    await ctx.db.query(
      `UPDATE ${s}.media_buys SET status = $2, updated_at = now()${resumes ? ', accrued_until = $3' : ''}
        WHERE media_buy_id = $1`,
      resumes ? [buy.media_buy_id, u.status, now] : [buy.media_buy_id, u.status],
    );
    changed.push('status');
    if (u.status === 'canceled') {
      await closeCreateTask(ctx, tasks, buy, 'canceled', 'media buy canceled by the buyer');
      await ctx.notifications.mediaBuyTerminal({
        mediaBuyId: buy.media_buy_id,
        principalId: buy.principal_id,
        status: 'canceled',
        client: ctx.db,
      });
    }
  }
  let reporting: Record<string, unknown> | null | undefined;
  if (params.reporting_webhook !== undefined) {
    const { rows: products } = await ctx.db.query<ProductRow>(
      `SELECT * FROM ${s}.products WHERE product_id = ANY($1)`,
      [packages.map((p) => p.product_id)],
    );
    reporting =
      params.reporting_webhook === null
        ? null
        : checkReportingWebhook(params.reporting_webhook, products);
  }
  const push = ctx.request.pushNotificationConfig;
  if (push !== undefined || reporting !== undefined) {
    await ctx.db.query(
      `UPDATE ${s}.media_buys SET
         push_notification_config = CASE WHEN $2 THEN $3::jsonb ELSE push_notification_config END,
         reporting_webhook = CASE WHEN $4 THEN $5::jsonb ELSE reporting_webhook END
       WHERE media_buy_id = $1`,
      [
        buy.media_buy_id,
        push !== undefined,
        push ?? null,
        reporting !== undefined,
        reporting ?? null,
      ],
    );
    if (u.status !== 'canceled') {
      await ctx.notifications.mediaBuyChannelsConfigured({
        mediaBuyId: buy.media_buy_id,
        principalId: buy.principal_id,
        ...(push !== undefined ? { pushNotificationConfig: push } : {}),
        ...(reporting !== undefined ? { reportingWebhook: reporting } : {}),
        ...(flightEnd !== undefined ? { flightEnd } : {}),
        client: ctx.db,
      });
    }
    if (push !== undefined) changed.push('push_notification_config');
    if (reporting !== undefined) changed.push('reporting_webhook');
  }
  if (
    flightEnd !== undefined &&
    push === undefined &&
    reporting === undefined &&
    (buy.push_notification_config || buy.reporting_webhook)
  ) {
    await ctx.notifications.mediaBuyChannelsConfigured({
      mediaBuyId: buy.media_buy_id,
      principalId: buy.principal_id,
      flightEnd,
      client: ctx.db,
    });
  }
  const fresh = await loadBuy(ctx.db, s, buy.media_buy_id, null);
  return {
    status: 'completed' as const,
    body: {
      ...(await buyResponse(ctx.db, s, fresh)),
      changes_applied: changed,
      implementation_date: now.toISOString(),
    },
  };
}

/** Ends the open create task of a buy (cancel, reject, approve). */
async function closeCreateTask(
  ctx: { db: PoolClient; schema: string; notifications: AgentNotifications },
  tasks: TaskStore,
  buy: BuyRow,
  status: 'completed' | 'canceled' | 'rejected',
  message: string,
  result?: Record<string, unknown>,
): Promise<void> {
  if (!buy.task_id) return;
  const task = await tasks.get(ctx.db, buy.task_id, true);
  if (!task || ['completed', 'canceled', 'rejected', 'failed'].includes(task.status)) return;
  const fresh = await loadBuy(ctx.db, ctx.schema, buy.media_buy_id, null);
  await tasks.transition(
    ctx.db,
    task,
    { status, result: result ?? (await buyResponse(ctx.db, ctx.schema, fresh)), message },
    ctx.notifications,
  );
}

const GetMediaBuysSchema = z.looseObject({
  media_buy_ids: z.array(z.string().min(1)).max(100).optional(),
  buyer_refs: z.array(z.string().min(1)).max(100).optional(),
  status_filter: z.union([z.string(), z.array(z.string())]).optional(),
  include_webhook_activity: z.boolean().optional(),
  webhook_activity_limit: z.number().int().min(1).max(200).optional(),
  limit: z.number().int().min(1).max(500).optional(),
});

async function getMediaBuys(params: z.output<typeof GetMediaBuysSchema>, ctx: TaskContext) {
  const s = ctx.schema;
  const principal = ctx.principal!;
  const statuses =
    params.status_filter === undefined
      ? null
      : Array.isArray(params.status_filter)
        ? params.status_filter
        : [params.status_filter];
  const { rows: buys } = await ctx.db.query<BuyRow>(
    `SELECT * FROM ${s}.media_buys WHERE principal_id = $1
       AND ($2::text[] IS NULL OR media_buy_id = ANY($2))
       AND ($3::text[] IS NULL OR buyer_ref = ANY($3))
       AND ($4::text[] IS NULL OR status = ANY($4))
     ORDER BY created_at DESC LIMIT $5`,
    [
      principal.principal_id,
      params.media_buy_ids ?? null,
      params.buyer_refs ?? null,
      statuses,
      params.limit ?? 100,
    ],
  );
  const ids = buys.map((b) => b.media_buy_id);
  const packages = await loadPackages(ctx.db, s, ids);
  const assigned = await assignmentsOf(
    ctx.db,
    s,
    packages.map((p) => p.package_id),
  );
  const { rows: impairments } = await ctx.db.query<{
    media_buy_id: string;
    body: Record<string, unknown>;
  }>(
    `SELECT media_buy_id, body FROM ${s}.impairments
      WHERE media_buy_id = ANY($1) AND resolved_at IS NULL ORDER BY observed_at`,
    [ids],
  );
  const out = [];
  for (const b of buys) {
    const imps = impairments.filter((i) => i.media_buy_id === b.media_buy_id).map((i) => i.body);
    const view: Record<string, unknown> = {
      media_buy_id: b.media_buy_id,
      buyer_ref: b.buyer_ref,
      status: b.status,
      brand_manifest: b.brand_manifest,
      start_time: b.start_time,
      end_time: b.end_at.toISOString(),
      currency: b.currency,
      total_budget: packages
        .filter((p) => p.media_buy_id === b.media_buy_id)
        .reduce((a, p) => a + p.budget, 0),
      packages: packages
        .filter((p) => p.media_buy_id === b.media_buy_id)
        .map((p) => packageView(p, assigned.get(p.package_id))),
      impairments: imps,
      health: imps.length > 0 && !TERMINAL_BUY.has(b.status) ? 'impaired' : 'ok',
      created_at: b.created_at.toISOString(),
      updated_at: b.updated_at.toISOString(),
    };
    if (b.push_notification_config)
      view.push_notification_config = withoutCredentials(b.push_notification_config);
    if (b.reporting_webhook) view.reporting_webhook = withoutCredentials(b.reporting_webhook);
    if (params.include_webhook_activity) {
      view.webhook_activity = ctx.settings.webhookActivity
        ? await ctx.settings.webhookActivity.list({
            principalId: principal.principal_id,
            mediaBuyId: b.media_buy_id,
            limit: params.webhook_activity_limit ?? 50,
          })
        : [];
    }
    out.push(view);
  }
  return { media_buys: out };
}

export function registerMediaBuyTasks(registry: TaskRegistry, tasks: TaskStore): void {
  registry.add({
    name: 'create_media_buy',
    agent: 'sales',
    schema: CreateMediaBuySchema,
    auth: { tier: 'authenticated', permission: { resource: 'media_buys', permission: 'write' } },
    expectedDuration: 'minutes to days',
    mode: 'async',
    mutating: true,
    webhookTaskType: 'create_media_buy',
    errorShape: 'single',
    handle: createMediaBuy,
    advance: advanceCreate,
    cancel: async (task, ctx) => {
      if (!task.resource_id) return;
      const buy = await loadBuy(ctx.db, ctx.schema, task.resource_id, null, { forUpdate: true });
      if (buy.status !== 'pending') return;
      await ctx.db.query(
        `UPDATE ${ctx.schema}.media_buys SET status = 'canceled', updated_at = now() WHERE media_buy_id = $1`,
        [buy.media_buy_id],
      );
      await ctx.notifications.mediaBuyTerminal({
        mediaBuyId: buy.media_buy_id,
        principalId: buy.principal_id,
        status: 'canceled',
        client: ctx.db,
      });
    },
  });
  registry.add({
    name: 'update_media_buy',
    agent: 'sales',
    schema: UpdateMediaBuySchema,
    auth: { tier: 'authenticated', permission: { resource: 'media_buys', permission: 'write' } },
    expectedDuration: 'minutes to days',
    mode: 'sync',
    mutating: true,
    webhookTaskType: 'update_media_buy',
    errorShape: 'single',
    handle: (params, ctx) => updateMediaBuy(params, ctx, tasks),
  });
  registry.add({
    name: 'get_media_buys',
    agent: 'sales',
    schema: GetMediaBuysSchema,
    auth: { tier: 'authenticated', permission: { resource: 'media_buys', permission: 'read' } },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    errorShape: 'single',
    handle: async (params, ctx) => ({ status: 'completed', body: await getMediaBuys(params, ctx) }),
  });
}

/** Operator actions on buys (`svc approve`, `svc reject`, impairments). */
export class MediaBuyOperator {
  constructor(
    private readonly deps: {
      pool: Pool;
      schema: string;
      tasks: TaskStore;
      notifications: AgentNotifications;
      clock: AgentClock;
    },
  ) {}

  private inTransaction<T>(fn: (db: PoolClient) => Promise<T>): Promise<T> {
    return withTransaction(this.deps.pool, fn);
  }

  /** Approves a pending buy: it goes active and its task completes (webhook). */
  approve(mediaBuyId: string): Promise<Record<string, unknown>> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const buy = await lockBuyAndTask(db, schema, mediaBuyId, null);
      if (buy.status !== 'pending') {
        throw taskError('INVALID_STATE', `media buy is ${buy.status}, not pending`, {
          field: 'media_buy_id',
        });
      }
      await activateBuy(db, schema, buy, this.deps.clock.now());
      await closeCreateTask(
        { db, ...this.deps },
        this.deps.tasks,
        buy,
        'completed',
        'media buy approved',
      );
      return buyResponse(db, schema, await loadBuy(db, schema, mediaBuyId, null));
    });
  }

  /** Rejects a pending buy: task `rejected`, buy `rejected`, channels closed. */
  reject(mediaBuyId: string, reason = 'rejected by the seller'): Promise<Record<string, unknown>> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const buy = await lockBuyAndTask(db, schema, mediaBuyId, null);
      if (buy.status !== 'pending') {
        throw taskError('INVALID_STATE', `media buy is ${buy.status}, not pending`, {
          field: 'media_buy_id',
        });
      }
      await db.query(
        `UPDATE ${schema}.media_buys SET status = 'rejected', updated_at = now() WHERE media_buy_id = $1`,
        [mediaBuyId],
      );
      const fresh = await loadBuy(db, schema, mediaBuyId, null);
      const result = { ...(await buyResponse(db, schema, fresh)), reason };
      await closeCreateTask({ db, ...this.deps }, this.deps.tasks, buy, 'rejected', reason, result);
      await this.deps.notifications.mediaBuyTerminal({
        mediaBuyId,
        principalId: buy.principal_id,
        status: 'rejected',
        client: db,
      });
      return result;
    });
  }

  /** Delivery numbers are late: reports become `delayed` until `resumeReporting`. */
  delayReporting(mediaBuyId: string, expectedAvailability?: Date): Promise<void> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const buy = await loadBuy(db, schema, mediaBuyId, null, { forUpdate: true });
      if (buy.status !== 'active') {
        throw taskError('INVALID_STATE', `media buy is ${buy.status}, not active`, {
          field: 'media_buy_id',
        });
      }
      await db.query(
        `UPDATE ${schema}.media_buys SET status = 'reporting_delayed', reporting_expected_at = $2,
           updated_at = now() WHERE media_buy_id = $1`,
        [mediaBuyId, expectedAvailability ?? null],
      );
    });
  }

  resumeReporting(mediaBuyId: string): Promise<void> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const buy = await loadBuy(db, schema, mediaBuyId, null, { forUpdate: true });
      if (buy.status !== 'reporting_delayed') {
        throw taskError('INVALID_STATE', `media buy is ${buy.status}, not reporting_delayed`, {
          field: 'media_buy_id',
        });
      }
      await db.query(
        `UPDATE ${schema}.media_buys SET status = 'active', reporting_expected_at = NULL,
           updated_at = now() WHERE media_buy_id = $1`,
        [mediaBuyId],
      );
    });
  }

  /**
   * Records an impairment (supplement §6.4) on a buy and hands it to the sender; one with
   * `resolved_at` closes the open one of the same id.
   */
  observeImpairment(mediaBuyId: string, impairment: Record<string, unknown>): Promise<void> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const buy = await loadBuy(db, schema, mediaBuyId, null, { forUpdate: true });
      const id = String(impairment.impairment_id ?? '');
      if (!/^[A-Za-z0-9_.:-]{1,255}$/.test(id)) {
        throw taskError('VALIDATION_ERROR', 'impairment_id is required', {
          field: 'impairment_id',
        });
      }
      const observed = new Date(
        String(impairment.observed_at ?? this.deps.clock.now().toISOString()),
      );
      await db.query(
        `INSERT INTO ${schema}.impairments (impairment_id, media_buy_id, body, observed_at, resolved_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (impairment_id) DO UPDATE SET body = EXCLUDED.body, resolved_at = EXCLUDED.resolved_at`,
        [
          id,
          mediaBuyId,
          impairment,
          observed,
          impairment.resolved_at ? new Date(String(impairment.resolved_at)) : null,
        ],
      );
      await this.deps.notifications.impairmentObserved({
        mediaBuyId,
        principalId: buy.principal_id,
        impairment,
        client: db,
      });
    });
  }
}
