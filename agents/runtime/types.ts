/**
 * The task runtime's vocabulary: task definitions (what the registry holds), the context
 * a handler runs in, what it returns, and the notification seam (the sender's
 * NotificationCore, reached only through the methods named here).
 */
import type { z } from 'zod';
import type { TaskError } from '../../shared/errors/task-errors.js';
import type { TaskStatus, WebhookTaskType } from '../../shared/envelope/task-status.js';
import type { PoolClient } from '../../shared/infra/pg.js';
import type { AgentKind, Principal, RequiredPermission } from '../auth/principal.js';
import type { AgentClock } from './clock.js';
import type { AgentSettings } from './settings.js';
import type { NotificationApi } from '../../sender/index.js';

export type { TaskStatus };

/** The sender's NotificationCore as the task handlers call it (declared by the sender). */
export type AgentNotifications = NotificationApi;

export type AuthTier =
  /** Anyone; credentials, when sent, are still checked. */
  | { tier: 'public' }
  /** Anyone; a principal with the permission gets the full answer (get_products). */
  | { tier: 'public-limited'; permission: RequiredPermission }
  | { tier: 'authenticated'; permission?: RequiredPermission };

export interface A2aPush {
  version: '0.3' | '1.0';
  /** `configuration.pushNotificationConfig` (0.3) or `taskPushNotificationConfig` (1.0). */
  config: unknown;
  /** The A2A contextId; defaults to the task id. */
  contextId?: string;
}

export interface RequestMeta {
  transport: 'mcp' | 'a2a';
  /** The request's top-level `context`, echoed verbatim. */
  context?: Record<string, unknown>;
  pushNotificationConfig?: Record<string, unknown>;
  a2aPush?: A2aPush;
  /**
   * The release the buyer pinned (`3.0`, `3.1`, `3.2`; versions.ts pinnedRelease), absent
   * when it pinned none. Lets a task answer a 3.0 buyer in the 3.0 shape where a later
   * release renamed a member (create/update_media_buy's buy status, adcp#4895).
   */
  release?: string;
}

export interface TaskContext {
  agent: AgentKind;
  principal: Principal | null;
  /** The call's transaction; rolled back on a refusal and on dry runs. */
  db: PoolClient;
  dryRun: boolean;
  clock: AgentClock;
  /** No-op during dry runs. */
  notifications: AgentNotifications;
  settings: AgentSettings;
  /** The agents' database schema. */
  schema: string;
  /** The id the task gets if it turns out asynchronous (so resources can point at it). */
  taskId: string;
  request: RequestMeta;
}

/** What a handler returns: the response body and, for async tasks, how it continues. */
export interface HandlerOutcome {
  status: TaskStatus;
  body: Record<string, unknown>;
  /** Present when the task continues in the background (status non-terminal). */
  async?: {
    /** Virtual ms until the executor calls `advance`; null waits for an outside event. */
    runAfterMs: number | null;
    state?: Record<string, unknown>;
    resourceId?: string;
    /**
     * The task's id when it is not the call's own (`ctx.taskId`): the test controller's
     * forced submitted arm names the task id the next create must answer with.
     */
    taskId?: string;
    /** The task's result and message from the start (an input-required first answer). */
    result?: Record<string, unknown>;
    message?: string;
  };
}

export interface StoredTask {
  task_id: string;
  agent: AgentKind;
  task_type: string;
  principal_id: string | null;
  status: TaskStatus;
  initial_status: TaskStatus;
  step: number;
  params: Record<string, unknown>;
  state: Record<string, unknown>;
  result: Record<string, unknown> | null;
  message: string | null;
  push_notification_config: Record<string, unknown> | null;
  a2a_push: A2aPush | null;
  context: Record<string, unknown> | null;
  resource_id: string | null;
  next_run_at: Date | null;
  attempts: number;
  created_at: Date;
  updated_at: Date;
}

/** One step of a background task; null: nothing to do yet (look again later). */
export interface Advance {
  status: TaskStatus;
  result?: Record<string, unknown>;
  message?: string;
  /** Virtual ms until the next `advance`; null (default) stops scheduling. */
  runAfterMs?: number | null;
  state?: Record<string, unknown>;
}

export interface TaskDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  /** One line for humans (tool lists, skill docs); each task states its own. */
  description: string;
  agent: AgentKind;
  schema: S;
  auth: AuthTier;
  /** Spec rule 9, for documentation and the capability document. */
  expectedDuration: string;
  mode: 'sync' | 'async';
  /** Mutating tasks honour `idempotency_key` and dry runs. */
  mutating: boolean;
  /**
   * Reads only, one statement at a time: runs without a transaction on pool queries, so
   * a call whose data is cached never checks out a connection.
   */
  readOnly?: boolean;
  /** `task_type` of webhooks; set on tasks that can be asynchronous. */
  webhookTaskType?: WebhookTaskType;
  /** The signal agent answers errors as `{errors: [...]}`. */
  errorShape: 'single' | 'signal';
  handle(params: z.output<S>, ctx: TaskContext): Promise<HandlerOutcome>;
  /** Background progression of an async task (runs in its own transaction). */
  advance?(task: StoredTask, ctx: TaskContext): Promise<Advance | null>;
  /** Undo what the task started when the buyer cancels it (A2A `tasks/cancel`). */
  cancel?(task: StoredTask, ctx: TaskContext): Promise<void>;
}

/** A successful answer: task status, `task_id` when it continues, then the response. */
export type TaskSuccess = { status: TaskStatus; task_id?: string } & Record<string, unknown>;
export type TaskResult = TaskSuccess | TaskError;

export interface Credentials {
  /** The `Authorization` header value. */
  authorization?: string;
  /** The `X-API-Key` header value. */
  apiKey?: string;
}

export interface InvokeRequest {
  agent: AgentKind;
  task: string;
  params: unknown;
  credentials: Credentials;
  dryRun?: boolean;
  transport: 'mcp' | 'a2a';
  a2aPush?: A2aPush;
  /** Already admitted by the transport (`dispatcher.admit`): not authenticated again. */
  principal?: Principal | null;
}
