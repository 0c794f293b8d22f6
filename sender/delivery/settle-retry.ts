/**
 * An attempt's settle (its outcome written to the outbox row and its activity record)
 * retried while the database is away (service spec "Delivery": at least once, never a
 * second attempt while one is unsettled).
 */
import type { Logger } from '../../shared/infra/logger.js';
import type { Outbox, SettleInput } from '../outbox/outbox.js';

/**
 * Settles, retrying with back-off (100 ms doubling to 1 s) for up to `retryMs` while the
 * database is away: the row's lease is renewed meanwhile (the worker's heartbeat keeps it
 * claimed), so no other job sends it again. False when it never went through.
 */
export async function settleRetrying(
  outbox: Pick<Outbox, 'settle'>,
  id: string,
  outcome: Omit<SettleInput, 'id'>,
  o: { retryMs: number; logger: Logger; closed: () => boolean },
): Promise<boolean> {
  const deadline = Date.now() + o.retryMs;
  let wait = 100;
  for (let tries = 1; ; tries++) {
    try {
      await outbox.settle(id, outcome);
      if (tries > 1) o.logger.info({ outboxId: id, tries }, 'settle went through on retry');
      return true;
    } catch (err) {
      if (o.closed() || Date.now() + wait > deadline) {
        o.logger.error({ err, outboxId: id, tries }, 'settle failed; the row will be sent again');
        return false;
      }
      if (tries === 1) o.logger.warn({ err, outboxId: id }, 'settle failed; retrying');
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 1000);
    }
  }
}
