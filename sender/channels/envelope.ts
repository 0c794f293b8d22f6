/**
 * The MCP-shape envelope (supplement §6.1) around a channel fire. Engineer A's
 * `shared/envelope` owns `buildMcpEnvelope`; this function is the one place to switch to
 * it, and builds the same shape locally until then.
 */

export interface ChannelEnvelopeInput {
  idempotencyKey: string;
  operationId: string;
  taskId: string;
  taskType: string;
  /** Task status of the envelope, never the buy's lifecycle state. */
  status: 'completed';
  timestamp: string;
  result: Record<string, unknown>;
  notificationId?: string;
  token?: string;
  context?: Record<string, unknown>;
}

export function channelEnvelope(input: ChannelEnvelopeInput): Record<string, unknown> {
  const envelope: Record<string, unknown> = {
    idempotency_key: input.idempotencyKey,
    operation_id: input.operationId,
    task_id: input.taskId,
    task_type: input.taskType,
    status: input.status,
    timestamp: input.timestamp,
  };
  if (input.notificationId !== undefined) envelope.notification_id = input.notificationId;
  if (input.token !== undefined) envelope.token = input.token;
  if (input.context !== undefined) envelope.context = input.context;
  envelope.result = input.result;
  return envelope;
}
