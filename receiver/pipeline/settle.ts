/**
 * The store half of the receiver pipeline (supplement §5.1 steps 6-7, §5.2, §5.3): claim
 * (the delivery key, with the nonce insert and the ordering check in the same store call),
 * order (what the ordering decision means for this delivery), publish (hand the event over;
 * a failure gives the claim back and answers 503) and acknowledge (the done-mark, then
 * 200). Every answer here is exact: 503 for an identical delivery in flight, 409 for a
 * changed payload (3.2), 200 only after publication returned.
 */
import { WebhookVerificationError } from '../../shared/errors/webhook-codes.js';
import { fingerprint } from '../../shared/json/canonical.js';
import { ForwardError } from '../publish/forward.js';
import type { Publisher, ReceivedEvent } from '../publish/types.js';
import {
  heartbeat,
  type AcceptOutcome,
  type Claim,
  type DeliveryStore,
  type OrderingDecision,
  type ProtocolVersion,
  type TaskObservation,
} from '../store/delivery-store.js';
import type { Authenticated } from './auth.js';
import { channelNotificationType } from './channel-notification.js';
import type { Envelope } from './envelope.js';
import {
  errorResponse,
  ok,
  retryLater,
  verificationFailure,
  type ReceiverResponse,
} from './responses.js';
import { Halt, refuse, type Delivery, type PipelineParts } from './stages.js';

export interface SettleParts extends PipelineParts {
  store: DeliveryStore;
  /** The store inserts step 13's nonce in its claim call (same database, one round trip). */
  storeBurnsNonces: boolean;
  protocolVersion: ProtocolVersion;
  publisher: Publisher;
  retryAfter: number;
}

export interface Claimed {
  claim: Claim;
  decision: OrderingDecision;
  reEmission: boolean;
  logCtx: Record<string, unknown>;
}

/** A short, non-reversible handle of an idempotency key for logs (keys never logged whole). */
function keyHint(key: string): string {
  return `${key.slice(0, 8)}…`;
}

function observationOf(event: Envelope): TaskObservation {
  return {
    // Reports, impairments and the non-task kinds are not task results: no ordering.
    taskId: event.kind === 'task' && channelNotificationType(event) === null ? event.taskId : null,
    at: event.timestamp,
    status: event.status,
    taskType: event.taskType,
    value: event.result,
    source: event.format === 'a2a' ? 'a2a' : 'webhook',
    notificationId: event.notificationId,
  };
}

/**
 * The store call with step 13's nonce: inside it when the store holds the replay cache,
 * else committed alongside it (and the claim given back if the nonce fails).
 */
async function acceptWithNonce(
  p: SettleParts,
  d: Delivery,
  input: Parameters<DeliveryStore['accept']>[0],
): Promise<AcceptOutcome | WebhookVerificationError> {
  if (p.storeBurnsNonces) {
    const nonce = d.replay.take();
    const out = await p.store.accept(nonce ? { ...input, nonce } : input);
    if (out.kind === 'replayed') return d.replay.failure('replayed');
    if (out.kind === 'rate_abuse') return d.replay.failure('cap');
    return out;
  }
  const [nonce, accepted] = await Promise.allSettled([d.replay.commit(), p.store.accept(input)]);
  if (nonce.status === 'fulfilled' && nonce.value === null) {
    if (accepted.status === 'rejected') throw accepted.reason;
    return accepted.value;
  }
  // The claim ran alongside the nonce insert; give it back when the request stops here.
  if (accepted.status === 'fulfilled' && accepted.value.kind === 'claimed') {
    await p.store.release(accepted.value.claim).catch(() => {});
  }
  if (nonce.status === 'rejected') throw nonce.reason;
  return nonce.value as WebhookVerificationError;
}

/** 6. Claim (sender, idempotency_key), with the nonce and the ordering check. */
export async function claim(
  p: SettleParts,
  d: Delivery,
  auth: Authenticated,
  event: Envelope,
  value: unknown,
): Promise<Halt | Claimed> {
  const fp = fingerprint(value);
  const key = event.idempotencyKey ?? `payload:${fp}`;
  const sender = auth.sender;
  const out = await acceptWithNonce(p, d, {
    sender,
    key,
    fingerprint: fp,
    observation: observationOf(event),
  });
  if (out instanceof WebhookVerificationError) {
    return refuse(p, verificationFailure(out), out.code, { step: out.step });
  }
  const logCtx = { sender, key: keyHint(key), keyid: auth.keyid };
  switch (out.kind) {
    case 'claimed':
      return { claim: out.claim, decision: out.decision, reEmission: out.reEmission, logCtx };
    case 'in_flight':
      return refuse(
        p,
        retryLater('delivery_in_progress', 'this delivery is still being processed', 1),
        'delivery_in_progress',
        logCtx,
      );
    case 'conflict':
      return refuse(
        p,
        errorResponse(
          409,
          'idempotency_conflict',
          'idempotency_key reused with a different payload',
        ),
        'idempotency_conflict',
        logCtx,
      );
    case 'done':
      if (out.outcome === 'conflict' && p.protocolVersion === '3.2')
        return terminalConflict(p, logCtx);
      p.metrics.duplicates.inc();
      p.log.debug({ event: 'webhook_duplicate', ...logCtx });
      return new Halt(ok('duplicate'));
    default:
      return refuse(
        p,
        errorResponse(429, 'dedup_storage_bound', 'too many stored deliveries for this sender', {
          'retry-after': '60',
        }),
        'dedup_storage_bound',
        { sender },
      );
  }
}

function terminalConflict(p: SettleParts, logCtx: Record<string, unknown>): Halt {
  return refuse(
    p,
    errorResponse(409, 'terminal_conflict', 'a different terminal result was settled first'),
    'terminal_conflict',
    logCtx,
  );
}

/** 7. Order: a terminal that lost or repeats is settled here; anything else is published. */
export async function order(p: SettleParts, c: Claimed): Promise<Halt | { stale: boolean }> {
  if (c.decision === 'terminal_conflict') {
    await p.store.complete(c.claim, 'conflict');
    return p.protocolVersion === '3.2' ? terminalConflict(p, c.logCtx) : new Halt(ok('ignored'));
  }
  if (c.decision === 'terminal_duplicate') {
    await p.store.complete(c.claim, 'duplicate');
    p.metrics.duplicates.inc();
    return new Halt(ok('duplicate'));
  }
  return { stale: c.decision === 'stale' };
}

/** 8. Publish: hand the event over; on failure give the claim back and answer 503. */
export async function publish(
  p: SettleParts,
  c: Claimed,
  event: ReceivedEvent,
): Promise<Halt | { outcome: string }> {
  const beat = heartbeat(p.store, c.claim);
  const end = p.metrics.publication.startTimer();
  try {
    await p.publisher.publish(event);
    p.metrics.published.inc({ kind: event.stale ? 'stale' : 'current' });
    return { outcome: event.stale ? 'stale' : 'published' };
  } catch (err) {
    p.log.warn(
      {
        event: 'webhook_publication_failed',
        sender: event.sender,
        key: keyHint(event.idempotencyKey),
        err: (err as Error).message,
      },
      'publication failed',
    );
    await p.store.release(c.claim).catch(() => {});
    // A forward target's failure names the target, so the sender (and a grading report) says
    // which app refused; any other publisher's error (an app's handler) stays in the log.
    const told = err instanceof ForwardError ? `: ${err.message}` : '';
    return new Halt(
      retryLater(
        'publication_failed',
        `the event could not be handed over yet${told}`,
        p.retryAfter,
      ),
    );
  } finally {
    end();
    beat.stop();
  }
}

/** 9. Acknowledge: the done-mark (batched with other deliveries' store calls), then 200. */
export async function acknowledge(
  p: SettleParts,
  c: Claimed,
  outcome: string,
): Promise<ReceiverResponse> {
  if (!(await p.store.complete(c.claim, outcome))) {
    // Published, but another process took the key over meanwhile (our lease ran out); it
    // may publish again, which targets deduplicate on the key. The event is out: say so.
    p.log.warn({ event: 'webhook_claim_lost', ...c.logCtx });
  }
  p.log.info({
    event: 'webhook_verified',
    outcome,
    stale: outcome === 'stale',
    re_emission: c.reEmission,
    ...c.logCtx,
  });
  return ok(outcome);
}

/** What the publisher receives for a claimed delivery. */
export function receivedEvent(
  auth: Authenticated,
  event: Envelope,
  c: Claimed,
  body: Buffer,
  stale: boolean,
): ReceivedEvent {
  return {
    sender: auth.sender,
    idempotencyKey: c.claim.key,
    kind: event.kind,
    notificationId: event.notificationId,
    taskId: event.taskId,
    operationId: event.operationId,
    taskType: event.taskType,
    status: event.status,
    timestamp: event.timestamp,
    format: event.format,
    payload: event.payload,
    body,
    stale,
    reEmission: c.reEmission,
    terminal: c.decision === 'terminal_won',
    redelivery: c.claim.takeover,
    auth: { mode: auth.mode, keyid: auth.keyid },
  };
}
