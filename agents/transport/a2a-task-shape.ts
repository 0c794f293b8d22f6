/**
 * AdCP answers as A2A Tasks (SDK 1.x types; the 0.3 compat layer converts on the wire):
 * terminal states carry the body in `artifacts[0].parts[0]` (led by a text part when the
 * body's top-level status is not the task's), interim states in `status.message.parts[0]`
 * (Events rule 3); AdCP task statuses map to A2A states.
 *
 * Two lifecycles: the answer to a `message/send` is the transport call's own task, which
 * ended (`ANSWERED`: completed, whatever the AdCP status in its body, refusals included);
 * the AdCP work of an asynchronous answer is the task named by `artifact.metadata.
 * adcp_task_id` (= the body's `task_id`), whose A2A state follows the work (`STATE_OF`).
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import type { TaskStatus } from '../runtime/types.js';

export const STATE_OF: Record<TaskStatus, TaskState> = {
  submitted: TaskState.TASK_STATE_SUBMITTED,
  working: TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
  // Supplement §6.2: an AdCP `rejected` result rides inside a completed A2A task.
  rejected: TaskState.TASK_STATE_COMPLETED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
  unknown: TaskState.TASK_STATE_UNSPECIFIED,
} as Record<TaskStatus, TaskState>;

/** The A2A state of a `message/send` answer: the call completed (the AdCP status is in the body). */
export const ANSWERED = TaskState.TASK_STATE_COMPLETED;

export const TERMINAL = new Set<TaskState>([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

function dataPart(value: Record<string, unknown>): Part {
  return {
    content: { $case: 'data', value },
    metadata: undefined,
    filename: '',
    mediaType: 'application/json',
  };
}

function textPart(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' };
}

function agentMessage(taskId: string, contextId: string, parts: Part[]): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** An AdCP answer (or refusal) as an A2A Task. */
export function taskOf(input: {
  taskId: string;
  contextId: string;
  skill: string;
  state: TaskState;
  body: Record<string, unknown>;
  text?: string;
  timestamp?: string;
  /** The asynchronous AdCP task an answer hands out (`artifact.metadata.adcp_task_id`). */
  adcpTaskId?: string;
  /** The answer's AdCP task status, when the body's top-level `status` may be another. */
  taskStatus?: TaskStatus;
}): Task {
  const { taskId, contextId, state, body } = input;
  const terminal = TERMINAL.has(state);
  const parts = [dataPart(body)];
  // Clients read the first part's data `status` as the AdCP task status (adcp-client#899)
  // and the last data part as the response (supplement §6.2). A body whose top-level
  // status is not the task's (a 3.0 buy answer: the buy's, adcp#4895) is led by a text
  // part naming the task status, so the task's own state (completed) is read instead.
  const artifactParts =
    input.taskStatus !== undefined && body.status !== undefined && body.status !== input.taskStatus
      ? [textPart(`${input.skill} ${input.taskStatus}`), ...parts]
      : parts;
  return {
    id: taskId,
    contextId,
    status: {
      state,
      message: terminal
        ? input.text
          ? agentMessage(taskId, contextId, [textPart(input.text)])
          : undefined
        : agentMessage(taskId, contextId, input.text ? [...parts, textPart(input.text)] : parts),
      timestamp: input.timestamp ?? new Date().toISOString(),
    },
    artifacts: terminal
      ? [
          {
            artifactId: `${taskId}-result`,
            name: input.skill,
            description: '',
            parts: artifactParts,
            metadata: input.adcpTaskId ? { adcp_task_id: input.adcpTaskId } : undefined,
            extensions: [],
          },
        ]
      : [],
    history: [],
    metadata: { skill: input.skill },
  };
}
