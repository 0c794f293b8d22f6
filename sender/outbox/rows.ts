/**
 * The outbox's rows as its users see them: a claimed event, why a claim missed, a settle
 * and the attempt record written with it, the rows a recovery re-dispatches, and the
 * outbox's error (the outbox itself: outbox.ts).
 */
import { SvcError } from '../../shared/errors/base.js';
import type { DeliveryAuth, WebhookChannel } from './types.js';
import type { AttemptExchange } from '../delivery/exchange.js';

/** 24 h: the floor of the spec's retry horizon, used when the seller advertises none. */
export const DEFAULT_RETRY_HORIZON_SECONDS = 86_400;

export type OutboxState = 'pending' | 'delivered' | 'stopped' | 'expired';

/** A row claimed for one attempt. */
export interface ClaimedEvent {
  id: string;
  idempotencyKey: string;
  body: Buffer;
  url: string;
  auth: DeliveryAuth;
  channel: WebhookChannel;
  notificationType: string;
  notificationId: string | null;
  mediaBuyId: string | null;
  /** The buys an aggregated report covers; null for any other event. */
  mediaBuyIds: string[] | null;
  principalId: string | null;
  subscriberId: string | null;
  sequenceNumber: number | null;
  /** 1-based number of this attempt. */
  attempt: number;
  /** Unix ms (database clock) of the first attempt: the horizon counts from it. */
  firstAttemptAt: number;
  horizonSeconds: number;
  /** Unix ms, database clock, at claim time. */
  dbNow: number;
}

/** Why a row could not be claimed now. */
export type ClaimMiss =
  | { kind: 'missing' } // not (yet) committed, or rolled back
  | { kind: 'finished'; state: OutboxState }
  | { kind: 'not_due'; notBefore: number }
  | { kind: 'expired' };

export interface SettleInput {
  id: string;
  state: OutboxState;
  status: number | null;
  error: string | null;
  delayMs?: number;
  /**
   * The attempt's webhook_activity record, written in the settle's own statement: an
   * attempt whose outcome is settled is recorded with it, whatever happens to the worker
   * afterwards. Either way the settle closes the row's earlier `pending` records (their
   * attempts were interrupted).
   */
  record?: SettledAttempt;
}

/** The outcome of one attempt as webhook_activity records it (the rest comes from the row). */
export interface SettledAttempt {
  attempt: number;
  status: 'success' | 'failed' | 'timeout' | 'connection_error';
  httpStatusCode: number | null;
  responseTimeMs: number | null;
  errorMessage: string | null;
  /** Recorded URL (no query, no fragment). */
  url: string;
  firedAt: Date;
  completedAt: Date;
  /** The start of the receiver's answer, bounded and sanitised (delivery/snippet.ts). */
  responseSnippet?: string | null;
  /** The signing key's kid for RFC 9421 attempts; null for HMAC and Bearer. */
  keyId?: string | null;
  /** Headers both ways and timing, bounded and without credentials (delivery/exchange.ts). */
  exchange?: AttemptExchange | null;
}

/** A pending delivery as the recovery after a Redis loss dispatches it again. */
export interface RecoveryRow {
  id: string;
  targetUrl: string;
  /** Until it is due, ms (negative when overdue). */
  dueInMs: number;
}

/** Pending rows of one target URL due in the same second, as a dispatch recovery reads them. */
export interface PendingGroup {
  url: string;
  dueInMs: number;
  ids: string[];
}

export class OutboxError extends SvcError {
  static override readonly code = 'ERR_OUTBOX';

  constructor(message: string) {
    super(message);
    this.name = 'OutboxError';
  }
}
