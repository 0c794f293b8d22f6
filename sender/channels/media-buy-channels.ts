/**
 * A media buy's persistent channels (spec "Persistent channels", supplement §4.6-§4.8):
 * the reporting schedule on `reporting_webhook`, coalesced impairments on
 * `push_notification_config`, rotation and termination. Every piece of state lives in
 * PostgreSQL; each call runs in one transaction that locks the buy's row, and hands its
 * events to the outbox in one `enqueue` so their order is the order written here.
 */
import type { BrandProfile } from '../../shared/brand.js';
import { assertSchemaName, migrate, type Pool } from '../../shared/infra/pg.js';
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import { existsIn, NOTIFICATION_TYPES } from '../../shared/envelope/notification-types.js';
import type { MediaBuyChannelsApi } from '../core/channels-api.js';
import type { EventSink, OutboundEvent } from '../outbox/types.js';
import {
  ensureBuy,
  lockBuy,
  readSchedule,
  transaction,
  type ChannelsContext,
} from './channel-rows.js';
import type { ReportingClock } from './clock.js';
import type { UrlPolicy } from './config-validation.js';
import { checkConfigured, writeConfigured } from './configure.js';
import { channelError } from './errors.js';
import { recordImpairment } from './impairment-queue.js';
import {
  coalescenceWindows,
  impairmentKind,
  validateImpairment,
  windowSeconds,
  type CoalescenceOptions,
  type CoalescenceWindows,
} from './impairment-kinds.js';
import { CHANNEL_MIGRATIONS } from './migrations.js';
import { validateSuppliedReport } from './supplied-report.js';
import type { ReportNotificationType } from './payloads.js';
import { isoSeconds } from './periods.js';
import { report, runSchedule } from './reporting-schedule.js';
import { finish } from './termination.js';
import { fireDue, tickAggregated } from './tick-runner.js';
import {
  checkMediaBuyId,
  checkPeriod,
  type ChannelsConfiguredInput,
  type DeliveryReportDueInput,
  type ImpairmentObservedInput,
  type MediaBuyTerminalInput,
} from './inputs.js';
import { TERMINAL_BUY_STATUSES, isLate, type DeliveryDataSource } from './types.js';

export interface MediaBuyChannelsOptions {
  pool: Pool;
  /** Schema shared with the outbox (default `sender`); tables are prefixed `channel_`. */
  schema?: string;
  sink: EventSink;
  profile: BrandProfile;
  protocolVersion: '3.1' | '3.2';
  /** Where delivery numbers come from (the sales agent). */
  dataSource: DeliveryDataSource;
  /** Time source in ms (default `Date.now`); `reportingClock.now` replaces it when given. */
  clock?: () => number;
  logger?: Logger;
  /** Shorter windows than the defaults; longer ones are refused (§4.6). */
  coalescence?: CoalescenceOptions;
  /** A faster clock and tick interval for the runner (tests, demos). */
  reportingClock?: ReportingClock;
  /** Hosts exempt from https-only and reserved-address refusal (loopback testing). */
  allowHosts?: string[];
  /** Older spelling: `true` allow-lists the loopback hosts (127.0.0.1, ::1, localhost). */
  allowInsecureUrls?: boolean;
  /** After a `delayed` report, how long until the data source is asked again (default 300 s). */
  delayedRetrySeconds?: number;
  /** Periods one tick may catch up per buy (default 48). */
  maxCatchUpPeriods?: number;
  /** Buys one tick handles (default 200). */
  tickBatchSize?: number;
  /** Buys a tick handles at once, each in its own transaction (default 4). */
  tickConcurrency?: number;
  /**
   * Reports of several buys due in one tick share a payload when their registrations and
   * report headers are identical (§4.6; see `aggregation.ts`). Default off. The tick then
   * handles its due buys in one transaction (`tickConcurrency` does not apply).
   */
  aggregateReports?: boolean;
  /** After a failed fire (data source error), when the buy's schedule is tried again (default 60 s). */
  failureRetrySeconds?: number;
}

export class MediaBuyChannels implements MediaBuyChannelsApi {
  readonly schema: string;
  readonly profile: BrandProfile;
  readonly protocolVersion: '3.1' | '3.2';
  private readonly pool: Pool;
  private readonly sink: EventSink;
  private readonly dataSource: DeliveryDataSource;
  private readonly now: () => number;
  private readonly logger: Logger;
  private readonly windows: CoalescenceWindows;
  private readonly urlPolicy: UrlPolicy;
  private readonly tickIntervalMs: number;
  private readonly delayedRetryMs: number;
  private readonly maxCatchUp: number;
  private readonly tickBatch: number;
  private readonly tickConcurrency: number;
  private readonly failureRetryMs: number;
  private readonly aggregateReports: boolean;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private readonly ctx: ChannelsContext;

  constructor(options: MediaBuyChannelsOptions) {
    this.pool = options.pool;
    this.schema = assertSchemaName(options.schema ?? 'sender');
    this.sink = options.sink;
    this.profile = options.profile;
    this.protocolVersion = options.protocolVersion;
    this.dataSource = options.dataSource;
    const clock = options.reportingClock;
    this.now = clock ? () => clock.now() : (options.clock ?? Date.now);
    this.tickIntervalMs = clock?.tickIntervalMs ?? 1000;
    this.logger = options.logger ?? silentLogger;
    this.windows = coalescenceWindows(options.coalescence);
    this.urlPolicy = {
      allowHosts: [
        ...(options.allowHosts ?? []),
        ...(options.allowInsecureUrls ? ['127.0.0.1', '::1', 'localhost'] : []),
      ],
    };
    this.delayedRetryMs = (options.delayedRetrySeconds ?? 300) * 1000;
    this.maxCatchUp = options.maxCatchUpPeriods ?? 48;
    this.tickBatch = options.tickBatchSize ?? 200;
    this.tickConcurrency = Math.max(1, options.tickConcurrency ?? 4);
    this.failureRetryMs = (options.failureRetrySeconds ?? 60) * 1000;
    this.aggregateReports = options.aggregateReports ?? false;
    this.ctx = {
      schema: this.schema,
      pool: this.pool,
      sink: this.sink,
      dataSource: this.dataSource,
      logger: this.logger,
      delayedRetryMs: this.delayedRetryMs,
      maxCatchUp: this.maxCatchUp,
      failureRetryMs: this.failureRetryMs,
    };
  }

  /** Creates or upgrades the channel tables. */
  async migrate(): Promise<string[]> {
    return migrate(this.pool, this.schema, CHANNEL_MIGRATIONS);
  }

  // ---------------------------------------------------------------- configuration

  /**
   * Records (or replaces: `update_media_buy`) a buy's channel configs. A replaced config
   * is honoured from the next fire after this call commits (§4.8); the previous URL is
   * kept for information only. A new or changed `reporting_frequency` starts the
   * schedule at the UTC period containing now. Refused configs throw `TaskError`.
   */
  async mediaBuyChannelsConfigured(input: ChannelsConfiguredInput): Promise<void> {
    const checked = checkConfigured(input, this.urlPolicy);
    const now = this.now();
    await transaction(this.ctx, input.client, (c) =>
      writeConfigured(this.ctx, c, input, checked, now),
    );
  }

  // ---------------------------------------------------------------- impairments

  /**
   * An impairment observed on the buy (or an update of one; `resolved_at` closes it).
   * Latency-sensitive kinds fire now (or within their sub-minute window); general ones
   * join the buy's open window, which fires once at most 5 minutes after it opened.
   * Resolves to the outbox ids enqueued by this call (none while coalescing).
   */
  async impairmentObserved(input: ImpairmentObservedInput): Promise<string[]> {
    const id = checkMediaBuyId(input.mediaBuyId);
    const imp = validateImpairment(input.impairment);
    const kind = impairmentKind(imp, this.windows);
    const window = windowSeconds(kind, this.windows);
    const now = this.now();
    return transaction(this.ctx, input.client, async (c) => {
      const buy = await lockBuy(this.ctx, c, id, false);
      if (!buy) {
        this.logger.warn({ mediaBuyId: id }, 'impairment on a buy with no channels: not sent');
        return [];
      }
      if (buy.terminal_status) {
        this.logger.info({ mediaBuyId: id }, 'channels closed: impairment after terminal ignored');
        return [];
      }
      return recordImpairment(this.ctx, c, buy, imp, kind, window, now);
    });
  }

  // ---------------------------------------------------------------- reports

  /**
   * An out-of-cadence delivery report. `scheduled` (default) fires what the schedule has
   * due now (it otherwise runs from `tick`); `adjusted` and `window_update` (3.2) send a
   * corrected report for a past period: the agent's `report`, or the data source's numbers
   * for `period`. Resolves to the outbox ids enqueued.
   */
  async deliveryReportDue(input: DeliveryReportDueInput): Promise<string[]> {
    const id = checkMediaBuyId(input.mediaBuyId);
    const supplied =
      input.report === undefined ? undefined : validateSuppliedReport(input.report, id);
    const type = supplied?.notificationType ?? input.notificationType ?? 'scheduled';
    if (!['scheduled', 'adjusted', 'window_update'].includes(type)) {
      throw channelError(
        'VALIDATION_ERROR',
        'notification_type must be scheduled, adjusted or window_update',
        'notification_type',
      );
    }
    if (!existsIn(type, this.protocolVersion)) {
      throw channelError(
        'VALIDATION_ERROR',
        `${type} reports exist from protocol ${NOTIFICATION_TYPES[type].since} on`,
        supplied ? 'report.notification_type' : 'notification_type',
      );
    }
    const period = type === 'scheduled' || supplied ? supplied?.period : checkPeriod(input.period);
    const now = this.now();
    return transaction(this.ctx, input.client, async (c) => {
      const buy = await lockBuy(this.ctx, c, id, false);
      if (!buy || buy.terminal_status || !buy.reporting_config) {
        this.logger.info({ mediaBuyId: id }, 'no open reporting channel: report not sent');
        return [];
      }
      let events: OutboundEvent[];
      if (!period) {
        events = await runSchedule(this.ctx, c, buy, now);
      } else {
        const data = supplied ?? (await this.dataSource.getDelivery(id, period));
        if (isLate(data)) {
          this.logger.info({ mediaBuyId: id }, `${type} report: data not available, not sent`);
          return [];
        }
        const schedule = await readSchedule(this.ctx, c, id);
        events = [
          await report(this.ctx, c, buy, {
            type: type as ReportNotificationType,
            period,
            data,
            now,
            ...(schedule && { nextExpectedAt: isoSeconds(schedule.next_fire_at.getTime()) }),
          }),
        ];
      }
      return events.length > 0 ? this.sink.enqueue(events, c) : [];
    });
  }

  // ---------------------------------------------------------------- termination

  /**
   * The buy reached `completed`, `canceled` or `rejected` (§4.7): in one transaction its
   * queued impairments fire first, then reports already due, then the `final` report;
   * then its channels close and every later call for it is a logged no-op.
   * Resolves to the outbox ids, in that order.
   */
  async mediaBuyTerminal(input: MediaBuyTerminalInput): Promise<string[]> {
    const id = checkMediaBuyId(input.mediaBuyId);
    const status = input.status;
    if (!(TERMINAL_BUY_STATUSES as readonly string[]).includes(status)) {
      throw channelError(
        'VALIDATION_ERROR',
        'status must be completed, canceled or rejected',
        'status',
      );
    }
    const now = this.now();
    return transaction(this.ctx, input.client, async (c) => {
      await ensureBuy(this.ctx, c, id, input);
      const buy = await lockBuy(this.ctx, c, id, false);
      if (!buy) throw new Error(`media buy row ${id} vanished`);
      if (buy.terminal_status) {
        this.logger.info({ mediaBuyId: id }, 'channels already closed: terminal call ignored');
        return [];
      }
      // Ended by the flight already, the buy is reported up to the flight end.
      const end = Math.min(now, buy.flight_end?.getTime() ?? Infinity);
      const events = await finish(this.ctx, c, buy, status, end, now);
      return events.length > 0 ? this.sink.enqueue(events, c) : [];
    });
  }

  // ---------------------------------------------------------------- the runner

  /**
   * Fires what is due at `now`: closed coalescence windows and reporting periods. Each buy
   * is handled in its own transaction with its row locked SKIP LOCKED, so several
   * processes may tick the same schema. Resolves to the number of events enqueued.
   */
  async tick(now: number = this.now()): Promise<number> {
    const s = this.schema;
    const { rows } = await this.pool.query<{ media_buy_id: string }>(
      `SELECT media_buy_id FROM (
         SELECT media_buy_id, min(fire_at) AS due FROM ${s}.channel_impairment_pending
           WHERE fire_at <= $1 GROUP BY media_buy_id
         UNION ALL
         SELECT media_buy_id, next_fire_at FROM ${s}.channel_report_schedules
           WHERE next_fire_at <= $1
         UNION ALL
         SELECT media_buy_id, flight_end + expected_delay_minutes * interval '1 minute'
           FROM ${s}.channel_media_buys
           WHERE terminal_status IS NULL AND flight_end <= $1
             AND flight_end + expected_delay_minutes * interval '1 minute' <= $1) d
       GROUP BY media_buy_id ORDER BY min(due) LIMIT $2`,
      [new Date(now), this.tickBatch],
    );
    const ids = rows.map((r) => r.media_buy_id);
    if (this.aggregateReports && ids.length > 0) return tickAggregated(this.ctx, ids, now);
    let enqueued = 0;
    let next = 0;
    // Buys are independent (each locks its own row): a few in flight at once.
    const lanes = Math.min(this.tickConcurrency, ids.length);
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        while (next < ids.length) {
          // Read `enqueued` only after the await: `x += await y` would add to a stale value.
          const fired = await fireDue(this.ctx, ids[next++]!, now);
          enqueued += fired;
        }
      }),
    );
    return enqueued;
  }

  /** Runs `tick` every `reportingClock.tickIntervalMs` (default 1 s); the timer is unref'd. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.tick()
        .catch((err) => this.logger.error({ err }, 'channel tick failed'))
        .finally(() => {
          this.running = null;
        });
    }, this.tickIntervalMs);
    this.timer.unref();
  }

  /** Stops the runner and waits for a tick in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  // ---------------------------------------------------------------- internals
}
