/**
 * Receiver side: which shape a webhook body has (spec Events rule 4, supplement §5.4), its
 * validation (§5.7 error ids) and the AdCP data it carries (§6.2 extraction rules).
 * Input is the value from `parseStrictJson`; nothing here throws anything but EnvelopeError.
 */
import type { z } from 'zod';
import { EnvelopeError } from './errors.js';
import { extractA2aData, extractArtifactData, STREAM_RESPONSE_KEYS } from './a2a.js';
import type { A2aKind, A2aVersion } from './a2a.js';
import {
  A2aArtifactUpdateSchema,
  A2aMessageSchema,
  A2aStatusUpdateSchema,
  A2aTaskSchema,
} from './a2a.js';
import { MCP_REQUIRED_FIELDS, McpWebhookPayloadSchema, issuePaths } from './mcp.js';
import { isTaskStatus, normalizeA2aState } from './task-status.js';
import type { TaskStatus } from './task-status.js';

export type WebhookFormat = 'mcp' | 'a2a';

export interface WebhookEvent {
  format: WebhookFormat;
  a2aVersion?: A2aVersion;
  /** Which A2A object carried the event. */
  a2aKind?: A2aKind;
  /** Null for A2A: native A2A objects carry no AdCP delivery key. */
  idempotencyKey: string | null;
  notificationId: string | null;
  taskId: string | null;
  operationId: string | null;
  taskType: string | null;
  /** Normalised task status; null for an A2A `{message}` or artifact update. */
  status: TaskStatus | null;
  timestamp: string | null;
  /** The AdCP data (MCP `result`, or the DataPart chosen by §6.2), null when absent. */
  result: unknown;
  /** The body as received (A2A 1.0: still wrapped). */
  payload: unknown;
}

export interface ParseWebhookOptions {
  /** The format known from the registration; it wins over detection (Events rule 4). */
  prefer?: WebhookFormat;
}

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Keys of a 1.0 StreamResponse wrapper present on `v`. */
function streamKeys(v: Obj): string[] {
  return Object.keys(v).filter((k) => Object.hasOwn(STREAM_RESPONSE_KEYS, k));
}

const A2A_03_KINDS: readonly unknown[] = ['task', 'status-update', 'artifact-update', 'message'];

/**
 * Shape detection without configuration: `status` string plus `task_id` -> MCP; `status`
 * object with `state` -> A2A (rule 4). Beyond the rule, an A2A 1.0 StreamResponse member
 * or an A2A 0.3 `kind` tag also reads as A2A. Otherwise null.
 */
export function detectWebhookFormat(value: unknown): WebhookFormat | null {
  if (!isObject(value)) return null;
  if (typeof value.status === 'string' && 'task_id' in value) return 'mcp';
  if (isObject(value.status) && 'state' in value.status) return 'a2a';
  if (streamKeys(value).length > 0 || A2A_03_KINDS.includes(value.kind)) return 'a2a';
  return null;
}

/**
 * Validates a webhook body and reads its event. Format: `opts.prefer` if given, else
 * detection, else MCP (so a bare delivery report is named by its missing envelope fields).
 */
export function parseWebhookPayload(value: unknown, opts: ParseWebhookOptions = {}): WebhookEvent {
  if (!isObject(value)) {
    throw new EnvelopeError('invalid_envelope', [], 'webhook body is not a JSON object');
  }
  const format = opts.prefer ?? detectWebhookFormat(value) ?? 'mcp';
  return format === 'mcp' ? parseMcp(value) : parseA2a(value);
}

function isMissing(v: unknown): boolean {
  return v === undefined || v === null;
}

function parseMcp(value: Obj): WebhookEvent {
  const missing = MCP_REQUIRED_FIELDS.filter((f) => isMissing(value[f]));
  if (missing.length === 1 && missing[0] === 'idempotency_key') {
    throw new EnvelopeError('missing_idempotency_key', ['idempotency_key']);
  }
  if (missing.length > 0) throw new EnvelopeError('missing_envelope_fields', [...missing]);
  if (!isTaskStatus(value.status)) {
    throw new EnvelopeError(
      'invalid_envelope_status',
      ['status'],
      `status ${JSON.stringify(value.status)} is not a task status`,
    );
  }
  const parsed = McpWebhookPayloadSchema.safeParse(value);
  if (!parsed.success) throw new EnvelopeError('invalid_envelope', issuePaths(parsed.error));
  const p = parsed.data;
  return {
    format: 'mcp',
    idempotencyKey: p.idempotency_key,
    notificationId: p.notification_id ?? null,
    taskId: p.task_id,
    operationId: p.operation_id,
    taskType: p.task_type,
    status: p.status,
    timestamp: p.timestamp,
    result: p.result ?? null,
    payload: value,
  };
}

function a2aEvent(
  payload: unknown,
  version: A2aVersion,
  kind: A2aKind,
  fields: Pick<WebhookEvent, 'taskId' | 'status' | 'timestamp' | 'result'>,
): WebhookEvent {
  return {
    format: 'a2a',
    a2aVersion: version,
    a2aKind: kind,
    idempotencyKey: null,
    notificationId: null,
    operationId: null,
    taskType: null,
    ...fields,
    payload,
  };
}

function check<S extends z.ZodType>(schema: S, v: unknown, prefix: string): z.output<S> {
  const r = schema.safeParse(v);
  if (!r.success) {
    const paths = issuePaths(r.error).map((p) => (p && prefix ? `${prefix}.${p}` : p || prefix));
    throw new EnvelopeError('invalid_envelope', paths);
  }
  return r.data;
}

function statusOf(state: unknown, field: string): TaskStatus {
  const status = normalizeA2aState(state);
  if (status === null) {
    throw new EnvelopeError(
      'invalid_envelope_status',
      [field],
      `A2A state ${JSON.stringify(state)} is not a task state`,
    );
  }
  return status;
}

function parseA2a(value: Obj): WebhookEvent {
  const wrappers = streamKeys(value);
  if (wrappers.length > 0) {
    // 1.0 StreamResponse: a one-of, exactly one key, unwrapped exactly once.
    if (Object.keys(value).length !== 1) {
      throw new EnvelopeError(
        'invalid_envelope',
        Object.keys(value),
        'a StreamResponse carries exactly one member',
      );
    }
    const key = wrappers[0] as keyof typeof STREAM_RESPONSE_KEYS;
    const inner = value[key];
    if (!isObject(inner)) throw new EnvelopeError('invalid_envelope', [key]);
    const nested = streamKeys(inner);
    if (nested.length > 0 && Object.keys(inner).length === 1) {
      throw new EnvelopeError('invalid_envelope', [`${key}.${nested[0]}`], 'nested StreamResponse');
    }
    return parseA2aObject(value, inner, STREAM_RESPONSE_KEYS[key], '1.0', key);
  }
  // 0.3: a bare object; `kind` names it, else its members do.
  const kind: A2aKind =
    value.kind === 'status-update' || value.kind === 'artifact-update' || value.kind === 'message'
      ? value.kind
      : value.kind === undefined || value.kind === 'task'
        ? 'id' in value || !('taskId' in value)
          ? 'task'
          : 'artifact' in value
            ? 'artifact-update'
            : 'status-update'
        : (() => {
            throw new EnvelopeError('invalid_envelope', ['kind'], 'unknown A2A object kind');
          })();
  return parseA2aObject(value, value, kind, '0.3', '');
}

function parseA2aObject(
  payload: Obj,
  obj: Obj,
  kind: A2aKind,
  version: A2aVersion,
  prefix: string,
): WebhookEvent {
  const stateField = prefix ? `${prefix}.status.state` : 'status.state';
  switch (kind) {
    case 'task': {
      const task = check(A2aTaskSchema, obj, prefix);
      const status = statusOf(task.status.state, stateField);
      return a2aEvent(payload, version, kind, {
        taskId: task.id,
        status,
        timestamp: task.status.timestamp ?? null,
        result: extractA2aData(task, status),
      });
    }
    case 'status-update': {
      const update = check(A2aStatusUpdateSchema, obj, prefix);
      const status = statusOf(update.status.state, stateField);
      return a2aEvent(payload, version, kind, {
        taskId: update.taskId,
        status,
        timestamp: update.status.timestamp ?? null,
        result: extractA2aData(update, status),
      });
    }
    case 'artifact-update': {
      const update = check(A2aArtifactUpdateSchema, obj, prefix);
      return a2aEvent(payload, version, kind, {
        taskId: update.taskId,
        status: null,
        timestamp: null,
        result: extractArtifactData(update.artifact),
      });
    }
    case 'message': {
      // A bare message: acknowledged, no state change (§6.2).
      const message = check(A2aMessageSchema, obj, prefix);
      return a2aEvent(payload, version, kind, {
        taskId: message.taskId ?? null,
        status: null,
        timestamp: null,
        result: null,
      });
    }
  }
}

/**
 * The AdCP data of any webhook body, without envelope validation (extraction vectors:
 * some payloads there omit envelope members). Unknown shapes give null.
 */
export function extractWebhookData(
  value: unknown,
  opts: ParseWebhookOptions = {},
): {
  format: WebhookFormat | null;
  data: unknown;
} {
  if (!isObject(value)) return { format: null, data: null };
  const format = opts.prefer ?? detectWebhookFormat(value);
  if (format === 'mcp') return { format, data: value.result ?? null };
  if (format === 'a2a') {
    try {
      return { format, data: parseA2a(value).result };
    } catch (err) {
      if (err instanceof EnvelopeError) return { format, data: null };
      throw err;
    }
  }
  return { format: null, data: null };
}
