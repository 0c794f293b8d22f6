/**
 * The media-buy lifecycle scenarios of the sales agent's test controller (sandbox callers
 * only, checked by the controller before these run): force_media_buy_status along the
 * published lifecycle graph, force_create_media_buy_arm (the next create answers with the
 * submitted task envelope under a task id the harness chose, or input-required) and simulate_budget_spend.
 */
import { TaskError } from '../../shared/errors/task-errors.js';
import { TaskStore } from '../runtime/task-store.js';
import type { TaskContext } from '../runtime/types.js';
import { accrueBuy } from '../sales/delivery/simulator.js';
import {
  assignmentsOf,
  loadPackages,
  lockBuyAndTask,
  round2,
  wireBuyStatus,
  type BuyRow,
} from '../sales/media-buys/records.js';
import { closeCreateTask } from '../sales/media-buys/update.js';
import type { ControllerRequest } from './request.js';
import { refuse, str } from './replies.js';
import { CREATE_ARM_KIND, putFixture, SESSION, type ForcedCreateArm } from '../sandbox/fixtures.js';

/** The published lifecycle graph (`enums/media-buy-status.json`): status -> legal next ones. */
export const MEDIA_BUY_LIFECYCLE: Record<string, readonly string[]> = {
  pending_creatives: ['pending_start', 'active', 'paused', 'canceled', 'rejected'],
  pending_start: ['active', 'paused', 'canceled', 'rejected'],
  active: ['paused', 'completed', 'canceled'],
  paused: ['active', 'completed', 'canceled'],
  completed: [],
  rejected: [],
  canceled: [],
};

/** pending_creatives/pending_start follow from the buy's creatives and flight, not a force. */
const FORCEABLE = ['active', 'paused', 'completed', 'canceled', 'rejected'] as const;

/** The caller's buy, locked with its create task; null when it holds no such buy. */
async function callersBuy(ctx: TaskContext, mediaBuyId: string): Promise<BuyRow | null> {
  try {
    return await lockBuyAndTask(ctx.db, ctx.schema, mediaBuyId, ctx.principal!.principal_id);
  } catch (err) {
    if (err instanceof TaskError) return null;
    throw err;
  }
}

async function wireStatusOf(ctx: TaskContext, buy: BuyRow): Promise<string> {
  const packages = await loadPackages(ctx.db, ctx.schema, [buy.media_buy_id]);
  const assigned = await assignmentsOf(
    ctx.db,
    ctx.schema,
    packages.map((p) => p.package_id),
  );
  const hasCreatives = packages.some((p) => (assigned.get(p.package_id) ?? []).length > 0);
  return wireBuyStatus(buy, hasCreatives, ctx.clock.now());
}

/**
 * Moves the caller's buy along one edge of the lifecycle graph, as the seller would: an
 * open create task ends with it, a terminal status closes the buy's webhook channels.
 */
export async function forceMediaBuyStatus(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const mediaBuyId = str(p.media_buy_id);
  const target = p.status;
  if (!mediaBuyId || typeof target !== 'string' || !(target in MEDIA_BUY_LIFECYCLE)) {
    return refuse(
      'INVALID_PARAMS',
      `params.media_buy_id and params.status (one of ${Object.keys(MEDIA_BUY_LIFECYCLE).join(', ')}) are required`,
    );
  }
  const buy = await callersBuy(ctx, mediaBuyId);
  if (!buy) return refuse('NOT_FOUND', `no sandbox media buy ${mediaBuyId.slice(0, 100)}`, null);
  const from = await wireStatusOf(ctx, buy);
  if (from === target) return { success: true, previous_state: from, current_state: target };
  if (!MEDIA_BUY_LIFECYCLE[from]!.includes(target)) {
    return refuse('INVALID_TRANSITION', `a ${from} media buy cannot become ${target}`, from);
  }
  if (!(FORCEABLE as readonly string[]).includes(target)) {
    return refuse(
      'INVALID_TRANSITION',
      `${target} follows from the buy's creatives and flight (assign creatives to leave pending_creatives); it is not forced`,
      from,
    );
  }
  const now = ctx.clock.now();
  // Settle delivery up to now before anything changes what accrues.
  await accrueBuy(ctx.db, ctx.schema, buy, now, ctx.notifications);
  await ctx.db.query(
    `UPDATE ${ctx.schema}.media_buys SET status = $2,
       went_live = went_live OR $2 IN ('active', 'paused'),
       approved_at = CASE WHEN $2 IN ('active', 'paused') THEN COALESCE(approved_at, $3) ELSE approved_at END,
       accrued_until = CASE WHEN $2 = 'active' AND status IN ('pending', 'paused') THEN $3 ELSE accrued_until END,
       revision = revision + 1, updated_at = now()
     WHERE media_buy_id = $1`,
    [buy.media_buy_id, target, now],
  );
  await endCreateTask(ctx, buy, target);
  if (target === 'completed' || target === 'canceled' || target === 'rejected') {
    await ctx.notifications.mediaBuyTerminal({
      mediaBuyId: buy.media_buy_id,
      principalId: buy.principal_id,
      status: target,
      client: ctx.db,
    });
  }
  return { success: true, previous_state: from, current_state: target };
}

/** A buy still awaiting approval: the forced status ends its create task too. */
async function endCreateTask(ctx: TaskContext, buy: BuyRow, target: string): Promise<void> {
  if (buy.status !== 'pending') return;
  const taskStatus =
    target === 'canceled' ? 'canceled' : target === 'rejected' ? 'rejected' : 'completed';
  await closeCreateTask(
    ctx,
    new TaskStore(ctx.schema),
    buy,
    taskStatus,
    `media buy ${target} (test controller)`,
  );
}

const TASK_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

const messageOf = (p: Record<string, unknown>) =>
  typeof p.message === 'string' ? { message: p.message } : {};

/** The caller's one-shot create directive (one per principal; a new one replaces it). */
async function putCreateArm(ctx: TaskContext, directive: ForcedCreateArm): Promise<void> {
  await putFixture(
    ctx.db,
    ctx.schema,
    {
      agent: 'sales',
      principalId: ctx.principal!.principal_id,
      account: SESSION,
      kind: CREATE_ARM_KIND,
      id: 'next',
    },
    { ...directive },
  );
}

/**
 * Registers the arm the caller's next create_media_buy answers with, the two the published
 * controller lists for it: `submitted` (the task envelope under the harness's task id) or
 * `input-required` (the buy waits for approval, `reason: APPROVAL_REQUIRED`, under the
 * call's own task id: the published arm carries no task_id, and one sent is refused).
 */
export async function forceCreateMediaBuyArm(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  if (p.arm !== 'submitted' && p.arm !== 'input-required') {
    return refuse('INVALID_PARAMS', 'params.arm must be submitted or input-required');
  }
  if (p.message !== undefined && (typeof p.message !== 'string' || p.message.length > 2000)) {
    return refuse('INVALID_PARAMS', 'params.message must be a string of at most 2000 characters');
  }
  if (p.arm === 'input-required') {
    if (p.task_id !== undefined) {
      return refuse('INVALID_PARAMS', 'params.task_id is for the submitted arm only');
    }
    await putCreateArm(ctx, { arm: 'input-required', ...messageOf(p) });
    return {
      success: true,
      forced: { arm: 'input-required' },
      message: 'the next create_media_buy of this sandbox account answers input-required',
    };
  }
  const taskId = str(p.task_id);
  if (!taskId || !TASK_ID.test(taskId)) {
    return refuse(
      'INVALID_PARAMS',
      'params.task_id (1-128 of letters, digits, _ . : -) is required for the submitted arm',
    );
  }
  const { rowCount } = await ctx.db.query(`SELECT 1 FROM ${ctx.schema}.tasks WHERE task_id = $1`, [
    taskId,
  ]);
  if (rowCount) return refuse('INVALID_PARAMS', `task id ${taskId} is already in use`);
  await putCreateArm(ctx, { arm: 'submitted', task_id: taskId, ...messageOf(p) });
  return {
    success: true,
    forced: { arm: 'submitted', task_id: taskId },
    message: `the next create_media_buy of this sandbox account answers submitted as ${taskId}`,
  };
}

/**
 * Brings the reported spend of each package of the caller's buy up to `spend_percentage`
 * of its budget (booked in the last hour reports cover, impressions at the package rate);
 * spend already past that stays as it is.
 */
export async function simulateBudgetSpend(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const pct = p.spend_percentage;
  if (typeof pct !== 'number' || !Number.isFinite(pct) || pct < 0 || pct > 100) {
    return refuse('INVALID_PARAMS', 'params.spend_percentage must be a number from 0 to 100');
  }
  const mediaBuyId = str(p.media_buy_id);
  if (!mediaBuyId) {
    return refuse(
      'INVALID_PARAMS',
      'params.media_buy_id is required: this seller simulates budget spend per media buy',
    );
  }
  const buy = await callersBuy(ctx, mediaBuyId);
  if (!buy) return refuse('NOT_FOUND', `no sandbox media buy ${mediaBuyId.slice(0, 100)}`, null);
  const packages = await loadPackages(ctx.db, ctx.schema, [buy.media_buy_id]);
  if (packages.length === 0) {
    return refuse('INVALID_PARAMS', `media buy ${mediaBuyId} has no package to spend`);
  }
  const hour = 3_600_000;
  const at = new Date(
    Math.max(
      Math.floor(ctx.clock.nowMs() / hour) * hour - hour,
      Math.floor(buy.start_at.getTime() / hour) * hour,
    ),
  );
  let added = 0;
  let total = 0;
  for (const pkg of packages) {
    const { rows } = await ctx.db.query<{ s: number }>(
      `SELECT coalesce(sum(spend), 0)::float8 AS s FROM ${ctx.schema}.delivery WHERE package_id = $1`,
      [pkg.package_id],
    );
    const spent = Number(rows[0]!.s);
    const want = round2((pkg.budget * pct) / 100);
    const more = Math.max(0, round2(want - spent));
    total += Math.max(spent, want);
    if (more === 0) continue;
    added += more;
    const impressions = pkg.rate > 0 ? Math.round((more / pkg.rate) * 1000) : 0;
    await ctx.db.query(
      `INSERT INTO ${ctx.schema}.delivery (package_id, media_buy_id, hour, impressions, clicks, spend)
       VALUES ($1, $2, $3, $4, 0, $5)
       ON CONFLICT (package_id, hour) DO UPDATE SET
         impressions = ${ctx.schema}.delivery.impressions + EXCLUDED.impressions,
         spend = ${ctx.schema}.delivery.spend + EXCLUDED.spend`,
      [pkg.package_id, buy.media_buy_id, at, impressions, more],
    );
  }
  const money = (amount: number) => ({ amount: round2(amount), currency: buy.currency });
  return {
    success: true,
    simulated: { spend_percentage: pct, reported_spend: money(added) },
    cumulative: { reported_spend: money(total) },
    message: `media buy ${mediaBuyId} spent to ${pct}% of its budget`,
  };
}
