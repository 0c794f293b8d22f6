/**
 * A2A JSON-RPC (official SDK, `@a2a-js/sdk` 1.x) at `/a2a`, both protocol versions of the
 * spec's Versioning section on one endpoint and one dispatcher:
 * - 1.0 (the SDK's native version): methods `SendMessage`, `GetTask`; data parts without
 *   `kind`, `ROLE_USER`, `TASK_STATE_*`, `configuration.taskPushNotificationConfig`.
 * - 0.3 through the SDK's compat layer (`LegacyJsonRpcTransportHandler`): methods
 *   `message/send`, `tasks/get`; `kind`-tagged parts, `role: user`, lowercase states,
 *   `configuration.pushNotificationConfig`.
 * The version is the JSON-RPC method family (the two do not overlap), so a client needs
 * no header. The skill call is the first data part: `{skill, input}` (1.0) or
 * `{skill, parameters}` (0.3); each version also accepts the other's key, so a client
 * mixing them is served rather than refused.
 *
 * The transport push config is handed to the dispatcher as `a2aPush` exactly as it came on
 * the wire (the version's own shape), so the sender builds A2A-shaped webhooks of that
 * version; the AdCP `push_notification_config` stays inside the skill parameters.
 *
 * Answers are A2A Tasks, the call's own (two lifecycles, `a2a-task-shape.ts`): state
 * completed, the AdCP response or the spec's error body (its `status` the AdCP one) in
 * `artifacts[0].parts[0]`, an asynchronous answer's work named by
 * `artifacts[0].metadata.adcp_task_id`. Every call's task is stored (its answer as sent),
 * so every task id handed out can be polled; the task methods (get, cancel,
 * push-notification configs) are in `a2a-tasks.ts`. Auth is decided before the SDK sees a
 * request: refusals are HTTP 401/403 (`auth-challenge.ts`).
 */
import { randomUUID } from 'node:crypto';
import {
  type AgentCard,
  type CancelTaskRequest,
  type DeleteTaskPushNotificationConfigRequest,
  type GetTaskPushNotificationConfigRequest,
  type ListTaskPushNotificationConfigsRequest,
  type ListTaskPushNotificationConfigsResponse,
  type Message,
  type SendMessageRequest,
  type Task,
  type TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import {
  JsonRpcTransportHandler,
  ServerCallContext,
  type A2ARequestHandler,
} from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { isLegacyJsonRpcMethod, isV1JsonRpcMethod } from '@a2a-js/sdk/compat/v0_3';
import type { Middleware } from 'koa';
import { TaskError } from '../../shared/errors/task-errors.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { AgentKind, Principal } from '../auth/principal.js';
import { checkResponse, releasesOf } from '../protocol/index.js';
import { taskStatusOf } from '../runtime/answer-status.js';
import type { TaskDispatcher } from '../runtime/dispatcher.js';
import { contextOf, errorResponse, internalError, taskError } from '../runtime/errors.js';
import type { TaskResult, TaskStatus } from '../runtime/types.js';
import {
  cancelTask,
  deletePushConfig,
  getPushConfig,
  getTask,
  listPushConfigs,
  setPushConfig,
  type TaskCall,
} from './a2a-tasks.js';
import { ANSWERED, taskOf } from './a2a-task-shape.js';
import { coreAgentCard } from './agent-card.js';
import { isAuthRefusal, writeAuthRefusal } from './auth-challenge.js';
import { readJsonBody } from './body.js';
import { credentialsOf, dryRunOf, type HeaderBag } from './request-headers.js';

export type A2aVersion = '0.3' | '1.0';

export interface A2aEndpointOptions {
  agent: AgentKind;
  dispatcher: TaskDispatcher;
  /** The agent's origin, e.g. `http://127.0.0.1:3001`. */
  baseUrl: string;
  /** Card name, e.g. `svc sales agent`. */
  name: string;
  logger?: Logger;
  /** RFC 9728 metadata URL named in auth challenges (when the origin runs OAuth). */
  resourceMetadata?: string;
}

/** Per-call state the Koa route puts in the SDK's ServerCallContext. */
interface CallState {
  version: A2aVersion;
  headers: HeaderBag;
  /** `configuration.pushNotificationConfig` (0.3) / `taskPushNotificationConfig` (1.0) raw. */
  rawPushConfig: unknown;
  /** Admitted before the SDK saw the request (`dispatcher.admit`); undefined: not yet. */
  principal?: Principal | null;
  /** The JSON-RPC params as sent (push-config methods keep the version's own shape). */
  rawParams?: Record<string, unknown> | undefined;
}
const CALL_STATE = 'agent.call';

/** The skill call carried by the message: the first data part's `skill` and parameters. */
export function skillCallOf(
  message: Message | undefined,
  version: A2aVersion,
): { skill: string; params: unknown } {
  const parts = message?.parts ?? [];
  const data = parts.find((p) => p.content?.$case === 'data')?.content?.value as unknown;
  const own = version === '1.0' ? 'input' : 'parameters';
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    throw taskError(
      'VALIDATION_ERROR',
      `the message needs a data part {skill, ${own}} naming the task and its parameters`,
      { field: 'message.parts' },
    );
  }
  const d = data as Record<string, unknown>;
  if (typeof d.skill !== 'string' || d.skill.length === 0) {
    throw taskError('VALIDATION_ERROR', 'the data part needs a skill (the task name)', {
      field: 'message.parts.data.skill',
    });
  }
  const other = own === 'input' ? 'parameters' : 'input';
  const params = d[own] !== undefined ? d[own] : d[other] !== undefined ? d[other] : {};
  return { skill: d.skill, params };
}

class AgentA2aHandler implements A2ARequestHandler {
  constructor(private readonly o: A2aEndpointOptions) {}

  private call(context: ServerCallContext): CallState {
    const s = context.state.get(CALL_STATE) as CallState | undefined;
    if (!s) throw new Error('A2A call state missing');
    return s;
  }

  /** The response-validation hook (off in production; strict in the test suite). */
  private check(skill: string, body: unknown, params: unknown): void {
    const mode = this.o.dispatcher.settings.validateResponses;
    // A pinned request is answered in its release's shapes (releasesOf), an unpinned one in
    // shapes every release accepts.
    checkResponse(mode, this.o.agent, skill, body, {
      releases: releasesOf(params),
      ...(this.o.logger ? { logger: this.o.logger } : {}),
    });
  }

  async getAgentCard(): Promise<AgentCard> {
    return coreAgentCard(this.o);
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return coreAgentCard(this.o);
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Task> {
    const call = this.call(context);
    const message = params.message;
    // Without a client contextId the task id serves (as the sender and tasks/get do).
    const givenContext = message?.contextId || undefined;
    let skill = 'unknown';
    let skillParams: unknown;
    let result: TaskResult;
    try {
      const parsed = skillCallOf(message, call.version);
      skill = parsed.skill;
      skillParams = parsed.params;
      const push = call.rawPushConfig;
      result = await this.o.dispatcher.invoke({
        agent: this.o.agent,
        task: skill,
        params: parsed.params,
        credentials: credentialsOf(call.headers),
        dryRun: dryRunOf(call.headers),
        transport: 'a2a',
        ...(call.principal !== undefined ? { principal: call.principal } : {}),
        ...(push !== undefined && push !== null
          ? {
              a2aPush: {
                version: call.version,
                config: push,
                ...(givenContext ? { contextId: givenContext } : {}),
              },
            }
          : {}),
      });
    } catch (err) {
      result =
        err instanceof TaskError
          ? err
          : internalError(err, this.o.logger ?? this.o.dispatcher.logger, { skill });
    }
    const taskId = `task_${randomUUID()}`;
    if (result instanceof TaskError) {
      const { body } = errorResponse(result, {
        brand: this.o.dispatcher.brand,
        context: contextOf(skillParams),
      });
      this.check(skill, body, skillParams);
      await this.record(call, { taskId, skill, status: 'failed', body, params: skillParams });
      return taskOf({
        taskId,
        contextId: givenContext ?? taskId,
        skill,
        state: ANSWERED,
        body,
        text: `${result.code}: ${result.message}`,
      });
    }
    this.check(skill, result, skillParams);
    const { status, task_id: asyncId, ...rest } = result;
    const body = { status, ...(asyncId ? { task_id: asyncId } : {}), ...rest };
    // The task's status, which a 3.0 buy answer's top-level status is not (answer-status.ts).
    const taskStatus = taskStatusOf(result);
    await this.record(call, { taskId, skill, status: taskStatus, body, params: skillParams });
    return taskOf({
      taskId,
      contextId: givenContext ?? asyncId ?? taskId,
      skill,
      state: ANSWERED,
      body,
      taskStatus,
      ...(asyncId ? { adcpTaskId: asyncId } : {}),
    });
  }

  /**
   * Stores the call's answer under the task id it is handed out with, so `tasks/get`
   * finds every task id this endpoint gives (not for dry runs: they keep nothing). A
   * failure to store is logged; the answer stands.
   */
  private async record(
    call: CallState,
    a: { taskId: string; skill: string; status: TaskStatus; body: object; params: unknown },
  ): Promise<void> {
    let dry = false;
    try {
      dry = dryRunOf(call.headers);
    } catch {
      // A malformed X-Dry-Run was refused by the call itself; nothing ran.
    }
    if (dry) return;
    try {
      await this.o.dispatcher.recordAnswered({
        taskId: a.taskId,
        agent: this.o.agent,
        task: a.skill,
        principal: call.principal ?? null,
        status: a.status,
        body: a.body as Record<string, unknown>,
        context: contextOf(a.params),
      });
    } catch (err) {
      this.o.logger?.error({ err, skill: a.skill }, 'a2a answer not stored for tasks/get');
    }
  }

  private ops(context: ServerCallContext): TaskCall {
    const call = this.call(context);
    return {
      dispatcher: this.o.dispatcher,
      agent: this.o.agent,
      principal: call.principal ?? null,
      version: call.version,
      rawParams: call.rawParams,
    };
  }

  getTask(params: { id: string }, context: ServerCallContext): Promise<Task> {
    return getTask(this.ops(context), params.id);
  }

  cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    return cancelTask(this.ops(context), params);
  }

  createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return setPushConfig(this.ops(context), params);
  }

  getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return getPushConfig(this.ops(context), params);
  }

  listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
    context: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    return listPushConfigs(this.ops(context), params.taskId);
  }

  deleteTaskPushNotificationConfig(
    params: DeleteTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<void> {
    return deletePushConfig(this.ops(context), params);
  }

  // Not offered: streaming and task lists.
  sendMessageStream(): AsyncGenerator<never> {
    throw new UnsupportedOperationError({ message: 'streaming is not offered; poll the task' });
  }
  resubscribe(): AsyncGenerator<never> {
    throw new UnsupportedOperationError({ message: 'streaming is not offered; poll the task' });
  }
  async listTasks(): Promise<never> {
    throw new UnsupportedOperationError({ message: 'tasks are not listed; poll by id' });
  }
}

function rpcError(id: unknown, code: number, message: string, data?: Record<string, unknown>) {
  return {
    jsonrpc: '2.0',
    id: typeof id === 'string' || typeof id === 'number' ? id : null,
    error: { code, message, ...(data ? { data } : {}) },
  };
}

const SEND_METHODS = new Set([
  'message/send',
  'message/stream',
  'SendMessage',
  'SendStreamingMessage',
]);

/** The skill and parameters named by a raw send request (either version's part shape). */
function rawSkillCall(params: Record<string, unknown> | undefined): {
  skill: string;
  params: unknown;
} {
  const message = params?.message as { parts?: unknown } | undefined;
  const parts = Array.isArray(message?.parts) ? (message.parts as unknown[]) : [];
  for (const part of parts) {
    let data = (part as { data?: unknown } | null)?.data as Record<string, unknown> | undefined;
    if (data && typeof data.data === 'object' && data.skill === undefined) {
      data = data.data as Record<string, unknown>;
    }
    if (data && typeof data === 'object' && typeof data.skill === 'string') {
      return { skill: data.skill, params: data.input ?? data.parameters };
    }
  }
  return { skill: '', params: undefined };
}

/**
 * Admission before the SDK sees the request: the credentials must hold for any method,
 * and a skill call must be allowed for the caller (tier, permission). Without credentials
 * only A2A's own methods pass (a public skill's call, the caller's anonymous tasks): any
 * other JSON-RPC method asks for credentials first, as the dispatcher does for a task name
 * it has no public task of, so an anonymous probe learns nothing. Refusals are the
 * transport's 401/403; the principal is handed on so the call does not authenticate again.
 */
async function admitA2a(
  o: A2aEndpointOptions,
  headers: HeaderBag,
  rpc: Record<string, unknown>,
): Promise<{ principal?: Principal | null; refusal?: TaskError; params?: unknown }> {
  const isSend = typeof rpc.method === 'string' && SEND_METHODS.has(rpc.method);
  const call = isSend
    ? rawSkillCall(rpc.params as Record<string, unknown> | undefined)
    : { skill: '', params: undefined };
  try {
    const principal = await o.dispatcher.admit(o.agent, call.skill, credentialsOf(headers));
    const method = rpc.method;
    if (
      !principal &&
      typeof method === 'string' &&
      !isLegacyJsonRpcMethod(method) &&
      !isV1JsonRpcMethod(method)
    ) {
      throw taskError(
        'AUTH_REQUIRED',
        `the ${o.agent} agent's A2A endpoint serves no method "${method.slice(0, 100)}" without credentials; send credentials (Authorization or X-API-Key)`,
      );
    }
    return { principal, params: call.params };
  } catch (err) {
    if (err instanceof TaskError && isAuthRefusal(err))
      return { refusal: err, params: call.params };
    throw err;
  }
}

/** Koa middleware for `POST /a2a` (JSON-RPC, both versions). */
export function a2aMiddleware(o: A2aEndpointOptions): Middleware {
  const handler = new AgentA2aHandler(o);
  const v1 = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);
  return async (ctx) => {
    if (ctx.method !== 'POST') {
      ctx.status = 405;
      ctx.set('Allow', 'POST');
      ctx.body = rpcError(null, -32600, 'A2A JSON-RPC: POST only');
      return;
    }
    const read = await readJsonBody(ctx.req);
    if (!read.ok) {
      ctx.status = read.status;
      ctx.body = read.code
        ? rpcError(null, -32602, read.message, { code: read.code, field: read.field })
        : rpcError(null, read.status === 413 ? -32600 : -32700, read.message);
      return;
    }
    const body = read.value;
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      ctx.body = rpcError(null, -32600, 'a JSON-RPC request object is expected');
      return;
    }
    const rpc = body as Record<string, unknown>;
    const version: A2aVersion = isLegacyJsonRpcMethod(rpc.method) ? '0.3' : '1.0';
    const params = rpc.params as Record<string, unknown> | undefined;
    const configuration = params?.configuration as Record<string, unknown> | undefined;
    const rawPushConfig =
      configuration && typeof configuration === 'object'
        ? version === '0.3'
          ? configuration.pushNotificationConfig
          : configuration.taskPushNotificationConfig
        : undefined;
    const admitted = await admitA2a(o, ctx.req.headers, rpc);
    if (admitted.refusal) {
      ctx.respond = false;
      writeAuthRefusal(ctx.res, admitted.refusal, {
        brand: o.dispatcher.brand,
        rpcId: rpc.id,
        context: contextOf(admitted.params),
        realm: new URL('/a2a', o.baseUrl).toString(),
        resourceMetadata: o.resourceMetadata,
      });
      return;
    }
    const state = new Map<string, unknown>();
    state.set(CALL_STATE, {
      version,
      headers: ctx.req.headers,
      rawPushConfig,
      principal: admitted.principal ?? null,
      rawParams: params,
    } satisfies CallState);
    const context = new ServerCallContext({
      requestedVersion: version === '0.3' ? '0.3' : '1.0',
      state,
    });
    const out = await (version === '0.3' ? legacy : v1).handle(rpc, context);
    if (Symbol.asyncIterator in Object(out)) {
      ctx.body = rpcError(rpc.id, -32004, 'streaming is not offered; poll the task');
      return;
    }
    ctx.type = 'application/json';
    ctx.body = out;
  };
}
