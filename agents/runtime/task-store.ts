/**
 * Durable tasks: one row per asynchronous task, its status, the registrations to notify
 * and where the executor resumes. Every status change is written and its webhook enqueued
 * in the same transaction, so a change is never notified without being stored or stored
 * without being notified.
 */
import { randomUUID } from 'node:crypto';
import { isTerminalStatus, type WebhookTaskType } from '../../shared/envelope/task-status.js';
import { assertSchemaName, type PoolClient } from '../../shared/infra/pg.js';
import type { Principal } from '../auth/principal.js';
import { taskError } from './errors.js';
import type { A2aPush, AgentNotifications, StoredTask, TaskStatus } from './types.js';

export function newTaskId(): string {
  return `task_${randomUUID()}`;
}

export interface TaskChange {
  status: TaskStatus;
  result?: Record<string, unknown> | null;
  message?: string;
  /** Next executor run (virtual time); null stops scheduling. */
  nextRunAt?: Date | null;
  state?: Record<string, unknown>;
}

/** The polling view of a task (`get_task_status`). */
export interface TaskView {
  task_id: string;
  task_type: string;
  status: TaskStatus;
  created_at: string;
  updated_at: string;
  message?: string;
  result?: Record<string, unknown>;
  /**
   * The task is the record of an answer given at once (`insertAnswered`): its result is the
   * answer as sent. Transport-only (A2A reads it); not part of the polling body.
   */
  answered?: true;
}

/** `state` of a task stored by `insertAnswered` (it never runs, so the column is free). */
const ANSWERED_STATE = { answered_at_once: true };

export class TaskStore {
  readonly schema: string;
  constructor(schema: string) {
    this.schema = assertSchemaName(schema);
  }

  async insert(
    db: PoolClient,
    task: Omit<StoredTask, 'created_at' | 'updated_at' | 'attempts' | 'step'>,
  ) {
    await db.query(
      `INSERT INTO ${this.schema}.tasks
        (task_id, agent, task_type, principal_id, status, initial_status, params, state, result,
         message, push_notification_config, a2a_push, context, resource_id, next_run_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15)`,
      [
        task.task_id,
        task.agent,
        task.task_type,
        task.principal_id,
        task.status,
        task.initial_status,
        task.params,
        task.state,
        task.result,
        task.message,
        task.push_notification_config,
        task.a2a_push,
        task.context,
        task.resource_id,
        task.next_run_at,
      ],
    );
  }

  async get(
    db: Pick<PoolClient, 'query'>,
    taskId: string,
    forUpdate = false,
  ): Promise<StoredTask | null> {
    const { rows } = await db.query<StoredTask>(
      `SELECT * FROM ${this.schema}.tasks WHERE task_id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
      [taskId],
    );
    return rows[0] ?? null;
  }

  /**
   * A task answered at once (A2A hands every answer a task id), stored terminal so
   * `tasks/get` finds it like any other; nothing is scheduled or notified.
   */
  async insertAnswered(
    db: Pick<PoolClient, 'query'>,
    task: {
      task_id: string;
      agent: string;
      task_type: string;
      principal_id: string | null;
      status: TaskStatus;
      result: Record<string, unknown>;
      context: Record<string, unknown> | null;
    },
  ): Promise<void> {
    await db.query(
      `INSERT INTO ${this.schema}.tasks
        (task_id, agent, task_type, principal_id, status, initial_status, params, result, context, state)
       VALUES ($1, $2, $3, $4, $5, $5, '{}', $6, $7, $8)`,
      [
        task.task_id,
        task.agent,
        task.task_type,
        task.principal_id,
        task.status,
        task.result,
        task.context,
        ANSWERED_STATE,
      ],
    );
  }

  /** Replaces (or, with null, removes) the A2A transport push config of a task. */
  async setA2aPush(db: Pick<PoolClient, 'query'>, taskId: string, push: A2aPush | null) {
    await db.query(
      `UPDATE ${this.schema}.tasks SET a2a_push = $2, updated_at = now() WHERE task_id = $1`,
      [taskId, push],
    );
  }

  /**
   * The task if the principal owns it; REFERENCE_NOT_FOUND otherwise (no existence leak).
   * Without credentials (`principal` null) only tasks of no principal at `agent` are seen.
   */
  async view(
    db: Pick<PoolClient, 'query'>,
    taskId: string,
    principal: Principal | null,
    includeResult = true,
    agent?: string,
  ): Promise<TaskView> {
    const task = await this.owned(db, taskId, principal, agent);
    const view: TaskView = {
      task_id: task.task_id,
      task_type: task.task_type,
      status: task.status,
      created_at: task.created_at.toISOString(),
      updated_at: task.updated_at.toISOString(),
    };
    if (task.message) view.message = task.message;
    if (task.state?.answered_at_once === true) view.answered = true;
    if (task.result && (includeResult || isTerminalStatus(task.status))) view.result = task.result;
    return view;
  }

  /** The stored task if the principal may see it (see `view`); REFERENCE_NOT_FOUND otherwise. */
  async owned(
    db: Pick<PoolClient, 'query'>,
    taskId: string,
    principal: Principal | null,
    agent?: string,
  ): Promise<StoredTask> {
    const task =
      typeof taskId === 'string' && taskId.length <= 255 ? await this.get(db, taskId) : null;
    if (
      !task ||
      task.agent !== (principal?.agent ?? agent) ||
      (task.principal_id !== null && task.principal_id !== principal?.principal_id)
    ) {
      throw taskError(
        'REFERENCE_NOT_FOUND',
        `no task ${String(taskId).slice(0, 80)} for this principal`,
        {
          field: 'task_id',
        },
      );
    }
    return task;
  }

  /**
   * Applies a change inside `db`'s transaction. A change of status notifies once (nothing
   * for the same status again: one webhook per status change).
   */
  async transition(
    db: PoolClient,
    task: StoredTask,
    change: TaskChange,
    notifications: AgentNotifications,
  ): Promise<StoredTask> {
    if (isTerminalStatus(task.status)) {
      throw taskError('INVALID_STATE', `task ${task.task_id} is already ${task.status}`);
    }
    const { rows } = await db.query<StoredTask>(
      `UPDATE ${this.schema}.tasks
          SET status = $2, result = COALESCE($3, result), message = $4,
              next_run_at = $5, state = COALESCE($6, state), step = step + 1,
              attempts = 0, updated_at = now()
        WHERE task_id = $1 RETURNING *`,
      [
        task.task_id,
        change.status,
        change.result ?? null,
        change.message ?? null,
        isTerminalStatus(change.status) ? null : (change.nextRunAt ?? null),
        change.state ?? null,
      ],
    );
    const updated = rows[0]!;
    if (change.status !== task.status && task.task_type !== 'get_task_status') {
      await notifications.taskStatusChanged({
        taskId: task.task_id,
        taskType: task.task_type as WebhookTaskType,
        status: change.status,
        initialStatus: task.initial_status,
        ...(task.push_notification_config
          ? { pushNotificationConfig: task.push_notification_config }
          : {}),
        ...(task.a2a_push
          ? {
              a2aConfig: {
                version: task.a2a_push.version,
                config: task.a2a_push.config,
                ...(task.a2a_push.contextId ? { contextId: task.a2a_push.contextId } : {}),
              },
            }
          : {}),
        ...(task.context ? { context: task.context } : {}),
        ...(change.result !== undefined ? { result: change.result } : {}),
        ...(change.message !== undefined ? { message: change.message } : {}),
        ...(task.resource_id && task.agent === 'sales' ? { mediaBuyId: task.resource_id } : {}),
        ...(task.principal_id ? { principalId: task.principal_id } : {}),
        client: db,
      });
    }
    return updated;
  }

  /** Locks and returns up to `limit` tasks due at `now` that nobody else holds. */
  async claimDue(db: PoolClient, now: Date, limit: number): Promise<StoredTask[]> {
    const { rows } = await db.query<StoredTask>(
      `SELECT * FROM ${this.schema}.tasks
        WHERE next_run_at IS NOT NULL AND next_run_at <= $1
          AND status IN ('submitted', 'working')
        ORDER BY next_run_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
      [now, limit],
    );
    return rows;
  }

  async findByResource(db: Pick<PoolClient, 'query'>, resourceId: string, taskType: string) {
    const { rows } = await db.query<StoredTask>(
      `SELECT * FROM ${this.schema}.tasks WHERE resource_id = $1 AND task_type = $2
        ORDER BY created_at DESC`,
      [resourceId, taskType],
    );
    return rows;
  }

  /** A failed attempt of `advance`: back off, or fail the task after `maxAttempts`. */
  async recordAttemptFailure(db: PoolClient, taskId: string, retryAt: Date) {
    const { rows } = await db.query<{ attempts: number }>(
      `UPDATE ${this.schema}.tasks SET attempts = attempts + 1, next_run_at = $2
        WHERE task_id = $1 RETURNING attempts`,
      [taskId, retryAt],
    );
    return rows[0]?.attempts ?? 0;
  }
}
