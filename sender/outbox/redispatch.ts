/**
 * Putting outbox rows back into the queue when their dispatch was lost: the retry of a
 * dispatch that failed at enqueue (Redis away), the reconciler's overdue pass, and the
 * full pass after Redis lost its data. Job ids are fixed by row ids, so dispatching a row
 * whose job still exists changes nothing.
 */
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import type { RecoveryRow } from './rows.js';

export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`dispatch took over ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

function originOf(url: string): string {
  return new URL(url).origin;
}

/**
 * Rows written whose dispatch failed, dispatched again every 500 ms until Redis answers
 * (at most 100,000 kept; the reconciler covers the rest).
 */
export class DispatchRetry {
  private undispatched: Array<{ id: string; origin: string }> = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly queue: DeliveryQueue,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {}

  add(items: Array<{ id: string; origin: string }>): void {
    const room = 100_000 - this.undispatched.length;
    this.undispatched.push(...items.slice(0, Math.max(0, room)));
    if (this.timer) return;
    const tick = async () => {
      const batch = this.undispatched.splice(0, 5000);
      try {
        await withTimeout(this.queue.dispatchBatch(batch), this.timeoutMs);
        this.logger.info({ rows: batch.length }, 'outbox dispatch went through on retry');
      } catch {
        this.undispatched.unshift(...batch);
      }
      this.timer = this.undispatched.length > 0 ? setTimeout(() => void tick(), 500).unref() : null;
    };
    this.timer = setTimeout(() => void tick(), 500).unref();
  }
}

/**
 * One page of the reconciler ($1 grace ms, $2 page size): overdue pending rows taken and
 * marked due now. Found along the due index (due-migration.ts: `next_attempt_at` before T
 * implies `due_at` before T + 50 ms) and checked on `next_attempt_at`, a claim's lease.
 */
export function overduePageSql(schema: string): string {
  return `UPDATE ${schema}.outbox_delivery o SET next_attempt_at = now(), due_at = now()
         FROM (SELECT id FROM ${schema}.outbox_delivery
                WHERE state = 'pending'
                  AND due_at < now() - $1::int * interval '1 millisecond' + interval '1 second'
                  AND next_attempt_at < now() - $1::int * interval '1 millisecond'
                ORDER BY due_at LIMIT $2
                FOR UPDATE SKIP LOCKED) AS due
        JOIN ${schema}.outbox_event e ON e.id = due.id
        WHERE o.id = due.id
        RETURNING o.id::text, e.target_url`;
}

/**
 * Re-dispatches pending rows overdue by more than `graceMs`: the ones whose job Redis
 * lost. Workers running it at once split the rows: each page is taken with `FOR UPDATE
 * SKIP LOCKED` and marked due now (`next_attempt_at` and `due_at`), so another worker's pass
 * neither waits for it nor sees those rows overdue again for `graceMs`. Pages through
 * every overdue row, `pageSize` at a time.
 */
export async function reconcileOverdue(
  pool: Pool,
  queue: DeliveryQueue,
  schema: string,
  options: { graceMs?: number; pageSize?: number } = {},
): Promise<number> {
  const pageSize = options.pageSize ?? 1000;
  let total = 0;
  for (;;) {
    const { rows } = await pool.query<{ id: string; target_url: string }>(overduePageSql(schema), [
      options.graceMs ?? 60_000,
      pageSize,
    ]);
    await queue.dispatch(rows.map((r) => ({ id: r.id, origin: originOf(r.target_url) })));
    total += rows.length;
    if (rows.length < pageSize) return total;
  }
}

/**
 * After Redis lost its data (flushed, restarted empty): one job for every pending row,
 * due when the row is (a claimed row when its lease ends), paged by id. Run by one
 * worker per loss (`delivery/dispatch-recovery.ts`).
 */
export async function redispatchAllPending(
  read: (after: string, limit: number) => Promise<RecoveryRow[]>,
  queue: DeliveryQueue,
  options: { pageSize?: number; onPage?: () => Promise<void> } = {},
): Promise<number> {
  const pageSize = options.pageSize ?? 1000;
  let after = '0';
  let total = 0;
  for (;;) {
    const rows = await read(after, pageSize);
    const now = Date.now();
    await queue.dispatch(
      rows.map((r) => ({
        id: r.id,
        origin: originOf(r.targetUrl),
        notBefore: now + Math.max(0, r.dueInMs),
      })),
    );
    total += rows.length;
    if (rows.length < pageSize) return total;
    after = rows.at(-1)!.id;
    await options.onPage?.();
  }
}
