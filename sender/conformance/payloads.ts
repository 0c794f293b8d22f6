/**
 * The bodies the kit delivers: valid MCP envelopes with fresh delivery keys and task ids
 * (so one check never collides with another in the receiver's dedup or convergence
 * state), a delivery report envelope (supplement §5.7), and the deliberately broken ones.
 */
import { randomBytes } from 'node:crypto';

export type Envelope = Record<string, unknown>;

function token(bytes = 12): string {
  return randomBytes(bytes).toString('hex');
}

export function newDeliveryKey(): string {
  return `whk_conformance_${token(16)}`;
}

/** A valid terminal task envelope; every id fresh. */
export function taskEnvelope(over: Envelope = {}): Envelope {
  const run = token(6);
  return {
    idempotency_key: newDeliveryKey(),
    operation_id: `op_conformance_${run}`,
    task_id: `task_conformance_${run}`,
    task_type: 'create_media_buy',
    status: 'completed',
    timestamp: new Date().toISOString(),
    result: { media_buy_id: `mb_conformance_${run}` },
    ...over,
  };
}

/** The delivery report as it must travel: inside the envelope (`mcp-delivery-report-envelope`). */
export function deliveryReportResult(): Envelope {
  return {
    notification_type: 'scheduled',
    sequence_number: 31,
    reporting_period: { start: '2026-05-25T00:00:00Z', end: '2026-05-25T23:59:59Z' },
    currency: 'USD',
    media_buy_deliveries: [
      {
        media_buy_id: `mb_conformance_${token(4)}`,
        status: 'active',
        totals: { impressions: 1000, spend: 12.5, clicks: 3 },
        by_package: [],
      },
    ],
  };
}

export function deliveryReportEnvelope(over: Envelope = {}): Envelope {
  return taskEnvelope({ task_type: 'media_buy_delivery', result: deliveryReportResult(), ...over });
}

export function bytesOf(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}
