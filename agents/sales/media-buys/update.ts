/**
 * update_media_buy: the published top-level members (`paused`, `canceled`, `end_time`,
 * `packages[]`, `revision`) and the spec's older `updates{}` arrive as one UpdateIntent
 * (media-buy-requests.ts); each change is applied in the call's transaction, delivery is
 * settled up to now first, and the buy's revision goes up by one.
 */
import { taskError, type AnyTaskErrorCode } from '../../runtime/errors.js';
import type { AgentClock } from '../../runtime/clock.js';
import type { TaskStore } from '../../runtime/task-store.js';
import type { AgentNotifications, HandlerOutcome, TaskContext } from '../../runtime/types.js';
import type { PoolClient } from '../../../shared/infra/pg.js';
import { assignCreatives } from '../creatives/assignments.js';
import { accrueBuy } from '../delivery/simulator.js';
import { checkReportingWebhook, echoKey, productsById } from './create.js';
import {
  loadBuy,
  loadPackages,
  lockBuyAndTask,
  TERMINAL_BUY,
  type BuyRow,
  type PackageRow,
} from './records.js';
import { checkPackageOverlay } from '../catalog/package-overlay.js';
import { updateIntent, type UpdateIntent, type UpdateMediaBuyRequest } from './requests.js';
import { buyResponse } from './views.js';

const TRANSITIONS: Record<string, string[]> = {
  pending: ['canceled'],
  active: ['paused', 'canceled', 'active'],
  paused: ['active', 'canceled', 'paused'],
  reporting_delayed: ['paused', 'canceled', 'active'],
};

/** Ends the open create task of a buy (cancel, reject, approve). */
export async function closeCreateTask(
  ctx: { db: PoolClient; schema: string; notifications: AgentNotifications; clock: AgentClock },
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
    {
      status,
      result: result ?? (await buyResponse(ctx.db, ctx.schema, fresh, ctx.clock.now())),
      message,
    },
    ctx.notifications,
  );
}

/** end_time, budget_change, package changes and targeting; the names of what changed. */
async function applyChanges(
  ctx: TaskContext,
  buy: BuyRow,
  packages: PackageRow[],
  u: UpdateIntent,
  now: Date,
): Promise<{ changed: string[]; affected: string[]; flightEnd?: string }> {
  const s = ctx.schema;
  const changed: string[] = [];
  const affected: string[] = [];
  let flightEnd: string | undefined;
  if (u.endTime !== undefined) {
    const end = new Date(u.endTime.value);
    if (end.getTime() <= Math.max(now.getTime(), buy.start_at.getTime())) {
      throw taskError('VALIDATION_ERROR', 'end_time must be in the future and after the start', {
        field: u.endTime.field,
      });
    }
    await ctx.db.query(`UPDATE ${s}.media_buys SET end_at = $2 WHERE media_buy_id = $1`, [
      buy.media_buy_id,
      end,
    ]);
    flightEnd = end.toISOString();
    changed.push('end_time');
  }
  if (u.totalBudget !== undefined) {
    changed.push('total_budget');
    affected.push(...(await spreadTotal(ctx, buy, packages, u.totalBudget)));
  }
  if (u.budgetChange !== undefined && u.budgetChange !== 0) {
    const total = packages.reduce((a, p) => a + p.budget, 0);
    const newTotal = total + u.budgetChange;
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
  await checkOverlays(ctx, packages, u);
  for (const pu of u.packages) {
    const p = packages.find((x) => x.package_id === pu.package_id);
    if (!p) {
      throw taskError(
        'PACKAGE_NOT_FOUND',
        `no package ${pu.package_id.slice(0, 80)} in this media buy`,
        {
          field: `${pu.field}.package_id`,
        },
      );
    }
    await ctx.db.query(
      `UPDATE ${s}.packages SET budget = COALESCE($2, budget), paused = COALESCE($3, paused),
         targeting_overlay = COALESCE($4, targeting_overlay) WHERE package_id = $1`,
      [p.package_id, pu.budget ?? null, pu.paused ?? null, pu.targeting_overlay ?? null],
    );
    if (pu.creative_ids) {
      await assignCreatives(ctx, p.package_id, pu.creative_ids);
    }
    changed.push(pu.field.replace(/^updates\./, ''));
    affected.push(p.package_id);
  }
  if (u.targeting !== undefined) {
    await ctx.db.query(
      `UPDATE ${s}.packages SET targeting_overlay = COALESCE(targeting_overlay, '{}'::jsonb) || $2::jsonb
        WHERE media_buy_id = $1`,
      [buy.media_buy_id, u.targeting],
    );
    changed.push('targeting');
  }
  return flightEnd === undefined ? { changed, affected } : { changed, affected, flightEnd };
}

/**
 * Each package's new targeting_overlay against its product, before anything is written: a
 * package overlay applies exactly or the whole update is refused (3.2 core/targeting.json;
 * targeting_aware_discovery.yaml:1220-:1529, each refusal read back unchanged).
 */
async function checkOverlays(ctx: TaskContext, packages: PackageRow[], u: UpdateIntent) {
  const changing = u.packages.filter((pu) => pu.targeting_overlay !== undefined);
  const productOf = new Map(packages.map((p) => [p.package_id, p.product_id]));
  const ids = changing.map((pu) => productOf.get(pu.package_id)).filter((x) => !!x) as string[];
  if (ids.length === 0) return;
  const products = new Map(
    (await productsById(ctx.db, ctx.schema, ids)).map((p) => [p.product_id, p]),
  );
  for (const pu of changing) {
    const product = products.get(productOf.get(pu.package_id) ?? '');
    const field = `${pu.field.replace(/^updates\./, '')}.targeting_overlay`;
    if (product) checkPackageOverlay(product, pu.targeting_overlay!, field);
  }
}

/**
 * Published total_budget: every package scaled in proportion to its current budget (cents
 * rounded, the last package taking the remainder so the sum is exact), in the buy's own
 * currency (an update never redenominates a buy). The ids of the packages changed.
 */
async function spreadTotal(
  ctx: TaskContext,
  buy: BuyRow,
  packages: PackageRow[],
  total: { amount: number; currency: string },
): Promise<string[]> {
  if (total.currency !== buy.currency) {
    throw taskError('VALIDATION_ERROR', `total_budget.currency must be the buy's ${buy.currency}`, {
      field: 'total_budget.currency',
    });
  }
  const current = packages.reduce((a, p) => a + p.budget, 0);
  if (packages.length === 0 || !(current > 0)) {
    throw taskError('VALIDATION_ERROR', 'this media buy has no package budget to scale', {
      field: 'total_budget',
    });
  }
  let left = Math.round(total.amount * 100);
  for (const [i, p] of packages.entries()) {
    const cents =
      i === packages.length - 1 ? left : Math.round((p.budget / current) * total.amount * 100);
    left -= cents;
    await ctx.db.query(`UPDATE ${ctx.schema}.packages SET budget = $2 WHERE package_id = $1`, [
      p.package_id,
      cents / 100,
    ]);
  }
  return packages.map((p) => p.package_id);
}

/** Pause, resume or cancel; a cancel ends the create task and the buy's channels. */
async function applyStatus(
  ctx: TaskContext,
  tasks: TaskStore,
  buy: BuyRow,
  status: NonNullable<UpdateIntent['status']>,
  now: Date,
): Promise<boolean> {
  if (status.value === buy.status) return false;
  // Resuming a paused buy starts accruing from now; a reporting delay never stopped it.
  const resumes = status.value === 'active' && buy.status === 'paused';
  if (!TRANSITIONS[buy.status]?.includes(status.value)) {
    throw taskError('INVALID_STATE', `a ${buy.status} media buy cannot become ${status.value}`, {
      field: status.field,
    });
  }
  await ctx.db.query(
    // A pause or resume makes the buy live on the wire (no way back to pending_*).
    `UPDATE ${ctx.schema}.media_buys SET status = $2, updated_at = now(),
       went_live = went_live OR $2 IN ('active', 'paused')${resumes ? ', accrued_until = $3' : ''}
      WHERE media_buy_id = $1`,
    resumes ? [buy.media_buy_id, status.value, now] : [buy.media_buy_id, status.value],
  );
  if (status.value === 'canceled') {
    await closeCreateTask(ctx, tasks, buy, 'canceled', 'media buy canceled by the buyer');
    await ctx.notifications.mediaBuyTerminal({
      mediaBuyId: buy.media_buy_id,
      principalId: buy.principal_id,
      status: 'canceled',
      client: ctx.db,
    });
  }
  return true;
}

/** New push/reporting registrations, and a moved flight end, handed to the sender. */
async function applyChannels(
  ctx: TaskContext,
  buy: BuyRow,
  packages: PackageRow[],
  params: UpdateMediaBuyRequest,
  canceled: boolean,
  flightEnd: string | undefined,
): Promise<string[]> {
  const s = ctx.schema;
  const changed: string[] = [];
  let reporting: Record<string, unknown> | null | undefined;
  if (params.reporting_webhook !== undefined) {
    const products = await productsById(
      ctx.db,
      s,
      packages.flatMap((p) => (p.product_id !== null ? [p.product_id] : [])),
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
    if (!canceled) {
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
  } else if (flightEnd !== undefined && (buy.push_notification_config || buy.reporting_webhook)) {
    await ctx.notifications.mediaBuyChannelsConfigured({
      mediaBuyId: buy.media_buy_id,
      principalId: buy.principal_id,
      flightEnd,
      client: ctx.db,
    });
  }
  return changed;
}

export async function updateMediaBuy(
  params: UpdateMediaBuyRequest,
  ctx: TaskContext,
  tasks: TaskStore,
): Promise<HandlerOutcome> {
  const s = ctx.schema;
  const principal = ctx.principal!;
  const buy = await lockBuyAndTask(ctx.db, s, params.media_buy_id, principal.principal_id);
  if (TERMINAL_BUY.has(buy.status)) {
    // Canceling an ended buy has the protocol's own code.
    if (updateIntent(params).status?.value === 'canceled') {
      throw taskError(
        'NOT_CANCELLABLE' as AnyTaskErrorCode,
        `media buy is ${buy.status}; it cannot be canceled`,
        { field: 'media_buy_id', status: 409 },
      );
    }
    throw taskError('INVALID_STATE', `media buy is ${buy.status}; it can no longer be changed`, {
      field: 'media_buy_id',
    });
  }
  if (params.revision !== undefined && params.revision !== buy.revision) {
    throw taskError(
      'INVALID_STATE',
      `media buy is at revision ${buy.revision}, not ${params.revision}; read it again and retry`,
      { field: 'revision' },
    );
  }
  const now = ctx.clock.now();
  const intent = updateIntent(params);
  // Settle delivery up to now before anything changes what accrues.
  await accrueBuy(ctx.db, s, buy, now, ctx.notifications);
  const packages = await loadPackages(ctx.db, s, [buy.media_buy_id]);
  const { changed, affected, flightEnd } = await applyChanges(ctx, buy, packages, intent, now);
  if (intent.status && (await applyStatus(ctx, tasks, buy, intent.status, now))) {
    changed.push('status');
  }
  const canceled = intent.status?.value === 'canceled';
  changed.push(...(await applyChannels(ctx, buy, packages, params, canceled, flightEnd)));
  await ctx.db.query(`UPDATE ${s}.media_buys SET revision = revision + 1 WHERE media_buy_id = $1`, [
    buy.media_buy_id,
  ]);
  const fresh = await loadBuy(ctx.db, s, buy.media_buy_id, null);
  const applied = { changes_applied: changed, implementation_date: now.toISOString() };
  const view = await buyResponse(ctx.db, s, fresh, now, ctx.request.release);
  // Published: the full post-update state of each package the update changed.
  const affectedPackages = (view.packages as Array<{ package_id: string }>).filter((p) =>
    affected.includes(p.package_id),
  );
  return {
    status: 'completed',
    body: {
      ...view,
      ...(affectedPackages.length > 0 ? { affected_packages: affectedPackages } : {}),
      ...applied,
      ...echoKey(params),
    },
  };
}
