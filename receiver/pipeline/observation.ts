/**
 * What the receiver tells an observer (the sidecar console's event log) about each
 * delivery once it is answered: the answer, its code, and who sent what as far as the
 * pipeline got. Never the body, never a credential.
 */
import type { ReceiverResponse } from './responses.js';

export interface DeliveryObservation {
  /** Unix ms. */
  at: number;
  httpStatus: number;
  /** The error code of a refusal, else the outcome (`published`, `duplicate`, `stale`...). */
  code: string;
  /** The verified sender; null when the delivery was refused before authentication ended. */
  sender: string | null;
  /** The signature's keyid (as claimed when authentication failed), if any. */
  keyid: string | null;
  taskId: string | null;
  eventStatus: string | null;
  idempotencyKey: string | null;
}

/** What the pipeline learns on the way, filled in as it goes. */
export interface Seen {
  sender?: string;
  keyid?: string | null;
  event?: { taskId?: string | null; status?: string | null; idempotencyKey?: string | null };
}

const KEYID = /keyid="([^"]{1,200})"/;

function codeOf(res: ReceiverResponse): string {
  try {
    const b = JSON.parse(res.body) as { error?: { code?: unknown }; status?: unknown };
    const code = b.error?.code ?? b.status;
    if (typeof code === 'string') return code;
  } catch {
    // Not JSON: the status alone says it.
  }
  return String(res.status);
}

export function observation(
  res: ReceiverResponse,
  seen: Seen,
  headers: Record<string, string | string[] | undefined>,
  at: number,
): DeliveryObservation {
  let keyid = seen.keyid ?? null;
  if (keyid === null && seen.keyid === undefined) {
    const input = headers['signature-input'];
    keyid = KEYID.exec(Array.isArray(input) ? input.join(',') : (input ?? ''))?.[1] ?? null;
  }
  return {
    at,
    httpStatus: res.status,
    code: codeOf(res),
    sender: seen.sender ?? null,
    keyid,
    taskId: seen.event?.taskId ?? null,
    eventStatus: seen.event?.status ?? null,
    idempotencyKey: seen.event?.idempotencyKey ?? null,
  };
}
