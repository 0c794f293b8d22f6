/**
 * The reporting schedule on `reporting_webhook` (supplement §4.6): every period whose fire
 * time has passed is reported, oldest first, each under the next sequence number of the
 * buy's reporting URL; late data sends one `delayed` per period.
 */
import type { PoolClient } from '../../shared/infra/pg.js';
import type { OutboundEvent } from '../outbox/types.js';
import type { ScheduledFire } from './aggregation.js';
import { readSchedule, type BuyRow, type ChannelsContext } from './channel-rows.js';
import { reportEvent, type ReportFire } from './payloads.js';
import { isoSeconds, nextPeriodStart, reportingPeriod } from './periods.js';
import { isLate, type ReportingFrequency } from './types.js';

/**
 * Reports every period whose fire time has passed, oldest first; with `until` (the buy
 * ends there) every period ended by then, due or not. A period the flight end (or
 * `until`) cuts short is left to the final report. Late data sends one `delayed` for the
 * period and asks again after `delayedRetrySeconds`.
 */
export async function runSchedule(
  ctx: ChannelsContext,
  c: PoolClient,
  buy: BuyRow,
  now: number,
  until?: number,
): Promise<OutboundEvent[]> {
  return (await scheduleItems(ctx, c, buy, now, until, false)) as OutboundEvent[];
}

/** `runSchedule`; with `collect`, `scheduled` fires come back unbuilt (to aggregate). */
export async function scheduleItems(
  ctx: ChannelsContext,
  c: PoolClient,
  buy: BuyRow,
  now: number,
  until: number | undefined,
  collect: boolean,
): Promise<Array<OutboundEvent | ScheduledFire>> {
  const schedule = await readSchedule(ctx, c, buy.media_buy_id);
  if (!schedule || !buy.reporting_config) return [];
  const freq = schedule.frequency;
  const stop = Math.min(until ?? Infinity, buy.flight_end?.getTime() ?? Infinity);
  const from = buy.flight_start?.getTime() ?? -Infinity;
  let start = schedule.period_start.getTime();
  let fireAt = schedule.next_fire_at.getTime();
  let delayedSent = schedule.delayed_sent;
  const events: Array<OutboundEvent | ScheduledFire> = [];
  for (let i = 0; i < ctx.maxCatchUp && (fireAt <= now || until !== undefined); i++) {
    const end = nextPeriodStart(freq, start);
    if (end > stop) break;
    const period = reportingPeriod(Math.max(start, from), end);
    const data = await ctx.dataSource.getDelivery(buy.media_buy_id, period);
    if (isLate(data)) {
      const retryAt = now + ctx.delayedRetryMs;
      if (!delayedSent) {
        const nextExpectedAt = data.expectedAvailability ?? isoSeconds(retryAt);
        const fire = { type: 'delayed' as const, period, data, now, nextExpectedAt };
        // Collected too, so the buy's sequence numbers follow its reports' order.
        events.push(collect ? { buy, fire } : await report(ctx, c, buy, fire));
        delayedSent = true;
      }
      fireAt = retryAt;
      break;
    }
    // After the flight's last period, the next fire is the final report.
    const nextFire = fireTime(buy, freq, end);
    const fire = {
      type: 'scheduled' as const,
      period,
      data,
      now,
      nextExpectedAt: isoSeconds(until === undefined ? nextFire : Math.min(nextFire, now)),
    };
    events.push(collect ? { buy, fire } : await report(ctx, c, buy, fire));
    start = end;
    fireAt = nextFire;
    delayedSent = false;
  }
  await c.query(
    `UPDATE ${ctx.schema}.channel_report_schedules
     SET period_start = $2, next_fire_at = $3, delayed_sent = $4 WHERE media_buy_id = $1`,
    [buy.media_buy_id, new Date(start), new Date(fireAt), delayedSent],
  );
  return events;
}

/**
 * When the period starting at `start` fires: its end plus the product's delay, or, when
 * the flight ends first, when the final report fires (flight end plus the delay).
 */
export function fireTime(buy: BuyRow, freq: ReportingFrequency, start: number): number {
  const delayMs = buy.expected_delay_minutes * 60_000;
  const flightEnd = buy.flight_end?.getTime() ?? Infinity;
  return Math.min(nextPeriodStart(freq, start), flightEnd) + delayMs;
}

/** Takes the next sequence number of the buy's current reporting URL and builds the fire. */
export async function report(
  ctx: ChannelsContext,
  c: PoolClient,
  buy: BuyRow,
  fire: Omit<ReportFire, 'sequenceNumber'>,
): Promise<OutboundEvent> {
  const url = buy.reporting_config!.url;
  const { rows } = await c.query<{ last_sequence: number }>(
    `INSERT INTO ${ctx.schema}.channel_report_sequences (media_buy_id, url, last_sequence)
     VALUES ($1, $2, 1)
     ON CONFLICT (media_buy_id, url) DO UPDATE
       SET last_sequence = ${ctx.schema}.channel_report_sequences.last_sequence + 1
     RETURNING last_sequence`,
    [buy.media_buy_id, url],
  );
  await rememberCurrency(ctx, c, buy, fire);
  return reportEvent(buy, { ...fire, sequenceNumber: rows[0]!.last_sequence });
}

/** Remembers the data's currency so a later `delayed` report (no data) can state it. */
export async function rememberCurrency(
  ctx: ChannelsContext,
  c: PoolClient,
  buy: BuyRow,
  fire: Pick<ReportFire, 'data'>,
): Promise<void> {
  if (isLate(fire.data) || 'rows' in fire.data || fire.data.currency === buy.currency) return;
  await c.query(
    `UPDATE ${ctx.schema}.channel_media_buys SET currency = $2 WHERE media_buy_id = $1`,
    [buy.media_buy_id, fire.data.currency],
  );
  buy.currency = fire.data.currency;
}
