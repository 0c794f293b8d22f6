/**
 * Termination (supplement §4.7): the buy's queued impairments, its unreported periods and the
 * `final` report, then its channels close.
 */
import type { PoolClient } from '../../shared/infra/pg.js';
import type { OutboundEvent } from '../outbox/types.js';
import { readSchedule, type BuyRow, type ChannelsContext } from './channel-rows.js';
import { flushImpairments } from './impairment-queue.js';
import { reportingPeriod } from './periods.js';
import { report, runSchedule } from './reporting-schedule.js';
import type { TerminalBuyStatus } from './types.js';

/**
 * Ends the buy's channels at `end` (§4.7): queued impairments fire first, then every
 * period ended by `end` still unreported, then the `final` report over the whole span
 * [flight start or first period, end) (a period cut short by `end` is reported there
 * only); then the channels close and every later call for the buy is a logged no-op.
 * So a flight of N periods gets N reports plus the final: `(duration / frequency) + 1`.
 */
export async function finish(
  ctx: ChannelsContext,
  c: PoolClient,
  buy: BuyRow,
  status: TerminalBuyStatus,
  end: number,
  now: number,
): Promise<OutboundEvent[]> {
  const id = buy.media_buy_id;
  const s = ctx.schema;
  const events = await flushImpairments(ctx, c, buy, now, false);
  const schedule = await readSchedule(ctx, c, id);
  if (schedule && buy.reporting_config) {
    events.push(...(await runSchedule(ctx, c, buy, now, end)));
    const from = Math.min(
      buy.flight_start?.getTime() ?? buy.reporting_from?.getTime() ?? Infinity,
      schedule.period_start.getTime(),
      end,
    );
    const period = reportingPeriod(from, end);
    const data = await ctx.dataSource.getDelivery(id, period);
    events.push(
      await report(ctx, c, buy, { type: 'final', period, data, now, terminalStatus: status }),
    );
  }
  await c.query(
    `UPDATE ${s}.channel_media_buys SET terminal_status = $2, terminal_at = $3
     WHERE media_buy_id = $1`,
    [id, status, new Date(now)],
  );
  await c.query(`DELETE FROM ${s}.channel_report_schedules WHERE media_buy_id = $1`, [id]);
  await c.query(`DELETE FROM ${s}.channel_impairment_pending WHERE media_buy_id = $1`, [id]);
  await c.query(`UPDATE ${s}.channel_impairments SET open = false WHERE media_buy_id = $1`, [id]);
  return events;
}
