/**
 * The test controller's discovery directives (published `comply_test_controller`
 * scenarios, 3.1+): force_get_products_arm registers the arm the caller's next brief-mode
 * get_products answers with (submitted under a given task id, or 3.2's GetProductsRejected
 * with a sanitized reason and suggestions), and force_task_completion completes such a
 * submitted discovery task with the result the harness gives (its webhook fires as any
 * task's completion does). Storyboards: media-buy get_products_async, get_products_rejected.
 */
import { isTerminalStatus } from '../../shared/envelope/task-status.js';
import { RELEASES, validateResponse } from '../protocol/index.js';
import { TaskStore } from '../runtime/task-store.js';
import type { TaskContext } from '../runtime/types.js';
import {
  GET_PRODUCTS_ARM_KIND,
  GET_SIGNALS_ARM_KIND,
  putFixture,
  SESSION,
  type ForcedGetProductsArm,
} from '../sandbox/fixtures.js';
import type { ControllerRequest } from './request.js';
import { refuse, str } from './replies.js';

const TASK_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/** A plain-text string of 1..max characters, or null. */
const text = (v: unknown, max: number): string | null =>
  typeof v === 'string' && v.length >= 1 && v.length <= max ? v : null;

/** The rejected arm's directive from the params, or the refusal's detail. */
function rejectedArm(p: Record<string, unknown>): ForcedGetProductsArm | string {
  if (p.task_id !== undefined) return 'params.task_id is for the submitted arm only';
  const reason = text(p.reason, 2000);
  if (!reason) return 'params.reason (1-2000 characters) is required for the rejected arm';
  if (p.suggestions === undefined) return { arm: 'rejected', reason };
  const list = p.suggestions;
  if (
    !Array.isArray(list) ||
    list.length < 1 ||
    list.length > 20 ||
    !list.every((x) => text(x, 1000) !== null)
  ) {
    return 'params.suggestions must be 1-20 strings of 1-1000 characters';
  }
  return { arm: 'rejected', reason, suggestions: list as string[] };
}

/** The submitted arm's directive from the params, or the refusal's detail. */
async function submittedArm(
  p: Record<string, unknown>,
  ctx: TaskContext,
): Promise<ForcedGetProductsArm | string> {
  const taskId = str(p.task_id);
  if (!taskId || !TASK_ID.test(taskId)) {
    return 'params.task_id (1-128 of letters, digits, _ . : -) is required for the submitted arm';
  }
  if (p.message !== undefined && text(p.message, 2000) === null) {
    return 'params.message must be a string of 1-2000 characters';
  }
  const { rowCount } = await ctx.db.query(`SELECT 1 FROM ${ctx.schema}.tasks WHERE task_id = $1`, [
    taskId,
  ]);
  if (rowCount) return `task id ${taskId} is already in use`;
  return {
    arm: 'submitted',
    task_id: taskId,
    ...(typeof p.message === 'string' ? { message: p.message } : {}),
  };
}

/** Keeps a forced arm for the caller's next request to `agent` (one per principal). */
function keepArm(
  ctx: TaskContext,
  agent: 'sales' | 'signals',
  kind: string,
  directive: Record<string, unknown>,
): Promise<void> {
  return putFixture(
    ctx.db,
    ctx.schema,
    { agent, principalId: ctx.principal!.principal_id, account: SESSION, kind, id: 'next' },
    directive,
  );
}

/**
 * force_get_products_arm: one directive per principal (a new one replaces it), taken by
 * the next brief-mode get_products of a sandbox account that can be answered with it
 * (wholesale and refine requests never take it; the rejected arm only a 3.2 request).
 */
export async function forceGetProductsArm(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const directive =
    p.arm === 'rejected'
      ? rejectedArm(p)
      : p.arm === 'submitted'
        ? await submittedArm(p, ctx)
        : 'params.arm must be submitted or rejected';
  if (typeof directive === 'string') return refuse('INVALID_PARAMS', directive);
  await keepArm(ctx, 'sales', GET_PRODUCTS_ARM_KIND, directive);
  const { arm } = directive;
  return {
    success: true,
    forced: directive.arm === 'submitted' ? { arm, task_id: directive.task_id } : directive,
    message:
      arm === 'submitted'
        ? `the next brief-mode get_products of this sandbox account answers submitted as ${directive.task_id}`
        : 'the next 3.2 brief-mode get_products of this sandbox account answers rejected',
  };
}

/**
 * force_get_signals_arm (the signal agent's; published arm: submitted only): one
 * directive per principal, taken by the next brief-mode get_signals naming an account (a
 * wholesale feed request never takes it), answered submitted under the harness's task id.
 */
export async function forceGetSignalsArm(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const directive =
    p.arm === 'submitted' ? await submittedArm(p, ctx) : 'params.arm must be submitted';
  if (typeof directive === 'string') return refuse('INVALID_PARAMS', directive);
  await keepArm(ctx, 'signals', GET_SIGNALS_ARM_KIND, directive);
  const taskId = directive.arm === 'submitted' ? directive.task_id : '';
  return {
    success: true,
    forced: { arm: 'submitted', task_id: taskId },
    message: `the next brief-mode get_signals of this sandbox account answers submitted as ${taskId}`,
  };
}

/** The discovery tasks force_task_completion completes (one per agent). */
const COMPLETABLE: Record<string, string> = { sales: 'get_products', signals: 'get_signals' };

const MAX_RESULT_BYTES = 256 * 1024;

/** The first issue of the payload against every release's answer of the task, or null. */
function resultIssue(result: Record<string, unknown>, agent: string, task: string): string | null {
  const issues = RELEASES.map((r) => validateResponse(agent as never, task, result, r) ?? []);
  if (issues.some((list) => list.length === 0)) return null;
  const first = issues[0]![0]!;
  return `${first.pointer || '/'} ${first.message}`;
}

/**
 * force_task_completion: the caller's submitted get_products task completes with the
 * harness's payload, which must be a completed get_products answer of some release
 * (INVALID_PARAMS otherwise, as the published scenario says). The task's webhook fires
 * with it, and get_task_status answers it. Another principal's task is NOT_FOUND; a buy's
 * create task follows its buy (force_media_buy_status), not this scenario.
 */
export async function forceTaskCompletion(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const taskId = str(p.task_id);
  if (!taskId || !TASK_ID.test(taskId)) {
    return refuse(
      'INVALID_PARAMS',
      'params.task_id (1-128 of letters, digits, _ . : -) is required',
    );
  }
  const result = p.result;
  if (!result || typeof result !== 'object' || Array.isArray(result)) {
    return refuse('INVALID_PARAMS', "params.result must be an object: the task's completed answer");
  }
  if (Buffer.byteLength(JSON.stringify(result)) > MAX_RESULT_BYTES) {
    return refuse('INVALID_PARAMS', 'params.result is over 256 KB');
  }
  const store = new TaskStore(ctx.schema);
  const task = await store.get(ctx.db, taskId, true);
  if (!task || task.agent !== ctx.agent || task.principal_id !== ctx.principal!.principal_id) {
    return refuse('NOT_FOUND', `no task ${taskId} of this sandbox account`, null);
  }
  const completable = COMPLETABLE[ctx.agent];
  if (task.task_type !== completable) {
    return refuse(
      'INVALID_PARAMS',
      `task ${taskId} is a ${task.task_type} task; only a submitted ${completable} task completes this way`,
    );
  }
  if (isTerminalStatus(task.status)) {
    return refuse('INVALID_TRANSITION', `task ${taskId} is already ${task.status}`, task.status);
  }
  const payload = { ...(result as Record<string, unknown>), status: 'completed' };
  const issue = resultIssue(payload, ctx.agent, completable);
  if (issue) {
    return refuse(
      'INVALID_PARAMS',
      `params.result is not a completed ${completable} answer: ${issue}`,
    );
  }
  const done =
    completable === 'get_products' ? 'product discovery completed' : 'signal discovery completed';
  await store.transition(
    ctx.db,
    task,
    { status: 'completed', result: payload, message: done },
    ctx.notifications,
  );
  return { success: true, previous_state: task.status, current_state: 'completed' };
}
