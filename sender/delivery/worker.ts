/**
 * The delivery worker: a BullMQ consumer that turns an outbox row into one signed HTTP
 * attempt, classifies the answer, and either finishes the row or schedules the next
 * attempt. The schedule lives in PostgreSQL (next_attempt_at); the job, pushed back to
 * BullMQ's delayed set under its fixed id, is only the dispatch. A job that stalls (its
 * worker died) runs again on the same row: same key, same bytes, next attempt number.
 */
import { DelayedError, Worker, type Job } from 'bullmq';
import type { Logger } from '../../shared/infra/logger.js';
import { silentLogger } from '../../shared/infra/logger.js';
import { recordedUrl } from '../activity/activity-log.js';
import type { ClaimedEvent, Outbox, SettleInput, SettledAttempt } from '../outbox/outbox.js';
import { ClusterAnswerError } from '../../shared/infra/redis.js';
import { DispatchRecovery } from './dispatch-recovery.js';
import { parseShardSelection } from './shards.js';
import { PausedOrigins } from './paused-origins.js';
import { attemptHeaders, type Signer } from './authenticate.js';
import { classify, type AttemptResult, type Verdict } from './classify.js';
import { OriginLimiter } from './origin-limiter.js';
import { SpanKind, type Context, type Span } from '@opentelemetry/api';
import {
  contextOf,
  timedOnSpan,
  inSpan,
  traceCarrier,
  type TraceCarrier,
} from '../../shared/telemetry/trace-context.js';
import {
  batchOrigin,
  batchTrace,
  closeStarted,
  isBatchJob,
  type BatchJobData,
  type DeliveryJobData,
  type DispatchItem,
} from './queue.js';
import { Semaphore } from './semaphore.js';
import { responseSnippet } from './snippet.js';
import { attemptExchange } from './exchange.js';
import { Transport } from './transport.js';
import type { AttemptReport, DeliveryWorkerOptions } from './worker-options.js';
import {
  activityStatus,
  attemptLogLine,
  authSecrets,
  decideOutcome,
  errorMessage,
  httpStatus,
} from './attempt-outcome.js';

export type { AttemptReport, DeliveryWorkerOptions } from './worker-options.js';

type Step = { kind: 'done' } | { kind: 'later'; at: number };
const DONE: Step = { kind: 'done' };

export class DeliveryWorker {
  /** One BullMQ worker per consumed shard. */
  readonly workers: Array<Worker<DeliveryJobData>>;
  /** The shards this process consumes. */
  readonly shards: readonly number[];
  private readonly outbox: Outbox;
  private readonly signer: Signer;
  private readonly transport: Transport;
  private readonly limiter: OriginLimiter;
  private readonly options: DeliveryWorkerOptions;
  private readonly logger: Logger;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly slots: Semaphore;
  /** Jobs running in this process over all shards (each shard's worker may take up to all). */
  private readonly jobGate: Semaphore;
  private readonly leaseMs: number;
  /** Attempts in flight per origin in this process. */
  private readonly perOrigin: number;
  /** Rows claimed by this worker whose attempt has not settled yet (lease heartbeat). */
  private readonly claimed = new Set<string>();
  private readonly recovery: DispatchRecovery;
  private readonly paused: PausedOrigins;
  private closed = false;
  private started: Promise<void> | null = null;

  constructor(options: DeliveryWorkerOptions) {
    this.options = options;
    this.outbox = options.outbox;
    this.signer = options.signer;
    this.logger = options.logger ?? silentLogger;
    this.transport = new Transport(options);
    this.paused = new PausedOrigins(
      this.outbox.pool,
      this.outbox.schema,
      this.logger,
      options.pausedRefreshMs,
    );
    const jobSlots = options.concurrency ?? 64;
    // One origin may hold at most half the job slots, so a slow or dead receiver (its
    // attempts hanging until the timeout) always leaves room for the others.
    const perOrigin = (this.perOrigin = Math.max(
      1,
      Math.min(options.perOriginConcurrency ?? 16, Math.floor(jobSlots / 2)),
    ));
    const queue = this.outbox.queue;
    this.shards =
      typeof options.shards === 'string' || options.shards === undefined
        ? parseShardSelection(options.shards ?? 'all', queue.shards)
        : [...options.shards];
    if (this.shards.length === 0 || this.shards.some((s) => !(s >= 0 && s < queue.shards))) {
      throw new RangeError(`shards must be indexes 0-${queue.shards - 1}, at least one`);
    }
    // The per-origin limit holds across every worker process on this Redis (leased slots),
    // its key in the origin's shard.
    this.limiter = new OriginLimiter(perOrigin, Math.random, {
      redis: () => this.workers[0]!.client,
      prefix: (origin) => queue.shardPrefix(queue.shardOf(origin)),
      limit: options.perOriginConcurrency ?? 16,
      ttlMs: options.slotLeaseMs ?? 3000,
      // Jobs waiting for a busy origin's slot hold at most a quarter of the job slots: the
      // rest stay free for other origins' work.
      maxWaitingTotal: Math.max(1, Math.floor(jobSlots / 4)),
      onError: (err) => this.logger.warn({ err }, 'origin slot lease failed'),
    });
    this.slots = new Semaphore(options.maxInFlight ?? 256);
    this.jobGate = new Semaphore(jobSlots);
    // Short, and renewed while the attempt runs: a dead worker's rows come back quickly.
    this.leaseMs = options.rowLeaseMs ?? 4500;
    const gated = this.shards.length > 1;
    this.workers = this.shards.map((shard) => {
      const w = new Worker<DeliveryJobData>(
        queue.name,
        (job, token) => (gated ? this.gatedProcess(job, token) : this.process(job, token)),
        {
          connection: options.connection,
          prefix: queue.shardPrefix(shard),
          concurrency: jobSlots,
          lockDuration: options.lockDurationMs ?? 4000,
          stalledInterval: options.stalledIntervalMs ?? 2000,
          // Running a stalled job again is safe (same row, same key, same bytes).
          maxStalledCount: 1000,
          // Jobs are taken only once `start()` has warmed the connections up.
          autorun: false,
        },
      );
      w.on('error', (err) => this.onError(err, shard));
      return w;
    });
    this.recovery = new DispatchRecovery({
      redis: () => this.workers[0]!.client,
      queue,
      shards: this.shards,
      outbox: this.outbox,
      logger: this.logger,
    });
    if (options.autorun ?? true) void this.start();
    this.every(this.leaseMs / 3, () => this.renewLeases());
    const reconcileEvery = options.reconcileEveryMs ?? 5000;
    if (reconcileEvery > 0) {
      this.every(reconcileEvery, () => this.reconcile().then(() => {}));
      this.every(options.recoveryCheckMs ?? 1000, () => this.recovery.check());
    }
    const storageEvery = options.storageEveryMs ?? 3_600_000;
    if (storageEvery > 0)
      this.every(storageEvery, () => this.outbox.maintainStorage().then(() => {}));
  }

  /**
   * Connects (Redis, the claim and settle sessions, each with its statements run once)
   * and signs a few times before taking the first job: a cold worker would otherwise take
   * jobs a warm one could send sooner, and make their first attempts wait on connection
   * set-up. Resolves once jobs are being taken; a warm-up that fails or takes over 5 s is
   * logged and the worker runs anyway (each part retries by itself).
   */
  start(): Promise<void> {
    this.started ??= (async () => {
      const probe = Buffer.from('{}');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([
          ...this.workers.map((w) => w.waitUntilReady()),
          this.outbox.warmUp(),
          Promise.resolve().then(() => {
            for (let i = 0; i < 20; i++) {
              attemptHeaders('https://warm-up.invalid/', probe, { mode: 'rfc9421' }, this.signer);
            }
          }),
        ]),
        // A database or Redis that is down must not keep the worker from starting.
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('warm-up took over 5 s')), 5000);
        }),
      ])
        .catch((err: unknown) => this.logger.warn({ err }, 'delivery worker warm-up failed'))
        .finally(() => clearTimeout(timer));
      if (this.closed) return;
      if ((this.options.reconcileEveryMs ?? 5000) > 0) {
        // At start: what a lost Redis or a dead worker left behind goes out now, not at
        // the first period.
        void this.recovery
          .check()
          .then(() => this.reconcile())
          .catch((err: unknown) => this.logger.warn({ err }, 'start-up reconcile failed'));
      }
      for (const [i, w] of this.workers.entries()) {
        w.run().catch((err: unknown) => {
          this.logger.error({ err, shard: this.shards[i] }, 'delivery worker stopped taking jobs');
        });
      }
    })();
    return this.started;
  }

  private onError(err: Error, shard: number): void {
    if (!(err instanceof ClusterAnswerError)) {
      this.logger.error({ err, shard }, 'delivery worker error');
      return;
    }
    // Once, then stop: a single-node client facing a cluster would otherwise loop on MOVED.
    if (this.fatal) return;
    this.fatal = err;
    void this.close().catch(() => {});
    if (this.options.onFatal) this.options.onFatal(err);
    else this.logger.fatal({ event: 'redis_is_cluster' }, err.message);
  }

  /** Set when the worker stopped for good (see `onFatal`). */
  fatal: Error | null = null;

  private every(ms: number, fn: () => Promise<void>): void {
    const t = setInterval(() => {
      fn().catch((err) => this.logger.warn({ err }, 'sender maintenance task failed'));
    }, ms);
    t.unref();
    this.timers.push(t);
  }

  /** Heartbeat: extends the leases of the rows whose attempts run here. */
  private async renewLeases(): Promise<void> {
    if (this.claimed.size === 0) return;
    await this.outbox.renewLeases([...this.claimed], this.leaseMs);
  }

  /**
   * One reconciler pass: record the attempts of dead workers (lease lapsed, never settled),
   * then re-dispatch pending rows whose job Redis lost.
   */
  async reconcile(): Promise<number> {
    const closed = await this.outbox.closeInterrupted();
    if (closed > 0) {
      this.logger.info({ attempts: closed }, 'reconciler recorded interrupted attempts');
    }
    const n = await this.outbox.reconcile({ graceMs: this.options.reconcileGraceMs ?? 30_000 });
    if (n > 0) this.logger.info({ rows: n }, 'reconciler re-dispatched overdue outbox rows');
    return n;
  }

  private async later(job: Job<DeliveryJobData>, token: string | undefined, at: number) {
    await job.moveToDelayed(Math.max(at, Date.now() + 1), token);
    throw new DelayedError();
  }

  /** With several shards, jobs beyond `concurrency` wait here (locked, not yet begun). */
  private async gatedProcess(job: Job<DeliveryJobData>, token?: string): Promise<void> {
    await this.jobGate.acquire();
    try {
      await this.process(job, token);
    } finally {
      this.jobGate.release();
    }
  }

  private async process(job: Job<DeliveryJobData>, token?: string): Promise<void> {
    const data = job.data;
    if (isBatchJob(data)) return this.processBatch(data, job.timestamp);
    const step = await this.step(data.id, data.origin, job.timestamp, data.trace);
    if (step.kind === 'later') await this.later(job, token, step.at);
  }

  /**
   * First attempts of a group; rows needing a later attempt continue as row jobs. A
   * one-origin group (a recovery batch holds up to 250 rows) runs at most the origin's
   * limit of rows at a time, in id order: its rows queue here rather than in the origin's
   * line.
   */
  private async processBatch(data: BatchJobData, jobTimestamp: number): Promise<void> {
    const handoff: DispatchItem[] = [];
    const one = async (i: number) => {
      const id = data.ids[i]!;
      const origin = batchOrigin(data, i);
      const trace = batchTrace(data, i);
      await this.slots.acquire();
      try {
        const step = await this.step(id, origin, jobTimestamp, trace);
        if (step.kind === 'later') {
          handoff.push(
            trace ? { id, origin, notBefore: step.at, trace } : { id, origin, notBefore: step.at },
          );
        }
      } finally {
        this.slots.release();
      }
    };
    const oneOrigin = data.origins.every((o) => o === data.origins[0]);
    const runners = oneOrigin ? Math.min(this.perOrigin, data.ids.length) : data.ids.length;
    let next = 0;
    await Promise.all(
      Array.from({ length: runners }, async () => {
        while (next < data.ids.length) await one(next++);
      }),
    );
    await this.outbox.queue.dispatch(handoff);
  }

  /**
   * One row, in the trace of the emit that made it when the job carries its context (a
   * recovered row's job does not: its attempt span starts a trace). A run that only waits
   * (paused, throttled, not due) makes no span; one that sends makes the attempt's span.
   */
  private step(
    id: string,
    origin: string,
    jobTimestamp: number,
    trace: TraceCarrier | undefined,
  ): Promise<Step> {
    return this.stepNow(
      id,
      origin,
      jobTimestamp,
      contextOf(trace as Record<string, string> | undefined),
    );
  }

  /** One row: admission, claim, attempt. Says whether the row needs another run, and when. */
  private async stepNow(
    id: string,
    origin: string,
    jobTimestamp: number,
    ctx: Context,
  ): Promise<Step> {
    // A paused destination's row is not claimed (no attempt counted, no horizon started):
    // its job waits and asks again.
    if (await this.paused.has(origin)) {
      return { kind: 'later', at: Date.now() + (this.options.pausedRecheckMs ?? 10_000) };
    }
    const admission = await this.limiter.acquire(origin);
    if (!admission.ok) return { kind: 'later', at: Date.now() + admission.waitMs };
    try {
      let claimed: Awaited<ReturnType<Outbox['claim']>>;
      try {
        claimed = await this.outbox.claim(id, this.leaseMs);
      } catch (err) {
        // Database away (restarting): the row is untouched; try it again shortly instead
        // of failing the job (and a batch job's other rows with it).
        this.logger.warn({ err, outboxId: id }, 'claim failed; retrying shortly');
        return { kind: 'later', at: Date.now() + 500 + Math.floor(Math.random() * 500) };
      }
      if ('kind' in claimed) {
        switch (claimed.kind) {
          case 'missing': {
            // Dispatched inside a caller's transaction not yet committed; dropped when it
            // never shows up (rolled back).
            const waited = Date.now() - jobTimestamp;
            return waited < (this.options.visibilityWaitMs ?? 60_000)
              ? { kind: 'later', at: Date.now() + 200 }
              : DONE;
          }
          case 'not_due':
            return { kind: 'later', at: claimed.notBefore };
          case 'expired':
            this.options.metrics?.deliveries.inc({ outcome: 'expired' });
            return DONE;
          default:
            return DONE;
        }
      }
      this.claimed.add(claimed.id);
      try {
        const next = await this.attempt(claimed, origin, ctx);
        return next === null ? DONE : { kind: 'later', at: next };
      } finally {
        this.claimed.delete(claimed.id);
      }
    } finally {
      admission.release();
    }
  }

  /**
   * Sends one attempt and records it, in the attempt's `webhook.attempt` client span (its
   * HTTP status, classification and settle on it as attributes); resolves to the next
   * attempt's time, or null.
   */
  private attempt(c: ClaimedEvent, origin: string, parent: Context): Promise<number | null> {
    return inSpan(
      'webhook.attempt',
      {
        parent,
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': 'POST',
          'webhook.outbox_id': c.id,
          'webhook.origin': origin,
          'webhook.attempt': c.attempt,
          'webhook.notification_type': c.notificationType,
        },
      },
      (span, ctx) => this.attemptNow(c, origin, span, ctx),
    );
  }

  private async attemptNow(
    c: ClaimedEvent,
    origin: string,
    span: Span,
    ctx: Context,
  ): Promise<number | null> {
    const firedAt = new Date();
    const record = {
      outboxId: c.id,
      mediaBuyId: c.mediaBuyId,
      mediaBuyIds: c.mediaBuyIds,
      principalId: c.principalId,
      subscriberId: c.subscriberId,
      idempotencyKey: c.idempotencyKey,
      notificationId: c.notificationId,
      notificationType: c.notificationType,
      sequenceNumber: c.sequenceNumber,
      attempt: c.attempt,
      url: c.url,
      payloadSizeBytes: c.body.length,
      firedAt,
    };
    // Buffered: written `pending` only if the attempt is still running at the next flush.
    this.options.activity?.start(record);
    const { result, elapsed, verdict, sent } = await this.send(c, span, ctx);
    const completedAt = new Date();
    const status = activityStatus(result);

    const decided = decideOutcome(c, verdict, {
      firedAt,
      completedAt,
      ...(this.options.backoff ? { backoff: this.options.backoff } : {}),
    });
    const { state, delayMs, error } = decided;
    let nextAt = decided.nextAt;
    this.countOutcome(origin, result, verdict, state, delayMs);
    const outcome = {
      status,
      httpStatusCode: httpStatus(result),
      responseTimeMs: result.kind === 'response' ? Math.round(elapsed) : null,
      errorMessage: errorMessage(result, verdict),
      completedAt,
    };
    const activity = this.options.activity;
    const input: Omit<SettleInput, 'id'> = {
      state,
      status: httpStatus(result),
      error,
      ...(delayMs !== undefined ? { delayMs } : {}),
      ...(activity
        ? { record: this.attemptRecord(c, { result, elapsed, firedAt, sent, outcome }) }
        : {}),
    };
    const settled = await timedOnSpan(
      'webhook.settle',
      ctx,
      () => this.settleRetrying(c.id, input),
      () => ({ 'webhook.state': state }),
    );
    if (settled) {
      // The settle wrote the attempt's record: its buffered start need not be.
      activity?.settled(c.id, c.attempt);
    } else {
      activity?.add({ ...record, ...outcome });
      // Unsettled, the row is sent again once its lease (no longer renewed) ends.
      nextAt = Date.now() + this.leaseMs;
    }
    const line = attemptLogLine(c, { origin, result, verdict, state, nextAt, elapsed });
    this.logger.info(line.fields, line.message);
    this.options.onAttempt?.({
      outboxId: c.id,
      idempotencyKey: c.idempotencyKey,
      attempt: c.attempt,
      result,
      verdict,
      state,
      responseTimeMs: Math.round(elapsed),
      nextAttemptAt: nextAt,
    });
    return nextAt;
  }

  /** The metrics of an attempt's outcome; a 429 throttles its origin alone. */
  private countOutcome(
    origin: string,
    result: AttemptResult,
    verdict: Verdict,
    state: AttemptReport['state'],
    delayMs: number | undefined,
  ): void {
    const metrics = this.options.metrics;
    if (state === 'pending' && verdict.action === 'retry') {
      metrics?.retries.inc();
      if (result.kind === 'response' && result.status === 429) {
        // Throttle this origin alone: its other jobs wait instead of hammering it.
        this.limiter.pause(origin, verdict.retryAfterMs ?? delayMs!);
      }
    }
    if (state !== 'pending') metrics?.deliveries.inc({ outcome: state });
  }

  /** The attempt's webhook_activity record as the settle writes it: never a credential. */
  private attemptRecord(
    c: ClaimedEvent,
    a: {
      result: AttemptResult;
      elapsed: number;
      firedAt: Date;
      sent: Record<string, string>;
      outcome: Omit<SettledAttempt, 'attempt' | 'url' | 'firedAt'>;
    },
  ): SettledAttempt {
    const { result, elapsed } = a;
    return {
      ...a.outcome,
      attempt: c.attempt,
      url: recordedUrl(c.url),
      firedAt: a.firedAt,
      // What the console shows per attempt (#14).
      responseSnippet:
        result.kind === 'response' ? responseSnippet(result.head, authSecrets(c.auth)) : null,
      keyId: c.auth.mode === 'rfc9421' ? this.signer.key.kid : null,
      // The attempt in full (#26): headers both ways and timing, bounded and masked.
      exchange: attemptExchange(
        a.sent,
        result.kind === 'response' ? (result.headers ?? {}) : null,
        result.timing ?? { totalMs: Math.round(elapsed * 10) / 10 },
        authSecrets(c.auth),
      ),
    };
  }

  /**
   * The HTTP attempt: the attempt span's W3C `traceparent` (and `tracestate`) go with the
   * request beside the signature headers, never among the signed components
   * (shared/signing/sign.ts covers a fixed list), so tracing cannot change what a receiver
   * verifies. The span records the status and the classification.
   */
  private async send(
    c: ClaimedEvent,
    span: Span,
    ctx: Context,
  ): Promise<{
    result: AttemptResult;
    elapsed: number;
    verdict: Verdict;
    sent: Record<string, string>;
  }> {
    const headers = attemptHeaders(c.url, c.body, c.auth, this.signer);
    const trace = traceCarrier(ctx);
    const sent = trace ? { ...headers, ...trace } : headers;
    const started = performance.now();
    const result = await this.transport.post(c.url, c.body, sent);
    const elapsed = performance.now() - started;
    const verdict = classify(result);
    this.options.metrics?.attemptSeconds.observe(elapsed / 1000);
    this.options.metrics?.attempts.inc({ result: activityStatus(result) });
    if (span.isRecording()) {
      if (result.kind === 'response') span.setAttribute('http.response.status_code', result.status);
      else span.setAttribute('error.type', result.failure);
      span.setAttribute('webhook.verdict', verdict.action);
      if (verdict.action !== 'delivered') span.setAttribute('webhook.reason', verdict.reason);
    }
    return { result, elapsed, verdict, sent };
  }

  /**
   * Settles, retrying with back-off (100 ms doubling to 1 s) for up to `settleRetryMs`
   * while the database is away: the row's lease is renewed meanwhile (the heartbeat keeps
   * it in `claimed`), so no other job sends it again. False when it never went through.
   */
  private async settleRetrying(id: string, outcome: Omit<SettleInput, 'id'>): Promise<boolean> {
    const deadline = Date.now() + (this.options.settleRetryMs ?? 30_000);
    let wait = 100;
    for (let tries = 1; ; tries++) {
      try {
        await this.outbox.settle(id, outcome);
        if (tries > 1) this.logger.info({ outboxId: id, tries }, 'settle went through on retry');
        return true;
      } catch (err) {
        if (this.closed || Date.now() + wait > deadline) {
          this.logger.error(
            { err, outboxId: id, tries },
            'settle failed; the row will be sent again',
          );
          return false;
        }
        if (tries === 1) this.logger.warn({ err, outboxId: id }, 'settle failed; retrying');
        await new Promise((r) => setTimeout(r, wait));
        wait = Math.min(wait * 2, 1000);
      }
    }
  }

  /** Graceful: stop taking jobs, let the running ones finish, flush the activity log. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    // Each once its connection has started (DeliveryQueue.close says why).
    await Promise.all(this.workers.map((w) => closeStarted(w)));
    await this.limiter.close();
    await this.options.activity?.flush();
    await this.transport.close();
  }
}
