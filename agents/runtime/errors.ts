/**
 * Agent-side refusals. The spec's codes come from `shared/errors/task-errors.ts`; the
 * 404-class codes for unknown ids (the spec names the status, not the code) and a few
 * state conflicts are added here with the names the real protocol uses, carried by the
 * same `TaskError` class so transports format every refusal alike.
 */
import {
  TaskError,
  type TaskErrorCode,
  type TaskErrorOptions,
} from '../../shared/errors/task-errors.js';

export const AGENT_ERROR_STATUS = {
  /** A task name the agent does not have. */
  UNKNOWN_TASK: 404,
  TASK_NOT_FOUND: 404,
  PRODUCT_NOT_FOUND: 404,
  MEDIA_BUY_NOT_FOUND: 404,
  PACKAGE_NOT_FOUND: 404,
  CREATIVE_NOT_FOUND: 404,
  ACCOUNT_NOT_FOUND: 404,
  /** Format id not defined by the creative agent (spec 404 row). */
  FORMAT_NOT_SUPPORTED: 404,
  /** The resource's state does not allow the change (e.g. updating a canceled buy). */
  INVALID_STATE: 409,
} as const satisfies Record<string, number>;

export type AgentErrorCode = keyof typeof AGENT_ERROR_STATUS;
export type AnyTaskErrorCode = TaskErrorCode | AgentErrorCode;

/** A TaskError with a spec code or one of the agent codes above. */
export function taskError(
  code: AnyTaskErrorCode,
  message: string,
  options: TaskErrorOptions = {},
): TaskError {
  const status = (AGENT_ERROR_STATUS as Record<string, number>)[code];
  return new TaskError(code as TaskErrorCode, message, {
    ...options,
    ...(status !== undefined && options.status === undefined ? { status } : {}),
  });
}

export { TaskError };

/**
 * Several refusals at once (the signal agent's `{errors: [...]}`): the first is the
 * headline (code, status); all of them go in the body.
 */
export class TaskErrors extends TaskError {
  readonly items: TaskError[];
  constructor(items: TaskError[]) {
    const first = items[0];
    if (!first) throw new RangeError('TaskErrors needs at least one error');
    super(first.code, first.message, {
      status: first.status,
      ...(first.field !== undefined ? { field: first.field } : {}),
      ...(first.suggestion !== undefined ? { suggestion: first.suggestion } : {}),
    });
    this.items = items;
  }

  override toSignalErrorsBody() {
    return { errors: this.items.map((e) => e.toSignalItem()) };
  }
}

/** How a transport answers a refusal: the HTTP status and the agent's error shape. */
export function errorResponse(
  agent: 'sales' | 'creative' | 'signals',
  err: TaskError,
): { status: number; body: Record<string, unknown> } {
  return {
    status: err.status,
    body: (agent === 'signals' ? err.toSignalErrorsBody() : err.toErrorBody()) as unknown as Record<
      string,
      unknown
    >,
  };
}
