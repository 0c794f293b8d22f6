/**
 * The task error this part throws for refused registrations and inputs: `TaskError` from
 * `shared/errors/task-errors.ts` (code, HTTP status and `field` are the contract).
 */
import { TaskError, type TaskErrorCode } from '../../shared/errors/task-errors.js';

export { TaskError };

/** A registration or call refused, naming the field at fault. */
export function channelError(code: TaskErrorCode, message: string, field: string): TaskError {
  return new TaskError(code, message, { field });
}
