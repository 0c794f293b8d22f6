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

/**
 * The webhooks a buyer receives that are not task envelopes (supplement §6.7), each valid
 * with a fresh delivery key. The property list's `signature` is a marker the receiver must
 * accept in any string form and never use for authentication.
 */
export function agentKindBodies(): Record<string, Envelope> {
  const run = token(6);
  const now = new Date().toISOString();
  return {
    property_list_changed: {
      idempotency_key: newDeliveryKey(),
      event: 'property_list_changed',
      list_id: `pl_conformance_${run}`,
      list_name: 'Conformance list',
      change_summary: { added: 2, removed: 1 },
      resolved_at: now,
      signature: `opaque marker ${run}, not a JWS`,
    },
    collection_list_changed: {
      idempotency_key: newDeliveryKey(),
      event: 'collection_list_changed',
      list_id: `cl_conformance_${run}`,
      resolved_at: now,
      signature: '',
    },
    artifact: {
      idempotency_key: newDeliveryKey(),
      media_buy_id: `mb_conformance_${run}`,
      batch_id: `batch_conformance_${run}`,
      timestamp: now,
      artifacts: [{ artifact_id: `art_${run}`, type: 'page', url: 'https://example.com/a' }],
    },
    revocation_notification: {
      idempotency_key: newDeliveryKey(),
      rights_id: `rights_conformance_${run}`,
      brand_id: `brand_conformance_${run}`,
      reason: 'license_expired',
      effective_at: now,
    },
  };
}

/** A member each kind requires beside its delivery key and discriminating member. */
export const AGENT_KIND_REQUIRED: Record<string, string> = {
  property_list_changed: 'signature',
  collection_list_changed: 'resolved_at',
  artifact: 'timestamp',
  revocation_notification: 'effective_at',
};
