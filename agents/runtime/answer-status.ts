/**
 * The AdCP task status of an answer whose top-level `status` is not the task's: a buyer
 * pinned to 3.0 reads create/update_media_buy's buy status there (the 3.0 schema; 3.1
 * keeps it deprecated, adcp#4895), so an answered cancel says `status: canceled` though the
 * task completed. The task status rides beside the body, never on the wire, for the
 * transports that carry it apart from the body: A2A's task state and artifact (a client
 * reads `artifacts[0].parts[0].data.status` as the task status) and its `tasks/get` record.
 */
import type { TaskStatus } from '../../shared/envelope/task-status.js';
import type { TaskSuccess } from './types.js';

const TASK_STATUS = Symbol('answer.taskStatus');

/** Where a stored answer (idempotency replay) keeps the task status; stripped on replay. */
const STORED_KEY = '$task_status';

/** Marks the answer's task status when its top-level `status` is another (off the wire). */
export function withTaskStatus<T extends TaskSuccess>(answer: T, taskStatus: TaskStatus): T {
  if (answer.status !== taskStatus) {
    Object.defineProperty(answer, TASK_STATUS, { value: taskStatus, enumerable: false });
  }
  return answer;
}

/** The answer's AdCP task status (its top-level `status` unless marked otherwise). */
export function taskStatusOf(answer: TaskSuccess): TaskStatus {
  const marked = (answer as { [TASK_STATUS]?: TaskStatus })[TASK_STATUS];
  return marked ?? answer.status;
}

/** The answer as the idempotency table stores it (the task status kept when marked). */
export function storedAnswer(answer: TaskSuccess): Record<string, unknown> {
  const status = taskStatusOf(answer);
  return status === answer.status ? answer : { ...answer, [STORED_KEY]: status };
}

/** A stored answer as it is replayed: the wire body, its task status marked again. */
export function replayedAnswer(stored: TaskSuccess): TaskSuccess {
  const { [STORED_KEY]: status, ...answer } = stored;
  return typeof status === 'string'
    ? withTaskStatus(answer as TaskSuccess, status as TaskStatus)
    : (answer as TaskSuccess);
}
