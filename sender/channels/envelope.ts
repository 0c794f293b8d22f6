/**
 * The MCP-shape envelope (supplement §6.1) around a channel fire, built and validated by
 * `shared/envelope` so a payload our own receivers would refuse is never enqueued.
 */
import { buildMcpEnvelope, type WebhookTaskType } from '../../shared/envelope/index.js';

export interface ChannelEnvelopeInput {
  idempotencyKey: string;
  operationId: string;
  taskId: string;
  taskType: WebhookTaskType;
  /** Task status of the envelope, never the buy's lifecycle state. */
  status: 'completed';
  timestamp: string;
  result: Record<string, unknown>;
  notificationId?: string;
  token?: string;
  context?: Record<string, unknown>;
}

export function channelEnvelope(input: ChannelEnvelopeInput): Record<string, unknown> {
  return buildMcpEnvelope({ ...input, protocol: 'media-buy' });
}
