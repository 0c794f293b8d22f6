/**
 * The background executor: advances asynchronous tasks whose time has come, one task per
 * transaction, and runs periodic jobs (delivery simulation, auto-approval). All state is
 * in PostgreSQL, so a restarted process resumes where the last one stopped; several
 * processes can run it at once (rows are claimed with SKIP LOCKED).
 */
import { TaskError } from '../../shared/errors/task-errors.js';
import type { Logger } from '../../shared/infra/logger.js';
import { silentLogger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { AgentClock } from './clock.js';
import type { TaskRegistry } from './registry.js';
import type { AgentSettings } from './settings.js';
import { TaskStore } from './task-store.js';
import type { AgentNotifications, StoredTask, TaskContext } from './types.js';

export interface PeriodicJob {
  name: string;
  run(): Promise<unknown>;
}

export interface TaskExecutorOptions {
  pool: Pool;
  schema: string;
  registry: TaskRegistry;
  notifications: AgentNotifications;
  clock: AgentClock;
  settings: AgentSettings;
  logger?: Logger;
  /** Real ms between polls (default 500). */
  pollIntervalMs?: number;
  /** Tasks one poll advances at most (default 100). */
  batchSize?: number;
  /** Attempts before a task whose step keeps throwing is failed (default 5). */
  maxAttempts?: number;
  jobs?: PeriodicJob[];
}

export class TaskExecutor {
  readonly store: TaskStore;
  private readonly options: TaskExecutorOptions;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;

  constructor(options: TaskExecutorOptions) {
    this.options = options;
    this.logger = options.logger ?? silentLogger;
    this.store = new TaskStore(options.schema);
  }

  /** Advances every task due now (bounded); resolves to how many steps ran. */
  async runDue(limit = this.options.batchSize ?? 100): Promise<number> {
    let steps = 0;
    while (steps < limit) {
      const advanced = await this.advanceOne();
      if (!advanced) break;
      steps++;
    }
    return steps;
  }

  /** One tick: periodic jobs, then due tasks. */
  async tick(): Promise<number> {
    for (const job of this.options.jobs ?? []) {
      try {
        await job.run();
      } catch (err) {
        this.logger.warn({ err, job: job.name }, 'periodic job failed');
      }
    }
    return this.runDue();
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const loop = async () => {
      if (this.stopped) return;
      this.running = this.tick().catch((err) => this.logger.warn({ err }, 'executor tick failed'));
      await this.running;
      if (!this.stopped) this.timer = setTimeout(loop, this.options.pollIntervalMs ?? 500);
    };
    this.timer = setTimeout(loop, 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private async advanceOne(): Promise<boolean> {
    const { pool, clock } = this.options;
    const db = await pool.connect();
    let task: StoredTask | undefined;
    try {
      await db.query('BEGIN');
      [task] = await this.store.claimDue(db, clock.now(), 1);
      if (!task) {
        await db.query('COMMIT');
        return false;
      }
      const def =
        this.options.registry.get(task.agent, task.task_type) ??
        this.options.registry.list(task.agent).find((d) => d.webhookTaskType === task!.task_type);
      if (!def?.advance) {
        await this.store.transition(
          db,
          task,
          {
            status: 'failed',
            result: failure('this task can no longer be continued'),
            message: 'failed',
          },
          this.options.notifications,
        );
        await db.query('COMMIT');
        return true;
      }
      const ctx: TaskContext = {
        agent: task.agent,
        principal: null,
        db,
        dryRun: false,
        clock,
        notifications: this.options.notifications,
        settings: this.options.settings,
        schema: this.store.schema,
        taskId: task.task_id,
        request: {
          transport: 'mcp',
          ...(task.context ? { context: task.context } : {}),
          ...(task.push_notification_config
            ? { pushNotificationConfig: task.push_notification_config }
            : {}),
        },
      };
      let step;
      try {
        await db.query('SAVEPOINT step');
        step = await def.advance(task, ctx);
        await db.query('RELEASE SAVEPOINT step');
      } catch (err) {
        await db.query('ROLLBACK TO SAVEPOINT step');
        if (!(err instanceof TaskError)) throw err;
        step = {
          status: 'failed' as const,
          result: failure(err.message, err.code),
          message: err.message,
        };
      }
      if (step === null) {
        // Nothing yet: look again after one step interval.
        await db.query(
          `UPDATE ${this.store.schema}.tasks SET next_run_at = $2 WHERE task_id = $1`,
          [task.task_id, new Date(clock.nowMs() + this.options.settings.taskStepMs)],
        );
      } else {
        await this.store.transition(
          db,
          task,
          {
            status: step.status,
            ...(step.result !== undefined ? { result: step.result } : {}),
            ...(step.message !== undefined ? { message: step.message } : {}),
            ...(step.state !== undefined ? { state: step.state } : {}),
            nextRunAt:
              step.runAfterMs === undefined || step.runAfterMs === null
                ? null
                : new Date(clock.nowMs() + step.runAfterMs),
          },
          this.options.notifications,
        );
      }
      await db.query('COMMIT');
      return true;
    } catch (err) {
      await db.query('ROLLBACK').catch(() => {});
      if (!task) throw err;
      this.logger.warn({ err, taskId: task.task_id }, 'task step failed; retrying later');
      await this.backOff(task);
      return true;
    } finally {
      db.release();
    }
  }

  private async backOff(task: StoredTask): Promise<void> {
    const { pool, clock } = this.options;
    const db = await pool.connect();
    try {
      await db.query('BEGIN');
      const attempts = await this.store.recordAttemptFailure(
        db,
        task.task_id,
        new Date(clock.nowMs() + clock.speed * 1000 * 2 ** Math.min(task.attempts + 1, 8)),
      );
      if (attempts >= (this.options.maxAttempts ?? 5)) {
        const fresh = await this.store.get(db, task.task_id, true);
        if (fresh) {
          await this.store.transition(
            db,
            fresh,
            {
              status: 'failed',
              result: failure('internal error while processing the task'),
              message: 'failed',
            },
            this.options.notifications,
          );
        }
      }
      await db.query('COMMIT');
    } catch (err) {
      await db.query('ROLLBACK').catch(() => {});
      this.logger.error({ err, taskId: task.task_id }, 'could not record task failure');
    } finally {
      db.release();
    }
  }
}

/** The `result` of a failed task: the error response shape. */
export function failure(message: string, code = 'TASK_FAILED'): Record<string, unknown> {
  return { errors: [{ code, message }] };
}
