/**
 * The envelope stage's reading of a parsed body: which kind of webhook it is and whether
 * its required members are there (supplement §5.7, §6.1, §6.2, §6.7; service spec's
 * reliability rule 2, which requires `idempotency_key` on every webhook a buyer receives).
 *
 * Kinds: task status notifications (MCP envelope or A2A objects, shared/envelope/parse.ts),
 * a bare A2A message, and the payloads that are not task envelopes: governance list
 * changes (`property_list_changed`, `collection_list_changed`, with the property list's
 * `signature` marker: a required string accepted in any string form and never used for
 * authentication), artifact push webhooks, and rights `revocation-notification`. Each of
 * those is recognised by its discriminating member, has its required members checked, and
 * is deduplicated by (sender, idempotency_key) like a task notification; no task ordering
 * applies to them. Members beyond the required ones are passed through untouched.
 */
import { EnvelopeError } from '../../shared/envelope/errors.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../shared/envelope/mcp.js';
import { parseWebhookPayload, type WebhookEvent } from '../../shared/envelope/parse.js';

export type WebhookKind =
  | 'task'
  | 'a2a_message'
  | 'property_list_changed'
  | 'collection_list_changed'
  | 'artifact'
  | 'revocation_notification';

/** A recognised webhook: the task fields are null for kinds that are not task envelopes. */
export interface Envelope extends WebhookEvent {
  kind: WebhookKind;
}

type Obj = Record<string, unknown>;
type Check = 'string' | 'datetime' | 'array' | 'key';

interface KindSpec {
  kind: WebhookKind;
  /** Required members and what each must be, `idempotency_key` first. */
  required: Array<[string, Check]>;
  /** The member whose value is the event's timestamp. */
  at: string;
}

const KEY: [string, Check] = ['idempotency_key', 'key'];

const LIST_CHANGE: Array<[string, Check]> = [
  KEY,
  ['event', 'string'],
  ['list_id', 'string'],
  ['resolved_at', 'datetime'],
  ['signature', 'string'],
];

const SPECS: Record<string, KindSpec> = {
  property_list_changed: {
    kind: 'property_list_changed',
    required: LIST_CHANGE,
    at: 'resolved_at',
  },
  collection_list_changed: {
    kind: 'collection_list_changed',
    required: LIST_CHANGE,
    at: 'resolved_at',
  },
  artifact: {
    kind: 'artifact',
    required: [
      KEY,
      ['media_buy_id', 'string'],
      ['batch_id', 'string'],
      ['timestamp', 'datetime'],
      ['artifacts', 'array'],
    ],
    at: 'timestamp',
  },
  revocation_notification: {
    kind: 'revocation_notification',
    required: [
      KEY,
      ['rights_id', 'string'],
      ['brand_id', 'string'],
      ['reason', 'string'],
      ['effective_at', 'datetime'],
    ],
    at: 'effective_at',
  },
};

const DATETIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The kind a body that is not a task envelope names by its members, if any. */
function agentKind(v: Obj): KindSpec | null {
  if ('status' in v || 'task_id' in v) return null;
  if (v.event === 'property_list_changed' || v.event === 'collection_list_changed') {
    return SPECS[v.event] as KindSpec;
  }
  if ('rights_id' in v) return SPECS.revocation_notification as KindSpec;
  if ('artifacts' in v && ('batch_id' in v || 'media_buy_id' in v)) {
    return SPECS.artifact as KindSpec;
  }
  return null;
}

function valid(value: unknown, check: Check): boolean {
  switch (check) {
    case 'string':
      return typeof value === 'string';
    case 'datetime':
      return typeof value === 'string' && DATETIME.test(value) && !Number.isNaN(Date.parse(value));
    case 'array':
      return Array.isArray(value);
    case 'key':
      return typeof value === 'string' && IDEMPOTENCY_KEY_PATTERN.test(value);
  }
}

function readAgentKind(v: Obj, spec: KindSpec): Envelope {
  const missing = spec.required.filter(([f]) => v[f] === undefined || v[f] === null);
  if (missing.length === 1 && missing[0]![0] === 'idempotency_key') {
    throw new EnvelopeError('missing_idempotency_key', ['idempotency_key']);
  }
  if (missing.length > 0) {
    throw new EnvelopeError(
      'missing_envelope_fields',
      missing.map(([f]) => f),
    );
  }
  const bad = spec.required.filter(([f, check]) => !valid(v[f], check)).map(([f]) => f);
  if (bad.length > 0) throw new EnvelopeError('invalid_envelope', bad);
  return {
    kind: spec.kind,
    format: 'mcp',
    idempotencyKey: v.idempotency_key as string,
    notificationId: null,
    taskId: null,
    operationId: null,
    taskType: null,
    status: null,
    timestamp: v[spec.at] as string,
    result: v,
    payload: v,
  };
}

/** The envelope's members the store keeps as text, by the name the sender gave them. */
const STORED: Array<[keyof WebhookEvent, string]> = [
  ['notificationId', 'notification_id'],
  ['taskId', 'task_id'],
  ['operationId', 'operation_id'],
  ['taskType', 'task_type'],
  ['timestamp', 'timestamp'],
];

/**
 * Refuses a U+0000 in a member the store keeps as text: valid JSON (`\u0000`), but no
 * PostgreSQL text holds it, so the claim would fail on every retry and the sender would be
 * answered 503 for ever instead of being told what is wrong with the event.
 */
function refuseNul(event: WebhookEvent): void {
  const bad = STORED.filter(([k]) => {
    const v = event[k];
    return typeof v === 'string' && v.includes('\u0000');
  }).map(([, name]) => name);
  if (bad.length > 0) throw new EnvelopeError('invalid_envelope', bad);
}

/** The envelope of a parsed body, or the envelope error to answer with (422). */
export function readEnvelope(
  value: unknown,
  prefer?: 'mcp' | 'a2a',
): Envelope | { error: EnvelopeError } {
  try {
    const spec = isObject(value) ? agentKind(value) : null;
    if (spec) return readAgentKind(value as Obj, spec);
    const event = parseWebhookPayload(value, prefer ? { prefer } : {});
    refuseNul(event);
    const kind: WebhookKind =
      event.format === 'a2a' && event.a2aKind === 'message' ? 'a2a_message' : 'task';
    return { ...event, kind };
  } catch (err) {
    if (err instanceof EnvelopeError) return { error: err };
    throw err;
  }
}
