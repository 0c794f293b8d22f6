/**
 * What a publisher receives and promises. A publisher returns only once the event is
 * handed over (handler done, app answered 2xx, row durably enqueued); a throw means "not
 * published" and the receiver answers 503 so the sender retries. Publication may be
 * attempted again for the same key after an owner died mid-way (`redelivery`), so targets
 * that can deduplicate should use (sender, idempotencyKey).
 */
import type { TraceCarrier } from '../../shared/telemetry/trace-context.js';
import type { WebhookKind } from '../pipeline/envelope.js';

export interface ReceivedEvent {
  /** Sender identity from the verified key (or the legacy registration), never the payload. */
  sender: string;
  idempotencyKey: string;
  /**
   * Which kind of webhook this is: `task` (a task status notification, MCP or A2A),
   * `property_list_changed`, `collection_list_changed`, `artifact`,
   * `revocation_notification` (supplement §6.7). Always set by the receiver.
   */
  kind?: WebhookKind;
  notificationId: string | null;
  taskId: string | null;
  operationId: string | null;
  taskType: string | null;
  status: string | null;
  timestamp: string | null;
  format: 'mcp' | 'a2a';
  /** The parsed envelope. */
  payload: unknown;
  /** The verified body bytes, exactly as received. */
  body: Buffer;
  /** Older than the task's newest applied status (or after its terminal): not current. */
  stale: boolean;
  /** The notification_id was seen before under another idempotency_key. */
  reEmission: boolean;
  /** This delivery settled the task (first authoritative terminal result). */
  terminal: boolean;
  /** A previous owner of this key may have attempted publication before it died. */
  redelivery: boolean;
  auth: { mode: 'rfc9421' | 'hmac' | 'bearer'; keyid: string | null };
  /**
   * The W3C trace context to continue in the app (`traceparent`, `tracestate`): the
   * receiver's publish span when tracing is on, else the sender's own when it sent one.
   */
  trace?: TraceCarrier;
}

export interface Publisher {
  publish(event: ReceivedEvent): Promise<void>;
  close?(): Promise<void>;
}

/** Metadata header names of published events (forward, broker), derived from the brand word. */
export function eventHeaderNames(brand: string): {
  sender: string;
  idempotencyKey: string;
  stale: string;
  reEmission: string;
  redelivery: string;
  format: string;
  taskId: string;
  taskType: string;
  status: string;
  terminal: string;
  notificationId: string;
} {
  const p = `x-${brand}-`;
  return {
    sender: `${p}sender`,
    idempotencyKey: `${p}idempotency-key`,
    stale: `${p}stale`,
    reEmission: `${p}re-emission`,
    redelivery: `${p}redelivery`,
    format: `${p}format`,
    taskId: `${p}task-id`,
    taskType: `${p}task-type`,
    status: `${p}status`,
    terminal: `${p}terminal`,
    notificationId: `${p}notification-id`,
  };
}

/**
 * An event's metadata as string headers: the same set whatever carries the event (an HTTP
 * forward's headers, a NATS message's headers, AMQP message headers, Redis stream fields), so
 * an app can move between modes without re-reading its input, plus the W3C `traceparent` /
 * `tracestate` when the event carries a trace context. Members the event lacks
 * (a task id on a governance webhook, say) are left out rather than sent empty.
 */
export function eventHeaders(e: ReceivedEvent, brand: string): Record<string, string> {
  const n = eventHeaderNames(brand);
  const h: Record<string, string> = {
    [n.sender]: e.sender,
    [n.idempotencyKey]: e.idempotencyKey,
    [n.stale]: String(e.stale),
    [n.reEmission]: String(e.reEmission),
    [n.redelivery]: String(e.redelivery),
    [n.terminal]: String(e.terminal),
    [n.format]: e.format,
  };
  if (e.taskId !== null) h[n.taskId] = e.taskId;
  if (e.taskType !== null) h[n.taskType] = e.taskType;
  if (e.status !== null) h[n.status] = e.status;
  if (e.notificationId !== null) h[n.notificationId] = e.notificationId;
  // The standard names, so the app's own OpenTelemetry propagator finds them.
  if (e.trace) {
    h.traceparent = e.trace.traceparent;
    if (e.trace.tracestate) h.tracestate = e.trace.tracestate;
  }
  return h;
}

/** The flags of an event as a small JSON object (queue rows, pull API). */
export function eventFlags(e: ReceivedEvent): Record<string, unknown> {
  return {
    stale: e.stale,
    re_emission: e.reEmission,
    terminal: e.terminal,
    redelivery: e.redelivery,
    format: e.format,
    kind: e.kind ?? 'task',
    task_id: e.taskId,
    notification_id: e.notificationId,
    status: e.status,
    ...(e.trace ? { traceparent: e.trace.traceparent } : {}),
    ...(e.trace?.tracestate ? { tracestate: e.trace.tracestate } : {}),
  };
}
