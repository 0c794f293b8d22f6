/**
 * TaskDispatcher: one entry point for every transport. It resolves the task, checks the
 * tier and credentials, validates parameters and webhook registrations, honours request
 * idempotency, runs the handler in one transaction (rolled back on refusal or dry run)
 * and records asynchronous tasks for the executor.
 */
import { nearestNames } from '../../shared/text/nearest.js';
import { PushNotificationConfigSchema } from '../../shared/envelope/channel-config.js';
import { isTerminalStatus, type TaskStatus } from '../../shared/envelope/task-status.js';
import { TaskError } from '../../shared/errors/task-errors.js';
import { assertSchemaName, type Pool, type PoolClient } from '../../shared/infra/pg.js';
import { fingerprint } from '../../shared/json/canonical.js';
import type { Authenticator } from '../auth/authenticate.js';
import { hasPermission, type AgentKind, type Principal } from '../auth/principal.js';
import { replayedAnswer, storedAnswer, taskStatusOf, withTaskStatus } from './answer-status.js';
import type { AgentClock } from './clock.js';
import { brandedCode, internalError, taskError } from './errors.js';
import type { Logger } from '../../shared/infra/logger.js';
import { silentNotifications } from './silent-notifications.js';
import type { AgentSettings } from './settings.js';
import type { TaskRegistry } from './registry.js';
import { newTaskId, TaskStore, type TaskView } from './task-store.js';
import type {
  A2aPush,
  AgentNotifications,
  HandlerOutcome,
  InvokeRequest,
  RequestMeta,
  TaskContext,
  TaskDefinition,
  TaskResult,
  TaskSuccess,
} from './types.js';
import { fieldPath, issueToError } from './validation.js';
import { checkVersionPin, pinnedRelease, servedRelease } from './versions.js';

export interface TaskDispatcherOptions {
  pool: Pool;
  schema: string;
  registry: TaskRegistry;
  authenticator: Authenticator;
  notifications: AgentNotifications;
  clock: AgentClock;
  settings: AgentSettings;
  /** Where faults go, with the correlation id their INTERNAL_ERROR answer carries. */
  logger?: Logger;
}

const IDEMPOTENCY_KEY = /^[A-Za-z0-9_.:-]{8,255}$/;

/**
 * Other names of our tasks: the reference SDK polls with a tool/skill named `tasks/get`
 * (`tasks_get` where `/` is not allowed); both are `get_task_status`.
 */
const TASK_ALIASES: Record<string, string> = {
  'tasks/get': 'get_task_status',
  tasks_get: 'get_task_status',
};

/** The request as its fingerprint sees it (supplement §4.8: credentials are excluded). */
function canonicalRequest(task: string, params: Record<string, unknown>): string {
  const rest: Record<string, unknown> = { ...params };
  // The protocol's exclusion list: the key itself, the per-request echo `context` (an
  // object; a retry carries a new correlation id) and a refreshed governance_context.
  delete rest.idempotency_key;
  delete rest.governance_context;
  if (rest.context && typeof rest.context === 'object' && !Array.isArray(rest.context)) {
    delete rest.context;
  }
  const push = rest.push_notification_config;
  if (push && typeof push === 'object' && !Array.isArray(push)) {
    const copy = { ...(push as Record<string, unknown>) };
    const auth = copy.authentication;
    if (auth && typeof auth === 'object' && !Array.isArray(auth)) {
      const a = { ...(auth as Record<string, unknown>) };
      delete a.credentials;
      copy.authentication = a;
    }
    rest.push_notification_config = copy;
  }
  return fingerprint({ task, params: rest });
}

export class TaskDispatcher {
  readonly tasks: TaskStore;
  readonly registry: TaskRegistry;
  private readonly options: TaskDispatcherOptions;
  private readonly schema: string;

  constructor(options: TaskDispatcherOptions) {
    this.options = options;
    this.schema = assertSchemaName(options.schema);
    this.registry = options.registry;
    this.tasks = new TaskStore(this.schema);
  }

  /** Runs one task call. Refusals come back as TaskError (not thrown); faults are thrown. */
  async invoke(req: InvokeRequest): Promise<TaskResult> {
    try {
      const answer = await this.run(req);
      // 3.2 version negotiation: an answer to a request that pins a release names the
      // release it was served in (unpinned callers get the seller's default, as before).
      const served = servedRelease(req.params, this.brand, this.options.settings.protocolVersion);
      if (served !== null) (answer as Record<string, unknown>)[`${this.brand}_version`] = served;
      return answer;
    } catch (err) {
      if (err instanceof TaskError) return err;
      // The sender's registration refusals (RegistrationError, NotificationInputError)
      // are the request's fault: INVALID_REQUEST naming the field.
      const e = err as {
        name?: string;
        code?: string;
        id?: string;
        field?: string;
        message?: string;
      };
      if (e?.name === 'RegistrationError' || e?.name === 'NotificationInputError') {
        return taskError('INVALID_REQUEST', e.message ?? 'webhook registration refused', {
          ...(e.field ? { field: e.field } : {}),
        });
      }
      // Anything else is our fault: the caller learns a correlation id, never the fault.
      return internalError(err, this.options.logger, {
        agent: req.agent,
        task: String(req.task).slice(0, 100),
      });
    }
  }

  /** Where the transports log faults (with the correlation id they answer). */
  get logger(): Logger | undefined {
    return this.options.logger;
  }

  /** Authenticates credentials at an agent (transports use it for polling endpoints). */
  authenticate(agent: AgentKind, credentials: InvokeRequest['credentials']) {
    return this.options.authenticator.authenticate(agent, credentials);
  }

  /** What the agents know of where they run (transports read the response-check mode). */
  get settings(): AgentSettings {
    return this.options.settings;
  }

  /** The brand word of the wire names (`<brand>_error`, `<brand>_major_version`). */
  get brand(): string {
    return this.options.settings.profile.brand;
  }

  /**
   * Admission of a task call before it runs: the credentials hold and the task's tier and
   * permission allow the caller. Transports call it first so an auth refusal is an HTTP
   * 401/403 rather than a task result; they hand the principal on to `invoke`. A task the
   * agent does not have needs credentials too (with them, its call answers UNSUPPORTED_FEATURE).
   * A send without a skill (`task` '') only authenticates. Throws TaskError.
   */
  async admit(
    agent: AgentKind,
    task: string,
    credentials: InvokeRequest['credentials'],
  ): Promise<Principal | null> {
    const principal = await this.options.authenticator.authenticate(agent, credentials);
    const def = this.definition(agent, task);
    if (def) this.authorize(def, principal);
    else if (!principal && task !== '') {
      // Only the agent's public tasks answer without credentials; any other name asks for
      // them first (as a protected task would), so an anonymous probe learns nothing.
      throw taskError(
        'AUTH_REQUIRED',
        `the ${agent} agent has no public task "${String(task).slice(0, 100)}"; send credentials (Authorization or X-API-Key)`,
      );
    }
    return principal;
  }

  /**
   * The polling view of a task the principal owns; TaskError REFERENCE_NOT_FOUND otherwise.
   * `agent`: where a caller without credentials polls (they see tasks of no principal).
   */
  async getTask(
    taskId: string,
    principal: Principal | null,
    includeResult = true,
    agent?: AgentKind,
  ): Promise<TaskView> {
    return this.tasks.view(this.options.pool, taskId, principal, includeResult, agent);
  }

  /**
   * Stores a task that was answered at once under the id the transport handed out (A2A
   * gives every answer a task), so `tasks/get` finds it; `body` is the answer as sent.
   */
  async recordAnswered(input: {
    taskId: string;
    agent: AgentKind;
    task: string;
    principal: Principal | null;
    status: TaskStatus;
    body: Record<string, unknown>;
    context?: Record<string, unknown> | undefined;
  }): Promise<void> {
    await this.tasks.insertAnswered(this.options.pool, {
      task_id: input.taskId,
      agent: input.agent,
      task_type: input.task.slice(0, 100),
      principal_id: input.principal?.principal_id ?? null,
      status: input.status,
      result: input.body,
      context: input.context ?? null,
    });
  }

  /** The A2A push config of a task the principal owns (null: none). TaskError otherwise. */
  async a2aPushConfig(
    taskId: string,
    principal: Principal | null,
    agent: AgentKind,
  ): Promise<A2aPush | null> {
    return (await this.tasks.owned(this.options.pool, taskId, principal, agent)).a2a_push;
  }

  /**
   * Registers (replacing any) or, with null, removes the A2A push config of a task the
   * principal owns; a registration the sender would refuse is INVALID_REQUEST naming it.
   */
  async setA2aPushConfig(
    taskId: string,
    principal: Principal | null,
    agent: AgentKind,
    push: A2aPush | null,
  ): Promise<void> {
    await this.tasks.owned(this.options.pool, taskId, principal, agent);
    if (push) {
      try {
        this.options.notifications.validateRegistration?.({
          a2aConfig: { version: push.version, config: push.config },
        });
      } catch (err) {
        const e = err as { field?: string; message?: string };
        throw taskError('INVALID_REQUEST', e.message ?? 'push notification config refused', {
          field: e.field ?? 'pushNotificationConfig',
        });
      }
    }
    await this.tasks.setA2aPush(this.options.pool, taskId, push);
  }

  /**
   * Cancels a non-terminal task the principal owns (A2A `tasks/cancel`): the task's own
   * cancel step runs (e.g. the pending media buy is canceled), then the task becomes
   * `canceled` and that change is notified. Resolves to the task's view; refusals are
   * TaskError (REFERENCE_NOT_FOUND, INVALID_STATE), returned like `invoke`'s.
   */
  async cancelTask(taskId: string, principal: Principal | null): Promise<TaskView | TaskError> {
    const db = await this.options.pool.connect();
    try {
      await db.query('BEGIN');
      await this.tasks.view(db, taskId, principal);
      const task = (await this.tasks.get(db, taskId, true))!;
      if (isTerminalStatus(task.status)) {
        throw taskError('INVALID_STATE', `task is already ${task.status}`, { field: 'task_id' });
      }
      const def =
        this.registry.get(task.agent, task.task_type) ??
        this.registry.list(task.agent).find((d) => d.webhookTaskType === task.task_type);
      const ctx: TaskContext = {
        agent: task.agent,
        principal,
        db,
        dryRun: false,
        clock: this.options.clock,
        notifications: this.options.notifications,
        settings: this.options.settings,
        schema: this.schema,
        taskId: task.task_id,
        request: { transport: 'a2a' },
      };
      await def?.cancel?.(task, ctx);
      await this.tasks.transition(
        db,
        task,
        { status: 'canceled', message: 'canceled by the buyer' },
        this.options.notifications,
      );
      await db.query('COMMIT');
      return await this.tasks.view(this.options.pool, taskId, principal);
    } catch (err) {
      await db.query('ROLLBACK').catch(() => {});
      if (err instanceof TaskError) return err;
      throw err;
    } finally {
      db.release();
    }
  }

  private definition(agent: AgentKind, task: string): TaskDefinition | undefined {
    return this.registry.get(agent, Object.hasOwn(TASK_ALIASES, task) ? TASK_ALIASES[task]! : task);
  }

  private async run(req: InvokeRequest): Promise<TaskSuccess> {
    const def = this.definition(req.agent, req.task);
    if (!def) throw this.unknownTask(req);
    const principal =
      req.principal !== undefined
        ? req.principal
        : await this.options.authenticator.authenticate(req.agent, req.credentials);
    this.authorize(def, principal);

    const raw = req.params ?? {};
    if (typeof raw !== 'object' || Array.isArray(raw)) {
      throw taskError('VALIDATION_ERROR', 'task parameters must be a JSON object');
    }
    const params = checkVersionPin(raw as Record<string, unknown>, this.brand);
    // The call's task id, made first: a push registration without operation_id gets it.
    const taskId = newTaskId();
    const meta = this.requestMeta(req, params, taskId);
    const release = pinnedRelease(raw as Record<string, unknown>, this.brand);
    if (release !== null) meta.release = release;
    const parsed = def.schema.safeParse(params);
    if (!parsed.success) {
      throw issueToError(parsed.error.issues);
    }
    const idempotencyKey = this.idempotencyKey(def, params, principal);
    const dryRun = req.dryRun === true;
    if (def.readOnly) {
      return this.runReadOnly(def, req, principal, meta, parsed.data, dryRun, taskId);
    }

    const db = await this.options.pool.connect();
    try {
      await db.query('BEGIN');
      if (idempotencyKey && principal) {
        const replay = await this.claimIdempotency(db, def, principal, idempotencyKey, params);
        if (replay) {
          await db.query('ROLLBACK');
          return replayAnswer(replay, meta);
        }
      }
      // A dry run fires nothing, but its registrations are checked like a real call's.
      const notifications = dryRun ? this.dryRunNotifications() : this.options.notifications;
      const ctx = this.context(req, principal, db, dryRun, notifications, meta, taskId);
      const outcome = await def.handle(parsed.data, ctx);
      const response: TaskSuccess = { status: outcome.status };
      if (outcome.async && !isTerminalStatus(outcome.status)) {
        response.task_id = outcome.async.taskId ?? ctx.taskId;
        await this.tasks.insert(
          db,
          asyncTaskRow(
            { req, def, principal, params, meta },
            response.task_id,
            outcome.status,
            outcome.async,
            ctx.clock,
          ),
        );
      }
      Object.assign(response, outcome.body);
      // A 3.0 buy answer's top-level status is the buy's (answer-status.ts).
      withTaskStatus(response, outcome.status);
      if (meta.context !== undefined) response.context = meta.context;
      if (dryRun) response.dry_run = true;
      if (idempotencyKey && principal && !dryRun) {
        await db.query(
          `UPDATE ${this.schema}.idempotency SET response = $4
            WHERE agent = $1 AND principal_id = $2 AND idempotency_key = $3`,
          [req.agent, principal.principal_id, idempotencyKey, storedAnswer(response)],
        );
      }
      await db.query(dryRun ? 'ROLLBACK' : 'COMMIT');
      return response;
    } catch (err) {
      await db.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      db.release();
    }
  }

  /** UNSUPPORTED_FEATURE for a task the agent does not have, the nearest names as a hint. */
  private unknownTask(req: InvokeRequest): TaskError {
    const name = String(req.task).slice(0, 100);
    const near = nearestNames(
      name,
      this.registry.list(req.agent).map((d) => d.name),
    );
    return taskError(
      'UNSUPPORTED_FEATURE',
      `the ${req.agent} agent has no task "${name}"` +
        (near.length ? `; did you mean ${near.join(', ')}?` : ''),
      near.length ? { suggestion: near.join(', ') } : {},
    );
  }

  private async runReadOnly(
    def: TaskDefinition,
    req: InvokeRequest,
    principal: Principal | null,
    meta: RequestMeta,
    params: unknown,
    dryRun: boolean,
    taskId: string,
  ): Promise<TaskSuccess> {
    const pool = this.options.pool;
    // Pool queries in the shape handlers use; nothing here may BEGIN or lock.
    const db = {
      query: (text: string, values?: unknown[]) => pool.query(text, values),
    } as unknown as PoolClient;
    const ctx = this.context(req, principal, db, dryRun, silentNotifications, meta, taskId);
    const outcome = await def.handle(params, ctx);
    const response = withTaskStatus<TaskSuccess>(
      { status: outcome.status, ...outcome.body },
      outcome.status,
    );
    // A read that continues in the background (the test controller's forced submitted
    // discovery): its task is stored, in one statement, like a mutating task's.
    if (outcome.async && !isTerminalStatus(outcome.status) && !dryRun) {
      response.task_id = outcome.async.taskId ?? taskId;
      const call = { req, def, principal, params: params as Record<string, unknown>, meta };
      await this.tasks.insert(
        db,
        asyncTaskRow(call, response.task_id, outcome.status, outcome.async, ctx.clock),
      );
    }
    if (meta.context !== undefined) response.context = meta.context;
    if (dryRun) response.dry_run = true;
    return response;
  }

  /** What a handler sees of its call; its task id in case it turns out asynchronous. */
  private dryRunNotifications(): AgentNotifications {
    const real = this.options.notifications;
    return real.validateRegistration
      ? { ...silentNotifications, validateRegistration: (i) => real.validateRegistration!(i) }
      : silentNotifications;
  }

  private context(
    req: InvokeRequest,
    principal: Principal | null,
    db: PoolClient,
    dryRun: boolean,
    notifications: AgentNotifications,
    meta: RequestMeta,
    taskId: string,
  ): TaskContext {
    return {
      agent: req.agent,
      principal,
      db,
      dryRun,
      clock: this.options.clock,
      notifications,
      settings: this.options.settings,
      schema: this.schema,
      taskId,
      request: meta,
    };
  }

  private authorize(def: TaskDefinition, principal: Principal | null): void {
    if (principal && !principal.agentAccess) {
      throw taskError(
        brandedCode('AGENT_ACCESS_DENIED', this.brand),
        `principal is not authorized for the ${def.agent} agent`,
      );
    }
    const auth = def.auth;
    if (auth.tier === 'public') return;
    if (auth.tier === 'authenticated' && !principal) {
      throw taskError(
        'AUTH_REQUIRED',
        `${def.name} requires credentials (Authorization or X-API-Key)`,
      );
    }
    const permission = auth.permission;
    if (principal && permission && !hasPermission(principal, permission)) {
      throw taskError(
        brandedCode('INSUFFICIENT_PERMISSIONS', this.brand),
        `${def.name} requires the ${permission.permission} permission on ${permission.resource}`,
      );
    }
  }

  /**
   * Context, push registrations and the A2A push config of a call. A registration without
   * `operation_id` (the published 3.x buyer sends none) gets the call's task id as its
   * operation_id: unique per invocation, as operation_id promises, and the id the buyer
   * correlates by anyway.
   */
  private requestMeta(
    req: InvokeRequest,
    params: Record<string, unknown>,
    taskId: string,
  ): RequestMeta {
    const meta: RequestMeta = { transport: req.transport };
    if (params.context !== undefined) {
      if (
        typeof params.context !== 'object' ||
        params.context === null ||
        Array.isArray(params.context)
      ) {
        throw taskError('VALIDATION_ERROR', 'context must be an object', { field: 'context' });
      }
      meta.context = params.context as Record<string, unknown>;
    }
    const push = params.push_notification_config;
    if (push !== undefined) {
      const parsed = PushNotificationConfigSchema.safeParse(push);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        const field = fieldPath(['push_notification_config', ...issue.path]);
        throw taskError('INVALID_REQUEST', `${field}: ${issue.message}`, { field });
      }
      meta.pushNotificationConfig =
        parsed.data.operation_id === undefined
          ? { ...(push as Record<string, unknown>), operation_id: taskId }
          : (push as Record<string, unknown>);
    }
    if (req.a2aPush !== undefined) meta.a2aPush = req.a2aPush;
    if (meta.pushNotificationConfig || meta.a2aPush) {
      try {
        this.options.notifications.validateRegistration?.({
          ...(meta.pushNotificationConfig
            ? { pushNotificationConfig: meta.pushNotificationConfig }
            : {}),
          ...(meta.a2aPush
            ? { a2aConfig: { version: meta.a2aPush.version, config: meta.a2aPush.config } }
            : {}),
        });
      } catch (err) {
        const e = err as { field?: string; message?: string };
        const field =
          meta.pushNotificationConfig && e.field && !e.field.startsWith('configuration')
            ? e.field.startsWith('push_notification_config')
              ? e.field
              : `push_notification_config.${e.field}`
            : (e.field ?? 'configuration');
        throw taskError('INVALID_REQUEST', e.message ?? 'webhook registration refused', { field });
      }
    }
    return meta;
  }

  private idempotencyKey(
    def: TaskDefinition,
    params: Record<string, unknown>,
    principal: Principal | null,
  ): string | null {
    const key = params.idempotency_key;
    if (key === undefined || !def.mutating) return null;
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
      throw taskError('VALIDATION_ERROR', 'idempotency_key must be 8-255 of [A-Za-z0-9_.:-]', {
        field: 'idempotency_key',
      });
    }
    return principal ? key : null;
  }

  /**
   * Claims the key in this transaction (a concurrent twin waits on the row lock), or
   * returns the stored response of an earlier identical request.
   */
  private async claimIdempotency(
    db: PoolClient,
    def: TaskDefinition,
    principal: Principal,
    key: string,
    params: Record<string, unknown>,
  ): Promise<TaskSuccess | null> {
    const fp = canonicalRequest(def.name, params);
    const now = this.options.clock.now();
    const expires = new Date(now.getTime() + this.options.settings.idempotencyTtlSeconds * 1000);
    // An expired record no longer binds the key.
    await db.query(
      `DELETE FROM ${this.schema}.idempotency
        WHERE agent = $1 AND principal_id = $2 AND idempotency_key = $3 AND expires_at <= $4`,
      [def.agent, principal.principal_id, key, now],
    );
    const inserted = await db.query(
      `INSERT INTO ${this.schema}.idempotency (agent, principal_id, idempotency_key, task, fingerprint, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING 1`,
      [def.agent, principal.principal_id, key, def.name, fp, expires],
    );
    if (inserted.rowCount === 1) return null;
    const { rows } = await db.query<{ fingerprint: string; response: TaskSuccess | null }>(
      `SELECT fingerprint, response FROM ${this.schema}.idempotency
        WHERE agent = $1 AND principal_id = $2 AND idempotency_key = $3`,
      [def.agent, principal.principal_id, key],
    );
    const row = rows[0];
    if (!row || row.fingerprint !== fp || !row.response) {
      throw taskError(
        'IDEMPOTENCY_CONFLICT',
        'idempotency_key was already used with a different request; use a new key',
        { field: 'idempotency_key' },
      );
    }
    return row.response;
  }
}

/** A replayed answer echoes this request's context, not the first one's. */
function replayAnswer(replay: TaskSuccess, meta: RequestMeta): TaskSuccess {
  const { context: _first, ...stored } = replay;
  const replayed = replayedAnswer(stored as TaskSuccess);
  return withTaskStatus(
    {
      ...replayed,
      ...(meta.context !== undefined ? { context: meta.context } : {}),
      replayed: true,
    },
    taskStatusOf(replayed),
  );
}

/** The call a task row records: who asked which task, with what. */
interface AsyncCall {
  req: InvokeRequest;
  def: TaskDefinition;
  principal: Principal | null;
  params: Record<string, unknown>;
  meta: RequestMeta;
}

/** The row of a task that continues in the background (polled, advanced by the runner). */
function asyncTaskRow(
  call: AsyncCall,
  taskId: string,
  status: TaskStatus,
  async: NonNullable<HandlerOutcome['async']>,
  clock: AgentClock,
): Parameters<TaskStore['insert']>[1] {
  const { req, def, principal, params, meta } = call;
  return {
    task_id: taskId,
    agent: req.agent,
    task_type: def.webhookTaskType ?? def.name,
    principal_id: principal?.principal_id ?? null,
    status,
    initial_status: status,
    params,
    state: async.state ?? {},
    result: async.result ?? null,
    message: async.message ?? null,
    push_notification_config: meta.pushNotificationConfig ?? null,
    a2a_push: meta.a2aPush ?? null,
    context: meta.context ?? null,
    resource_id: async.resourceId ?? null,
    next_run_at: async.runAfterMs === null ? null : new Date(clock.nowMs() + async.runAfterMs),
  };
}
