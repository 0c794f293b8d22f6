/**
 * Operator actions on media buys (`svc approve`, `svc reject`, reporting delays,
 * impairments): each in its own transaction, ending the create task where it applies.
 */
import { withTransaction, type Pool, type PoolClient } from '../../../shared/infra/pg.js';
import type { AgentClock } from '../../runtime/clock.js';
import { taskError } from '../../runtime/errors.js';
import type { TaskStore } from '../../runtime/task-store.js';
import type { AgentNotifications } from '../../runtime/types.js';
import { activateBuy } from './create.js';
import { loadBuy, lockBuyAndTask } from './records.js';
import { closeCreateTask } from './update.js';
import { buyResponse } from './views.js';

/** Operator actions on buys (`svc approve`, `svc reject`, impairments). */
export class MediaBuyOperator {
  constructor(
    private readonly deps: {
      pool: Pool;
      schema: string;
      tasks: TaskStore;
      notifications: AgentNotifications;
      clock: AgentClock;
    },
  ) {}

  private inTransaction<T>(fn: (db: PoolClient) => Promise<T>): Promise<T> {
    return withTransaction(this.deps.pool, fn);
  }

  /**
   * The buy an operator names: its media_buy_id, or the id of its create task (what the
   * buyer got back: the submitted envelope carries no media_buy_id).
   */
  private async buyIdOf(db: PoolClient, id: string): Promise<string> {
    if (!id.startsWith('task_')) return id;
    const { rows } = await db.query<{ resource_id: string | null }>(
      `SELECT resource_id FROM ${this.deps.schema}.tasks WHERE task_id = $1 AND task_type = 'create_media_buy'`,
      [id],
    );
    return rows[0]?.resource_id ?? id;
  }

  /** Approves a pending buy: it goes active and its task completes (webhook). */
  approve(id: string): Promise<Record<string, unknown>> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const mediaBuyId = await this.buyIdOf(db, id);
      const buy = await lockBuyAndTask(db, schema, mediaBuyId, null);
      if (buy.status !== 'pending') {
        throw taskError('INVALID_STATE', `media buy is ${buy.status}, not pending`, {
          field: 'media_buy_id',
        });
      }
      await activateBuy(db, schema, buy, this.deps.clock.now());
      await closeCreateTask(
        { db, ...this.deps },
        this.deps.tasks,
        buy,
        'completed',
        'media buy approved',
      );
      return buyResponse(
        db,
        schema,
        await loadBuy(db, schema, mediaBuyId, null),
        this.deps.clock.now(),
      );
    });
  }

  /** Rejects a pending buy: task `rejected`, buy `rejected`, channels closed. */
  reject(id: string, reason = 'rejected by the seller'): Promise<Record<string, unknown>> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const mediaBuyId = await this.buyIdOf(db, id);
      const buy = await lockBuyAndTask(db, schema, mediaBuyId, null);
      if (buy.status !== 'pending') {
        throw taskError('INVALID_STATE', `media buy is ${buy.status}, not pending`, {
          field: 'media_buy_id',
        });
      }
      await db.query(
        `UPDATE ${schema}.media_buys SET status = 'rejected', revision = revision + 1,
           updated_at = now() WHERE media_buy_id = $1`,
        [mediaBuyId],
      );
      const fresh = await loadBuy(db, schema, mediaBuyId, null);
      const result = { ...(await buyResponse(db, schema, fresh, this.deps.clock.now())), reason };
      await closeCreateTask({ db, ...this.deps }, this.deps.tasks, buy, 'rejected', reason, result);
      await this.deps.notifications.mediaBuyTerminal({
        mediaBuyId,
        principalId: buy.principal_id,
        status: 'rejected',
        client: db,
      });
      return result;
    });
  }

  /** Delivery numbers are late: reports become `delayed` until `resumeReporting`. */
  delayReporting(mediaBuyId: string, expectedAvailability?: Date): Promise<void> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const buy = await loadBuy(db, schema, mediaBuyId, null, { forUpdate: true });
      if (buy.status !== 'active') {
        throw taskError('INVALID_STATE', `media buy is ${buy.status}, not active`, {
          field: 'media_buy_id',
        });
      }
      await db.query(
        `UPDATE ${schema}.media_buys SET status = 'reporting_delayed', reporting_expected_at = $2,
           updated_at = now() WHERE media_buy_id = $1`,
        [mediaBuyId, expectedAvailability ?? null],
      );
    });
  }

  resumeReporting(mediaBuyId: string): Promise<void> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const buy = await loadBuy(db, schema, mediaBuyId, null, { forUpdate: true });
      if (buy.status !== 'reporting_delayed') {
        throw taskError('INVALID_STATE', `media buy is ${buy.status}, not reporting_delayed`, {
          field: 'media_buy_id',
        });
      }
      await db.query(
        `UPDATE ${schema}.media_buys SET status = 'active', reporting_expected_at = NULL,
           updated_at = now() WHERE media_buy_id = $1`,
        [mediaBuyId],
      );
    });
  }

  /**
   * Records an impairment (supplement §6.4) on a buy and hands it to the sender; one with
   * `resolved_at` closes the open one of the same id.
   */
  observeImpairment(mediaBuyId: string, impairment: Record<string, unknown>): Promise<void> {
    return this.inTransaction(async (db) => {
      const { schema } = this.deps;
      const buy = await loadBuy(db, schema, mediaBuyId, null, { forUpdate: true });
      const id = String(impairment.impairment_id ?? '');
      if (!/^[A-Za-z0-9_.:-]{1,255}$/.test(id)) {
        throw taskError('VALIDATION_ERROR', 'impairment_id is required', {
          field: 'impairment_id',
        });
      }
      const observed = new Date(
        String(impairment.observed_at ?? this.deps.clock.now().toISOString()),
      );
      await db.query(
        `INSERT INTO ${schema}.impairments (impairment_id, media_buy_id, body, observed_at, resolved_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (impairment_id) DO UPDATE SET body = EXCLUDED.body, resolved_at = EXCLUDED.resolved_at`,
        [
          id,
          mediaBuyId,
          impairment,
          observed,
          impairment.resolved_at ? new Date(String(impairment.resolved_at)) : null,
        ],
      );
      await this.deps.notifications.impairmentObserved({
        mediaBuyId,
        principalId: buy.principal_id,
        impairment,
        client: db,
      });
    });
  }
}
