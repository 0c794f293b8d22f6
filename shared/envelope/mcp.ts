/**
 * The MCP-shape webhook envelope (`core/mcp-webhook-payload.json`, supplement §6.1): the
 * payload for AdCP `push_notification_config` and `reporting_webhook` registrations.
 */
import { z } from 'zod';
import { EnvelopeError } from './errors.js';
import { PROTOCOL_DOMAINS, TASK_STATUSES, WEBHOOK_TASK_TYPES } from './task-status.js';
import type { TaskStatus, WebhookTaskType } from './task-status.js';

/** Delivery key: CSPRNG, 16-255 characters of this alphabet (§4.3). */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_.:-]{16,255}$/;
/** `notification_id`, e.g. `task_456.terminal`. */
export const NOTIFICATION_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,255}$/;

/** Members every MCP envelope must carry, in the order errors name them. */
export const MCP_REQUIRED_FIELDS = [
  'idempotency_key',
  'operation_id',
  'task_id',
  'task_type',
  'status',
  'timestamp',
] as const;

const jsonObject = z.record(z.string(), z.unknown());

export const McpWebhookPayloadSchema = z.looseObject({
  idempotency_key: z.string().regex(IDEMPOTENCY_KEY_PATTERN),
  notification_id: z.string().regex(NOTIFICATION_ID_PATTERN).optional(),
  operation_id: z.string().min(1),
  task_id: z.string().min(1),
  task_type: z.enum(WEBHOOK_TASK_TYPES),
  protocol: z.enum(PROTOCOL_DOMAINS).optional(),
  status: z.enum(TASK_STATUSES),
  timestamp: z.iso.datetime({ offset: true }),
  message: z.string().optional(),
  context_id: z.string().optional(),
  token: z.string().min(16).max(4096).optional(),
  // async-response-data; the originating task's schema validates it further. A null
  // result reads as "no data" (extraction vector mcp-null-result).
  result: jsonObject.nullable().optional(),
  /** The request's top-level `context`, echoed verbatim. */
  context: jsonObject.optional(),
});
export type McpWebhookPayload = z.infer<typeof McpWebhookPayloadSchema>;

export interface McpEnvelopeInput {
  idempotencyKey: string;
  operationId: string;
  taskId: string;
  /** One of WEBHOOK_TASK_TYPES; checked at run time, so a plain string is accepted. */
  taskType: WebhookTaskType | (string & {});
  status: TaskStatus;
  /** ISO 8601 time of first generation; frozen across retries. */
  timestamp: string;
  result?: Record<string, unknown> | null;
  notificationId?: string;
  message?: string;
  protocol?: (typeof PROTOCOL_DOMAINS)[number];
  contextId?: string;
  token?: string;
  context?: Record<string, unknown>;
}

/**
 * Builds and validates an MCP envelope for the sender; throws EnvelopeError (id
 * `invalid_envelope`, fields at fault) rather than emitting a payload a receiver rejects.
 * Absent optional inputs are omitted, never sent as null.
 */
export function buildMcpEnvelope(input: McpEnvelopeInput): McpWebhookPayload {
  const envelope: Record<string, unknown> = {
    idempotency_key: input.idempotencyKey,
    operation_id: input.operationId,
    task_id: input.taskId,
    task_type: input.taskType,
    status: input.status,
    timestamp: input.timestamp,
  };
  const optional: [string, unknown][] = [
    ['notification_id', input.notificationId],
    ['protocol', input.protocol],
    ['message', input.message],
    ['context_id', input.contextId],
    ['token', input.token],
    ['context', input.context],
    ['result', input.result],
  ];
  for (const [name, value] of optional) if (value !== undefined) envelope[name] = value;
  const parsed = McpWebhookPayloadSchema.safeParse(envelope);
  if (!parsed.success) {
    throw new EnvelopeError('invalid_envelope', issuePaths(parsed.error));
  }
  return parsed.data;
}

/** Dotted paths of a zod error's issues, each once, in order. */
export function issuePaths(error: z.ZodError): string[] {
  const paths: string[] = [];
  for (const issue of error.issues) {
    const p = issue.path.map(String).join('.');
    if (!paths.includes(p)) paths.push(p);
  }
  return paths;
}
