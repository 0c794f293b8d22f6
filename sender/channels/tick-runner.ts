/**
 * The runner's fires for the buys due at a tick (supplement §4.6-§4.7): each buy in its own
 * transaction, or all of them in one with savepoints when reports are aggregated.
 */
import type { OutboundEvent } from '../outbox/types.js';
import { aggregatedReportEvent, groupFires, streamKey, type ScheduledFire } from './aggregation.js';
import { lockBuy, transaction, type BuyRow, type ChannelsContext } from './channel-rows.js';
import { flushImpairments } from './impairment-queue.js';
import { rememberCurrency, report, runSchedule, scheduleItems } from './reporting-schedule.js';
import { finish } from './termination.js';

/** One buy's due fires, in its own transaction; 0 when another process holds the buy. */
export async function fireDue(ctx: ChannelsContext, id: string, now: number): Promise<number> {
  try {
    return await transaction(ctx, undefined, async (c) => {
      const buy = await lockBuy(ctx, c, id, true);
      if (!buy || buy.terminal_status) return 0;
      const flightEnd = buy.flight_end?.getTime();
      if (flightEnd !== undefined && flightEnd + buy.expected_delay_minutes * 60_000 <= now) {
        // The flight is over: its last periods, the final report, and the channels close.
        const events = await finish(ctx, c, buy, 'completed', flightEnd, now);
        return events.length > 0 ? (await ctx.sink.enqueue(events, c)).length : 0;
      }
      const events = [
        ...(await flushImpairments(ctx, c, buy, now, true)),
        ...(await runSchedule(ctx, c, buy, now)),
      ];
      if (events.length === 0) return 0;
      return (await ctx.sink.enqueue(events, c)).length;
    });
  } catch (err) {
    // One buy's failing data source must not hold back the others: its schedule is
    // postponed so due buys behind it in the next batch get their turn.
    ctx.logger.error({ err, mediaBuyId: id }, 'channel tick failed for buy');
    await ctx.pool
      .query(
        `UPDATE ${ctx.schema}.channel_report_schedules SET next_fire_at = $2
         WHERE media_buy_id = $1 AND next_fire_at <= $3`,
        [id, new Date(now + ctx.failureRetryMs), new Date(now)],
      )
      .catch(() => {});
    return 0;
  }
}

/**
 * The due buys of one tick in one transaction, so reports of several buys can share a
 * payload: each buy runs in a savepoint (a failing data source rolls back and postpones
 * that buy alone), its `scheduled` fires are collected, grouped (`groupFires`) and sent
 * as one payload per group of two or more, the others as ordinary per-buy reports.
 */
export async function tickAggregated(
  ctx: ChannelsContext,
  ids: string[],
  now: number,
): Promise<number> {
  return transaction(ctx, undefined, async (c) => {
    const items: Array<OutboundEvent | ScheduledFire> = [];
    for (const id of ids) {
      const mark = items.length;
      await c.query('SAVEPOINT channel_buy');
      try {
        const buy = await lockBuy(ctx, c, id, true);
        if (buy && !buy.terminal_status) {
          const flightEnd = buy.flight_end?.getTime();
          if (flightEnd !== undefined && flightEnd + buy.expected_delay_minutes * 60_000 <= now) {
            items.push(...(await finish(ctx, c, buy, 'completed', flightEnd, now)));
          } else {
            items.push(...(await flushImpairments(ctx, c, buy, now, true)));
            items.push(...(await scheduleItems(ctx, c, buy, now, undefined, true)));
          }
        }
        await c.query('RELEASE SAVEPOINT channel_buy');
      } catch (err) {
        items.length = mark;
        await c.query('ROLLBACK TO SAVEPOINT channel_buy');
        ctx.logger.error({ err, mediaBuyId: id }, 'channel tick failed for buy');
        await c.query(
          `UPDATE ${ctx.schema}.channel_report_schedules SET next_fire_at = $2
           WHERE media_buy_id = $1 AND next_fire_at <= $3`,
          [id, new Date(now + ctx.failureRetryMs), new Date(now)],
        );
      }
    }
    const fires = items.filter((x): x is ScheduledFire => 'fire' in x);
    const groupOf = new Map<ScheduledFire, ScheduledFire[]>();
    for (const g of groupFires(fires)) for (const f of g) groupOf.set(f, g);
    const events: OutboundEvent[] = [];
    for (const item of items) {
      if (!('fire' in item)) {
        events.push(item);
        continue;
      }
      const group = groupOf.get(item)!;
      if (group.length === 1) {
        events.push(await report(ctx, c, item.buy as BuyRow, item.fire));
      } else if (group[0] === item) {
        for (const f of group) await rememberCurrency(ctx, c, f.buy as BuyRow, f.fire);
        const stream = streamKey(item.buy);
        const { rows } = await c.query<{ last_sequence: number }>(
          `INSERT INTO ${ctx.schema}.channel_report_streams (stream_key, last_sequence)
           VALUES ($1, 1)
           ON CONFLICT (stream_key) DO UPDATE
             SET last_sequence = ${ctx.schema}.channel_report_streams.last_sequence + 1
           RETURNING last_sequence`,
          [stream],
        );
        events.push(aggregatedReportEvent(group, stream, rows[0]!.last_sequence));
      }
    }
    return events.length > 0 ? (await ctx.sink.enqueue(events, c)).length : 0;
  });
}
