/**
 * The receiver's delivery store: the one interface behind which everything the receiver
 * keeps about deliveries lives (supplement §5.2 dedup, §5.3 ordering and convergence, §2.9
 * step 13 when the store also holds the replay cache). The pipeline talks to this and
 * nothing else; `pg/` is the PostgreSQL implementation, `memory/` an in-process one for
 * unit tests and single-process tools. `test/receiver/store/contract.ts` is the contract:
 * any implementation must pass it.
 *
 * The contract, in short:
 * - `accept` claims (sender, idempotency_key) for publication and, when the claim is won,
 *   records the delivery's task observation and returns its ordering decision. One owner
 *   per key at a time across every process sharing the store; a held claim carries an owner
 *   id and a generation that fence a late owner out. 3.2 binds the key to the payload's
 *   fingerprint (a changed payload is `conflict`, forever); 3.1 does not.
 * - When a nonce is given (only if `burnsNonces` said yes), it is inserted first, in the
 *   same atomic step: a live nonce is `replayed`, a keyid at its cap `rate_abuse`, and in
 *   both cases nothing is claimed or observed.
 * - A new key of a sender at its storage bound is `over_limit`; keys already stored are
 *   still answered. `senderKeyCount` reads the bound's count in O(1).
 * - `complete` marks a held claim done with an outcome (false when the claim was lost);
 *   `release` gives it back so a retry can claim at once; `renew` extends its lease.
 * - `observeTerminal` converges a terminal result seen outside the webhook path (polls).
 * - `purgeExpired` deletes what is past retention (max(24 h, the sender's horizon)) and
 *   keeps the per-sender counts exact.
 */
import type { ReplayStore } from '../../shared/signing/verify.js';

export type ProtocolVersion = '3.1' | '3.2';

/** Retention floor of the spec: dedup state lives at least 24 hours. */
export const MIN_RETENTION_SECONDS = 86_400;
export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_MAX_KEYS_PER_SENDER = 5_000_000;

/** A held claim: the fence a publication carries until it marks the key done. */
export interface Claim {
  readonly sender: string;
  readonly key: string;
  readonly owner: string;
  readonly generation: number;
  /** True when the claim was taken over from an owner whose lease ran out. */
  readonly takeover: boolean;
}

export type ClaimResult =
  | { kind: 'claimed'; claim: Claim }
  | { kind: 'in_flight' }
  | { kind: 'done'; outcome: string | null }
  | { kind: 'conflict' }
  | { kind: 'over_limit' };

export type ObservationSource = 'webhook' | 'poll' | 'a2a';

export type OrderingDecision =
  'current' | 'stale' | 'terminal_won' | 'terminal_duplicate' | 'terminal_conflict';

/** What a delivery says about its task, for ordering and convergence. */
export interface TaskObservation {
  /** Null for deliveries outside task ordering (reports, list changes, revocations...). */
  taskId: string | null;
  /** ISO 8601 `timestamp` of the status, if any. */
  at: string | null;
  status: string | null;
  taskType: string | null;
  /** The extracted result (`result` of an MCP envelope, the data part of an A2A one). */
  value: unknown;
  source: ObservationSource;
  notificationId: string | null;
}

/** Step 13's insert, handed to a store that holds the replay cache too. */
export interface NonceBurn {
  keyid: string;
  nonce: string;
  ttlSeconds: number;
}

export interface AcceptInput {
  sender: string;
  key: string;
  /** RFC 8785 fingerprint of the payload. */
  fingerprint: string;
  observation: TaskObservation;
  nonce?: NonceBurn;
}

export type AcceptOutcome =
  | { kind: 'claimed'; claim: Claim; decision: OrderingDecision; reEmission: boolean }
  | Exclude<ClaimResult, { kind: 'claimed' }>
  | { kind: 'replayed' }
  | { kind: 'rate_abuse' };

export interface TerminalInput {
  sender: string;
  taskId: string;
  taskType: string | null;
  status: string;
  value: unknown;
  source: ObservationSource;
}

export interface DeliveryStore {
  readonly protocolVersion: ProtocolVersion;
  readonly leaseMs: number;
  /** Creates or upgrades what the store needs (idempotent). */
  migrate(): Promise<void>;
  /** Whether `accept` can insert this replay cache's nonces in its own atomic step. */
  burnsNonces(replay: ReplayStore): boolean;
  accept(input: AcceptInput): Promise<AcceptOutcome>;
  complete(claim: Claim, outcome: string): Promise<boolean>;
  release(claim: Claim): Promise<void>;
  renew(claim: Claim): Promise<boolean>;
  observeTerminal(input: TerminalInput): Promise<'won' | 'duplicate' | 'conflict'>;
  purgeExpired(): Promise<number>;
  /** Keys stored for a sender (what its storage bound counts), read in O(1). */
  senderKeyCount(sender: string): Promise<number>;
  /** max(24 h, the sender's advertised horizon), counted from first acceptance. */
  retentionSeconds(sender: string): number;
}

export function retentionSeconds(horizon: number | undefined): number {
  return Math.max(
    MIN_RETENTION_SECONDS,
    horizon !== undefined && Number.isFinite(horizon) ? Math.ceil(horizon) : 0,
  );
}

/** The outcome `observeTerminal` reports for an ordering decision. */
export function terminalOutcome(decision: OrderingDecision): 'won' | 'duplicate' | 'conflict' {
  return decision === 'terminal_won'
    ? 'won'
    : decision === 'terminal_duplicate'
      ? 'duplicate'
      : 'conflict';
}

/**
 * Keeps a claim alive during a long publication (renewal every third of the lease).
 * `lost()` tells whether a renewal found the claim gone.
 */
export function heartbeat(
  store: Pick<DeliveryStore, 'renew' | 'leaseMs'>,
  claim: Claim,
): { stop(): void; lost(): boolean } {
  let lost = false;
  const timer = setInterval(
    () => {
      store.renew(claim).then(
        (ok) => {
          if (!ok) lost = true;
        },
        () => {},
      );
    },
    Math.max(50, Math.floor(store.leaseMs / 3)),
  );
  timer.unref();
  return { stop: () => clearInterval(timer), lost: () => lost };
}
