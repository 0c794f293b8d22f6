/**
 * The receiver pipeline, transport-agnostic: `handle()` takes a method, the full URL as
 * received, headers and the body (bytes or a stream) and returns status, headers and body.
 * The Koa middleware, the node:http adapter and the sidecar all call it.
 *
 * `run()` is the stages of supplement §5.1 in order, each a small typed function that
 * returns its product or the answer that ends the delivery (a `Halt`):
 *   gate -> authenticate -> verify -> parse -> envelope   (stages.ts: 405/415/413, 401, 413/400/408/503, 401, 422)
 *   claim -> order -> publish -> acknowledge              (settle.ts: 200 dup / 503 / 409 / 429, then 200)
 * The delivery store (../store/delivery-store.ts) is the only place state lives; with the
 * PostgreSQL store and a PostgreSQL replay cache in the same schema, the nonce insert, the
 * claim and the ordering check are one statement per batch of concurrent deliveries, and the
 * done-marks ride in the next such statement.
 * An internal failure (database or publisher down) is a 503 with Retry-After, never a 500.
 *
 * Why 422 for an invalid envelope (the supplement leaves 400 or 422 open): the spec's status
 * table gives 422 to schema validation failures, and `EnvelopeError.status` says 422 for
 * every shared consumer; it is a 4xx, so senders do not retry a body that cannot change.
 */
import type { BrandProfile } from '../../shared/brand.js';
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import type { KeyResolver, ReplayStore, RevocationCheck } from '../../shared/signing/verify.js';
import type { KeyObserver } from '../admission/tracker.js';
import type { Publisher } from '../publish/types.js';
import type { DeliveryStore, ProtocolVersion } from '../store/delivery-store.js';
import type { TaskConvergence } from '../store/pg/convergence.js';
import { PgDeliveryStore } from '../store/pg/pg-delivery-store.js';
import type { RouteDecision } from '../trust/trust-file.js';
import { coalesceAtCap, DeferredReplay } from './deferred-replay.js';
import { bodyBudgets, DEFAULT_MAX_BODY_BYTES, type BodyAccount, type BodyBudget } from './gates.js';
import { ReceiverMetrics } from './metrics.js';
import { observation, type DeliveryObservation, type Seen } from './observation.js';
import { retryLater, type ReceiverResponse } from './responses.js';
import { acknowledge, claim, order, publish, receivedEvent, type SettleParts } from './settle.js';
import {
  authenticate,
  envelope,
  gate,
  Halt,
  parse,
  verify,
  type Delivery,
  type ReceiverRequest,
} from './stages.js';
import { parsePublicOrigins } from './public-origins.js';
import { receiveSpan, timedStage, traceForApp, type StageTimes } from './tracing.js';
import type { Context } from '@opentelemetry/api';

export type { ReceiverResponse, ReceiverRequest };

export interface WebhookReceiverOptions {
  /** Holds the receiver's tables (the PostgreSQL delivery store); unused when `store` is given. */
  pool: Pool;
  /**
   * Where delivery state lives; default the PostgreSQL store on `pool` and `schema`. An
   * in-process `MemoryDeliveryStore` suits unit tests (never production: not shared, not durable).
   */
  store?: DeliveryStore;
  /** PostgreSQL schema of the receiver's tables (default `receiver`). */
  schema?: string;
  profile: BrandProfile;
  protocolVersion: ProtocolVersion;
  keys: KeyResolver;
  revocation?: RevocationCheck;
  replay: ReplayStore;
  /** The auth mode of a path (the trust file's `routeRegistration`); default RFC 9421 everywhere. */
  route?: (path: string) => RouteDecision;
  publisher: Publisher;
  logger?: Logger;
  maxBodyBytes?: number;
  /** Longest wait for the next body chunk before the request is answered 400 (default 10 s). */
  bodyIdleTimeoutMs?: number;
  /**
   * Deadline of the whole body, from the moment the request reaches the receiver: a body
   * still incomplete then is answered 408 and its connection closed (default 20 s).
   */
  bodyTimeoutMs?: number;
  /**
   * Bytes of request bodies held at once, over all requests in flight (default 64 MiB, at
   * least `maxBodyBytes`). A body that would exceed it is answered 503 + Retry-After before
   * it is read (its declared length counts up front). Only streamed bodies count.
   */
  bodyBudgetBytes?: number;
  /**
   * The share of `bodyBudgetBytes` for bodies whose sender is not known before they are read
   * (legacy HMAC routes: anyone can write well-formed HMAC headers), so a flood of them cannot
   * take the whole budget from authenticated senders (default a quarter of the budget, at
   * least `maxBodyBytes`).
   */
  unauthenticatedBodyBudgetBytes?: number;
  /** Milliseconds since the epoch; defaults to Date.now. */
  clock?: () => number;
  /** Claim lease before another process may take an unfinished key over (default 30 s). */
  leaseMs?: number;
  maxKeysPerSender?: number;
  /** The sender's advertised `delivery_retry_horizon_seconds` (retention is at least 24 h). */
  retryHorizonSeconds?: (sender: string) => number | undefined;
  /** Envelope shape to prefer when a body could be read as both. */
  preferFormat?: 'mcp' | 'a2a';
  /** Seconds in the Retry-After of a 503 (default 5). */
  retryAfterSeconds?: number;
  metrics?: ReceiverMetrics;
  /** How often a sender's stored-key count (its storage bound) is re-read (default 5 s). */
  countRefreshMs?: number;
  /** New-keyid admission tracking, told of each keyid once its signature verified. */
  admission?: KeyObserver;
  /**
   * Wait for the WAL flush when committing claims and done-marks (default false). Off, a
   * database crash can cost at most one extra publication of a key delivered again, never
   * an event (see schema.ts); the queue publisher's insert always waits for the flush.
   */
  synchronousCommit?: boolean;
  /** Told of every answered delivery (the sidecar console's event log); must not throw. */
  observe?: (o: DeliveryObservation) => void;
  /**
   * This receiver's own public origins (`https://buyer.example`, `http://10.0.0.5:8787`).
   * Set, a delivery addressed to any other origin (its Host / target URI) is refused with
   * `webhook_target_uri_malformed` before any other work (public-origins.ts). Unset, any
   * Host the request names is accepted as its `@authority`.
   */
  publicOrigins?: readonly string[];
}

export const DEFAULT_BODY_BUDGET_BYTES = 64 * 1024 * 1024;
export const DEFAULT_BODY_TIMEOUT_MS = 20_000;

export class WebhookReceiver {
  readonly store: DeliveryStore;
  /** Task convergence for polls and A2A clients (`observeTerminal`, `terminalOf`). */
  readonly convergence: Pick<TaskConvergence, 'observeTerminal'> &
    Partial<Pick<TaskConvergence, 'terminalOf'>>;
  readonly metrics: ReceiverMetrics;
  readonly protocolVersion: ProtocolVersion;
  /** Request bodies in flight, in bytes, against their budget. */
  readonly bodyBudget: BodyBudget;
  /** The share of it for bodies read before their sender is known (legacy HMAC). */
  readonly unauthenticatedBodyBudget: BodyBudget;
  private readonly o: WebhookReceiverOptions;
  private readonly parts: SettleParts;
  private readonly replay: ReplayStore;
  private purgeTimer: NodeJS.Timeout | null = null;

  constructor(options: WebhookReceiverOptions) {
    this.o = options;
    this.protocolVersion = options.protocolVersion;
    const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const budgets = bodyBudgets(
      maxBody,
      options.bodyBudgetBytes ?? DEFAULT_BODY_BUDGET_BYTES,
      options.unauthenticatedBodyBudgetBytes,
    );
    this.bodyBudget = budgets.all;
    this.unauthenticatedBodyBudget = budgets.unauthenticated;
    this.metrics = options.metrics ?? new ReceiverMetrics();
    this.replay = coalesceAtCap(options.replay);
    const pg = options.store
      ? null
      : new PgDeliveryStore({
          pool: options.pool,
          schema: options.schema,
          protocolVersion: options.protocolVersion,
          leaseMs: options.leaseMs,
          maxKeysPerSender: options.maxKeysPerSender,
          countRefreshMs: options.countRefreshMs,
          retryHorizonSeconds: options.retryHorizonSeconds,
          synchronousCommit: options.synchronousCommit,
        });
    this.store = options.store ?? (pg as PgDeliveryStore);
    this.convergence = pg ? pg.convergence : this.store;
    this.parts = {
      log: options.logger ?? silentLogger,
      metrics: this.metrics,
      profile: options.profile,
      keys: options.keys,
      revocation: options.revocation,
      admission: options.admission,
      route: options.route,
      maxBody,
      bodyIdleTimeoutMs: options.bodyIdleTimeoutMs,
      bodyTimeoutMs: options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
      bodyBudget: budgets.all,
      unauthenticatedBodyBudget: budgets.unauthenticated,
      clock: options.clock ?? Date.now,
      preferFormat: options.preferFormat,
      origins: options.publicOrigins
        ? parsePublicOrigins(options.publicOrigins, 'publicOrigins')
        : null,
      store: this.store,
      storeBurnsNonces: this.store.burnsNonces(options.replay),
      protocolVersion: options.protocolVersion,
      publisher: options.publisher,
      retryAfter: options.retryAfterSeconds ?? 5,
    };
  }

  /** Creates or upgrades the receiver's tables and functions. */
  async migrate(): Promise<void> {
    await this.store.migrate();
  }

  /**
   * Runs one delivery through every stage; never throws, never answers 500. Traced as one
   * `webhook.receive` span continuing the request's `traceparent` (./tracing.ts).
   */
  handle(req: ReceiverRequest): Promise<ReceiverResponse> {
    return receiveSpan(req.headers, req.method, (ctx, times) => this.handleNow(req, ctx, times));
  }

  private async handleNow(
    req: ReceiverRequest,
    ctx: Context,
    times: StageTimes,
  ): Promise<ReceiverResponse> {
    let res: ReceiverResponse;
    const d: Delivery = {
      req,
      seen: {} as Seen,
      accounts: [] as BodyAccount[],
      startedMs: Date.now(),
      replay: new DeferredReplay(this.replay),
    };
    try {
      res = await this.run(d, ctx, times);
    } catch (err) {
      this.parts.log.error({ event: 'webhook_internal_error', err }, 'receiver internal failure');
      res = retryLater('receiver_unavailable', 'temporarily unavailable', this.parts.retryAfter);
    } finally {
      for (const a of d.accounts) a.release();
    }
    this.metrics.responses.inc({ status: String(res.status) });
    if (this.o.observe) this.o.observe(observation(res, d.seen, req.headers, this.parts.clock()));
    return res;
  }

  /** The stages in order, timed in four groups (gate, verify, claim, publish); the first `Halt` is the answer. */
  private async run(d: Delivery, ctx: Context, times: StageTimes): Promise<ReceiverResponse> {
    const p = this.parts;
    const gated = await timedStage('webhook.gate', ctx, times, async () => gate(p, d.req));
    if (gated instanceof Halt) return gated.res;
    const checked = await timedStage('webhook.verify', ctx, times, () =>
      this.verified(d, gated.declared),
    );
    if (checked instanceof Halt) return checked.res;
    const { auth, body, value, event } = checked;
    const claimed = await timedStage('webhook.claim', ctx, times, async () => {
      const c = await claim(p, d, auth, event, value);
      if (c instanceof Halt) return c;
      const ordered = await order(p, c);
      return ordered instanceof Halt ? ordered : { claimed: c, stale: ordered.stale };
    });
    if (claimed instanceof Halt) return claimed.res;
    const published = await timedStage('webhook.publish', ctx, times, (publishCtx) => {
      const e = receivedEvent(auth, event, claimed.claimed, body, claimed.stale);
      const trace = traceForApp(d.req.headers, publishCtx);
      if (trace) e.trace = trace;
      return publish(p, claimed.claimed, e);
    });
    if (published instanceof Halt) return published.res;
    return acknowledge(p, claimed.claimed, published.outcome);
  }

  /** Authenticate, verify, parse and read the envelope: the `webhook.verify` group. */
  private async verified(d: Delivery, declared: string | null) {
    const p = this.parts;
    const pending = await authenticate(p, d);
    if (pending instanceof Halt) return pending;
    const verified = await verify(p, d, declared, pending);
    if (verified instanceof Halt) return verified;
    const { auth, body } = verified;
    const parsed = await parse(p, d, auth, body);
    if (parsed instanceof Halt) return parsed;
    const event = await envelope(p, d, auth, parsed.value);
    if (event instanceof Halt) return event;
    return { auth, body, value: parsed.value, event };
  }

  /** Starts the retention purge job of the delivery store. */
  startPurging(intervalMs = 60_000): void {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    this.purgeTimer = setInterval(() => {
      this.store
        .purgeExpired()
        .catch((err: unknown) =>
          this.parts.log.warn({ event: 'purge_failed', err: (err as Error).message }),
        );
    }, intervalMs);
    this.purgeTimer.unref();
  }

  /** Runs one purge of every table now; returns rows deleted. */
  purgeExpired(): Promise<number> {
    return this.store.purgeExpired();
  }

  async close(): Promise<void> {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    this.purgeTimer = null;
    await this.o.publisher.close?.();
  }
}
