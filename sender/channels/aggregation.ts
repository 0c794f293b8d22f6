/**
 * Aggregated delivery reports (supplement §4.6: reporting fires MAY aggregate buys sharing
 * URL + frequency + period into one payload, `media_buy_deliveries` 1..N). Opt-in.
 *
 * A payload has one envelope (operation_id, task_id, token, context, auth) and one report
 * header (notification_type, sequence_number "for this reporting webhook stream",
 * reporting_period, currency, next_expected_at). So only fires that agree on every one of
 * these share a payload: the buyer's registration must be identical in every member that
 * reaches the envelope or the auth (all of `reporting_webhook` but `requested_metrics`,
 * which only shapes rows), with the same resolved operation_id, context and principal,
 * and the fires must share type (`scheduled` only), period, currency and next_expected_at.
 * Everything else (status, totals, by_package, pricing) stays per row. Fires that differ
 * go apart, each group its own payload; a group of one is an ordinary per-buy report.
 *
 * The buys of a group form a stream of their own: `sequence_number` counts its payloads
 * (per stream key, in PostgreSQL) and `task_id` is the stream's handle, since no one buy's
 * task is the subject of the payload. The event names every buy it covers (`mediaBuyIds`),
 * so its webhook_activity records are listed under each of them.
 */
import { fingerprint } from '../../shared/json/canonical.js';
import type { OutboundEvent } from '../outbox/types.js';
import {
  deliveryRow,
  reportCurrency,
  reportEnvelopeEvent,
  reportingOperationId,
  type BuyChannels,
  type ReportFire,
} from './payloads.js';

/** A `scheduled` fire of one buy, before it is turned into a report. */
export interface ScheduledFire {
  buy: BuyChannels;
  fire: Omit<ReportFire, 'sequenceNumber'>;
}

/** What the envelope and auth of the buy's reports are made of: its stream. */
export function streamKey(buy: BuyChannels): string {
  const config = { ...buy.reporting_config };
  delete config.requested_metrics;
  return fingerprint({
    principal: buy.principal_id,
    config,
    operation_id: reportingOperationId(buy),
    context: buy.context,
  });
}

/** Fires that may share one payload: same stream and same report header. */
export function groupKey(f: ScheduledFire): string {
  return fingerprint({
    stream: streamKey(f.buy),
    type: f.fire.type,
    period: f.fire.period,
    currency: reportCurrency(f.buy, f.fire),
    next_expected_at: f.fire.nextExpectedAt ?? null,
  });
}

/** The stream's `task_id`: stable, and never one buy's. */
export function streamTaskId(stream: string): string {
  return `reporting.${stream.replace(/[^A-Za-z0-9]/g, '').slice(0, 24)}`;
}

/** Groups fires in order of first appearance; each group keeps its fires' order. */
export function groupFires(fires: ScheduledFire[]): ScheduledFire[][] {
  const groups = new Map<string, ScheduledFire[]>();
  for (const f of fires) {
    const key = f.fire.type === 'scheduled' ? groupKey(f) : `solo:${groups.size}`;
    const g = groups.get(key);
    if (g) g.push(f);
    else groups.set(key, [f]);
  }
  return [...groups.values()];
}

/** One payload for a group of two or more fires (same stream, same header). */
export function aggregatedReportEvent(
  group: ScheduledFire[],
  stream: string,
  sequenceNumber: number,
): OutboundEvent {
  const { buy, fire } = group[0]!;
  const config = buy.reporting_config;
  if (!config) throw new Error(`media buy ${buy.media_buy_id} has no reporting_webhook`);
  const result: Record<string, unknown> = {
    notification_type: fire.type,
    sequence_number: sequenceNumber,
    reporting_period: fire.period,
    currency: reportCurrency(buy, fire),
    media_buy_deliveries: group.map((f) => deliveryRow(f.buy, f.fire)),
  };
  if (fire.nextExpectedAt) result.next_expected_at = fire.nextExpectedAt;
  const event = reportEnvelopeEvent(
    buy,
    config,
    { type: fire.type, sequenceNumber },
    result,
    new Date(fire.now).toISOString(),
    { taskId: streamTaskId(stream) },
  );
  // Not in the payload (it has its rows): the outbox lists the attempts under each buy.
  return { ...event, mediaBuyIds: group.map((f) => f.buy.media_buy_id) };
}
