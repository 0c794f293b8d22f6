/**
 * The A2A task methods on our durable tasks, both versions (the 0.3 compat layer hands
 * them over in 1.0 types): `tasks/get` / `GetTask` (every answer's task id, including
 * answers given at once, which the endpoint stores), `tasks/cancel` / `CancelTask` (the
 * task's own cancel step, then `canceled` with its webhook), and the push-notification
 * config set/get/list/delete of a task. A task has at most one A2A push config: `set`
 * replaces it (the sender notifies that one); ids name it for get/delete.
 *
 * A task the credentials cannot see is "task not found" (-32001); a task that already
 * ended is "not cancelable" (-32002); a config the sender refuses, or an unknown config
 * id, is "invalid params" (-32602) with the reason.
 */
import { randomUUID } from 'node:crypto';
import {
  TaskState,
  type CancelTaskRequest,
  type DeleteTaskPushNotificationConfigRequest,
  type GetTaskPushNotificationConfigRequest,
  type ListTaskPushNotificationConfigsResponse,
  type Task,
  type TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
} from '@a2a-js/sdk/errors';
import { TaskError } from '../../shared/errors/task-errors.js';
import type { Logger } from '../../shared/infra/logger.js';
import { internalError } from '../runtime/errors.js';
import type { AgentKind, Principal } from '../auth/principal.js';
import type { TaskDispatcher } from '../runtime/dispatcher.js';
import type { TaskView } from '../runtime/task-store.js';
import type { A2aPush } from '../runtime/types.js';
import { ANSWERED, STATE_OF, taskOf } from './a2a-task-shape.js';

export interface TaskCall {
  dispatcher: TaskDispatcher;
  agent: AgentKind;
  principal: Principal | null;
  version: '0.3' | '1.0';
  /** The JSON-RPC params as they came on the wire (the version's own config shape). */
  rawParams: Record<string, unknown> | undefined;
}

/** Our refusals as the A2A errors a client of either version understands. */
function a2aError(err: unknown, logger?: Logger): unknown {
  if (!(err instanceof TaskError)) {
    // A fault of ours: the A2A SDK would answer its text; the caller gets the fixed
    // message and a correlation id, the fault goes to the log under that id.
    const fault = internalError(err, logger);
    return new Error(
      `INTERNAL_ERROR: ${fault.message} (correlation_id ${String(fault.details?.correlation_id)})`,
    );
  }
  const options = { message: `${err.code}: ${err.message}`, metadata: { code: err.code } };
  if (err.code === ('REFERENCE_NOT_FOUND' as string)) return new TaskNotFoundError(options);
  if (err.code === ('INVALID_STATE' as string)) return new TaskNotCancelableError(options);
  return new RequestMalformedError(options);
}

async function guarded<T>(logger: Logger | undefined, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw a2aError(err, logger);
  }
}

/**
 * A stored task's polling view as an A2A Task: the record of an answer given at once is
 * that answer again (the call's task, completed, its body as sent); an asynchronous task's
 * A2A state follows its AdCP status.
 */
export function taskOfView(view: TaskView): Task {
  if (view.answered && view.result) {
    const asyncId = typeof view.result.task_id === 'string' ? view.result.task_id : undefined;
    return taskOf({
      taskId: view.task_id,
      contextId: asyncId ?? view.task_id,
      skill: view.task_type,
      state: ANSWERED,
      body: view.result,
      taskStatus: view.status,
      timestamp: view.updated_at,
      ...(asyncId ? { adcpTaskId: asyncId } : {}),
    });
  }
  const body: Record<string, unknown> = view.result
    ? { status: view.status, task_id: view.task_id, ...view.result }
    : { status: view.status, task_id: view.task_id };
  return taskOf({
    taskId: view.task_id,
    contextId: view.task_id,
    skill: view.task_type,
    state: STATE_OF[view.status] ?? TaskState.TASK_STATE_UNSPECIFIED,
    body,
    ...(view.message ? { text: view.message } : {}),
    timestamp: view.updated_at,
  });
}

export function getTask(c: TaskCall, id: string): Promise<Task> {
  return guarded(c.dispatcher.logger, async () =>
    taskOfView(await c.dispatcher.getTask(id, c.principal, true, c.agent)),
  );
}

export function cancelTask(c: TaskCall, params: CancelTaskRequest): Promise<Task> {
  return guarded(c.dispatcher.logger, async () => {
    // Owned first, so a task of someone else is "not found", never "not cancelable".
    await c.dispatcher.getTask(params.id, c.principal, false, c.agent);
    const out = await c.dispatcher.cancelTask(params.id, c.principal);
    if (out instanceof TaskError) throw out;
    return taskOfView(out);
  });
}

/** The config as A2A returns it: the url, id and token; authentication without credentials. */
function coreConfig(taskId: string, push: A2aPush): TaskPushNotificationConfig {
  const c = (push.config ?? {}) as Record<string, unknown>;
  const auth = (c.authentication ?? {}) as { schemes?: unknown; scheme?: unknown };
  const scheme =
    push.version === '0.3'
      ? Array.isArray(auth.schemes)
        ? String(auth.schemes[0] ?? '')
        : ''
      : typeof auth.scheme === 'string'
        ? auth.scheme
        : '';
  return {
    tenant: '',
    id: typeof c.id === 'string' ? c.id : '',
    taskId,
    url: typeof c.url === 'string' ? c.url : '',
    token: typeof c.token === 'string' ? c.token : '',
    authentication: scheme ? { scheme, credentials: '' } : undefined,
  };
}

/** The wire config of a set request in its version's shape, with an id. */
function wireConfig(c: TaskCall): Record<string, unknown> {
  const raw =
    c.version === '0.3' ? c.rawParams?.pushNotificationConfig : (c.rawParams ?? undefined);
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new TaskError('INVALID_REQUEST', 'a push notification config object is required', {
      field: c.version === '0.3' ? 'pushNotificationConfig' : 'params',
    });
  }
  const config: Record<string, unknown> = { ...(raw as Record<string, unknown>) };
  delete config.tenant;
  if (typeof config.id !== 'string' || config.id === '') config.id = randomUUID();
  return config;
}

export function setPushConfig(
  c: TaskCall,
  params: TaskPushNotificationConfig,
): Promise<TaskPushNotificationConfig> {
  return guarded(c.dispatcher.logger, async () => {
    const push: A2aPush = { version: c.version, config: wireConfig(c) };
    await c.dispatcher.setA2aPushConfig(params.taskId, c.principal, c.agent, push);
    return coreConfig(params.taskId, push);
  });
}

async function ownConfig(c: TaskCall, taskId: string, id: string): Promise<A2aPush> {
  const push = await c.dispatcher.a2aPushConfig(taskId, c.principal, c.agent);
  const current = push ? coreConfig(taskId, push) : null;
  if (!push || !current || (id !== '' && current.id !== id)) {
    throw new TaskError(
      'INVALID_REQUEST',
      `task ${taskId} has no push notification config ${id}`.trim(),
      {
        field: 'pushNotificationConfigId',
      },
    );
  }
  return push;
}

export function getPushConfig(
  c: TaskCall,
  params: GetTaskPushNotificationConfigRequest,
): Promise<TaskPushNotificationConfig> {
  return guarded(c.dispatcher.logger, async () =>
    coreConfig(params.taskId, await ownConfig(c, params.taskId, params.id)),
  );
}

export function listPushConfigs(
  c: TaskCall,
  taskId: string,
): Promise<ListTaskPushNotificationConfigsResponse> {
  return guarded(c.dispatcher.logger, async () => {
    const push = await c.dispatcher.a2aPushConfig(taskId, c.principal, c.agent);
    return { configs: push ? [coreConfig(taskId, push)] : [], nextPageToken: '' };
  });
}

export function deletePushConfig(
  c: TaskCall,
  params: DeleteTaskPushNotificationConfigRequest,
): Promise<void> {
  return guarded(c.dispatcher.logger, async () => {
    await ownConfig(c, params.taskId, params.id);
    await c.dispatcher.setA2aPushConfig(params.taskId, c.principal, c.agent, null);
  });
}
