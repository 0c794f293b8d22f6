/**
 * What a publisher receives and promises. A publisher returns only once the event is
 * handed over (handler done, app answered 2xx, row durably enqueued); a throw means "not
 * published" and the receiver answers 503 so the sender retries. Publication may be
 * attempted again for the same key after an owner died mid-way (`redelivery`), so targets
 * that can deduplicate should use (sender, idempotencyKey).
 */
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
}

export interface Publisher {
  publish(event: ReceivedEvent): Promise<void>;
  close?(): Promise<void>;
}

/** Metadata header names of forwarded events, derived from the brand word. */
export function eventHeaderNames(brand: string): {
  sender: string;
  idempotencyKey: string;
  stale: string;
  reEmission: string;
  redelivery: string;
  format: string;
} {
  const p = `x-${brand}-`;
  return {
    sender: `${p}sender`,
    idempotencyKey: `${p}idempotency-key`,
    stale: `${p}stale`,
    reEmission: `${p}re-emission`,
    redelivery: `${p}redelivery`,
    format: `${p}format`,
  };
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
  };
}
