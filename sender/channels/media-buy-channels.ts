/**
 * A media buy's persistent channels (spec "Persistent channels", supplement §4.6-§4.8):
 * the reporting schedule on `reporting_webhook`, coalesced impairments on
 * `push_notification_config`, rotation and termination. Every piece of state lives in
 * PostgreSQL; each call runs in one transaction that locks the buy's row, and hands its
 * events to the outbox in one `enqueue` so their order is the order written here.
 */
import type { BrandProfile } from '../../shared/brand.js';
import {
  assertSchemaName,
  migrate,
  withTransaction,
  type Pool,
  type PoolClient,
} from '../../shared/infra/pg.js';
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import { WEBHOOK_TASK_TYPES } from '../../shared/envelope/index.js';
import { existsIn, NOTIFICATION_TYPES } from '../../shared/envelope/notification-types.js';
import type { MediaBuyChannelsApi } from '../core/channels-api.js';
import type { EventSink, OutboundEvent } from '../outbox/types.js';
import type { ReportingClock } from './clock.js';
import {
  validatePushNotificationConfig,
  validateReportingWebhook,
  type UrlPolicy,
} from './config-validation.js';
import { channelError } from './errors.js';
import {
  coalescenceWindows,
  impairmentKind,
  validateImpairment,
  windowSeconds,
  type CoalescenceOptions,
  type CoalescenceWindows,
} from './impairment-kinds.js';
import { CHANNEL_MIGRATIONS } from './migrations.js';
import { aggregatedReportEvent, groupFires, streamKey, type ScheduledFire } from './aggregation.js';
import { validateSuppliedReport } from './supplied-report.js';
import {
  impairmentEvent,
  reportEvent,
  type BuyChannels,
  type ReportFire,
  type ReportNotificationType,
} from './payloads.js';
import { isoSeconds, nextPeriodStart, periodStartContaining, reportingPeriod } from './periods.js';
import {
  checkInstant,
  checkMediaBuyId,
  checkPeriod,
  CURRENCY,
  type ChannelsConfiguredInput,
  type DeliveryReportDueInput,
  type ImpairmentObservedInput,
  type MediaBuyTerminalInput,
} from './inputs.js';
import {
  TERMINAL_BUY_STATUSES,
  isLate,
  type DeliveryDataSource,
  type Impairment,
  type ReportingFrequency,
  type ReportingWebhook,
  type TerminalBuyStatus,
} from './types.js';

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

interface BuyRow extends BuyChannels {
  terminal_status: string | null;
  expected_delay_minutes: number;
  flight_start: Date | null;
  flight_end: Date | null;
  /** Start of the first period reported (when no flight start is known). */
  reporting_from: Date | null;
}

interface ScheduleRow {
  frequency: ReportingFrequency;
  period_start: Date;
  next_fire_at: Date;
  delayed_sent: boolean;
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
    const id = checkMediaBuyId(input.mediaBuyId);
    const push =
      input.pushNotificationConfig == null
        ? (input.pushNotificationConfig as null | undefined)
        : validatePushNotificationConfig(input.pushNotificationConfig, this.urlPolicy);
    const reporting =
      input.reportingWebhook == null
        ? (input.reportingWebhook as null | undefined)
        : validateReportingWebhook(input.reportingWebhook, this.urlPolicy);
    if (input.currency !== undefined && !CURRENCY.test(input.currency)) {
      throw channelError('VALIDATION_ERROR', 'currency must be ISO 4217', 'currency');
    }
    if (
      input.taskType !== undefined &&
      !(WEBHOOK_TASK_TYPES as readonly string[]).includes(input.taskType)
    ) {
      throw channelError('VALIDATION_ERROR', 'task_type is not a webhook task type', 'task_type');
    }
    const delay = input.expectedDelayMinutes;
    if (delay !== undefined && !(Number.isInteger(delay) && delay >= 0 && delay <= 100_000)) {
      throw channelError(
        'VALIDATION_ERROR',
        'expected_delay_minutes must be a non-negative integer',
        'expected_delay_minutes',
      );
    }
    const flightStart = checkInstant(input.flightStart, 'start_time');
    const flightEnd = checkInstant(input.flightEnd, 'end_time');
    const now = this.now();
    const s = this.schema;
    await this.transaction(input.client, async (c) => {
      await this.ensureBuy(c, id, input);
      const buy = await this.lockBuy(c, id, false);
      if (!buy) throw new Error(`media buy row ${id} vanished`);
      if (buy.terminal_status) {
        this.logger.info(
          { mediaBuyId: id },
          'channels closed: configuration after terminal ignored',
        );
        return;
      }
      const start = flightStart === undefined ? buy.flight_start?.getTime() : flightStart;
      const end = flightEnd === undefined ? buy.flight_end?.getTime() : flightEnd;
      if (start != null && end != null && end <= start) {
        throw channelError('VALIDATION_ERROR', 'end_time must be after start_time', 'end_time');
      }
      if (flightStart !== undefined || flightEnd !== undefined) {
        await c.query(
          `UPDATE ${s}.channel_media_buys SET flight_start = $2, flight_end = $3
           WHERE media_buy_id = $1`,
          [id, start == null ? null : new Date(start), end == null ? null : new Date(end)],
        );
        buy.flight_start = start == null ? null : new Date(start);
        buy.flight_end = end == null ? null : new Date(end);
      }
      await c.query(
        `UPDATE ${s}.channel_media_buys SET
           principal_id = coalesce($2, principal_id),
           task_id = coalesce($3, task_id),
           task_type = coalesce($4, task_type),
           context = coalesce($5::jsonb, context),
           currency = coalesce($6, currency),
           expected_delay_minutes = coalesce($7, expected_delay_minutes)
         WHERE media_buy_id = $1`,
        [
          id,
          input.principalId ?? null,
          input.taskId ?? null,
          input.taskType ?? null,
          input.context === undefined ? null : JSON.stringify(input.context),
          input.currency ?? null,
          delay ?? null,
        ],
      );
      if (push !== undefined) {
        await c.query(
          `UPDATE ${s}.channel_media_buys SET push_config = $2::jsonb,
             push_previous_url = CASE WHEN push_config IS NOT NULL
               AND push_config->>'url' IS DISTINCT FROM $3 THEN push_config->>'url'
               ELSE push_previous_url END,
             push_updated_at = $4
           WHERE media_buy_id = $1`,
          [id, push === null ? null : JSON.stringify(push), push?.url ?? null, new Date(now)],
        );
      }
      if (reporting !== undefined) await this.storeReporting(c, id, reporting, now, start);
      await this.followFlightAndDelay(c, { id, buy, flightStart, start, delay, now });
    });
  }

  /**
   * The buy's `reporting_webhook` (null clears it with its schedule); a new or changed
   * frequency starts the schedule at the period containing now, or the flight's start.
   */
  private async storeReporting(
    c: PoolClient,
    id: string,
    reporting: ReportingWebhook | null,
    now: number,
    start: number | null | undefined,
  ): Promise<void> {
    const s = this.schema;
    await c.query(
      `UPDATE ${s}.channel_media_buys SET reporting_config = $2::jsonb,
         reporting_previous_url = CASE WHEN reporting_config IS NOT NULL
           AND reporting_config->>'url' IS DISTINCT FROM $3 THEN reporting_config->>'url'
           ELSE reporting_previous_url END,
         reporting_updated_at = $4
       WHERE media_buy_id = $1`,
      [
        id,
        reporting === null ? null : JSON.stringify(reporting),
        reporting?.url ?? null,
        new Date(now),
      ],
    );
    if (reporting === null) {
      await c.query(`DELETE FROM ${s}.channel_report_schedules WHERE media_buy_id = $1`, [id]);
    } else {
      const current = await this.schedule(c, id);
      if (!current || current.frequency !== reporting.reporting_frequency) {
        const freq = reporting.reporting_frequency;
        // The first period is the one containing now, or the flight's start if later.
        const first = periodStartContaining(freq, Math.max(now, start ?? now));
        await c.query(
          `INSERT INTO ${s}.channel_report_schedules
             (media_buy_id, frequency, period_start, next_fire_at, delayed_sent)
           VALUES ($1, $2, $3, $3, false)
           ON CONFLICT (media_buy_id) DO UPDATE SET frequency = excluded.frequency,
             period_start = excluded.period_start, next_fire_at = excluded.next_fire_at,
             delayed_sent = false`,
          [id, freq, new Date(first)],
        );
        await c.query(
          `UPDATE ${s}.channel_media_buys SET reporting_from = coalesce(reporting_from, $2)
           WHERE media_buy_id = $1`,
          [id, new Date(first)],
        );
      }
    }
  }

  /**
   * The open period's fire time follows the flight end and the delay as they are now; a
   * schedule that has not begun follows a moved flight start.
   */
  private async followFlightAndDelay(
    c: PoolClient,
    w: {
      id: string;
      buy: BuyRow;
      flightStart: number | null | undefined;
      start: number | null | undefined;
      delay: number | undefined;
      now: number;
    },
  ): Promise<void> {
    const { id, buy, flightStart, start, delay, now } = w;
    const s = this.schema;
    const schedule = await this.schedule(c, id);
    if (schedule && flightStart !== undefined && schedule.period_start.getTime() > now) {
      const first = periodStartContaining(schedule.frequency, Math.max(now, start ?? now));
      schedule.period_start = new Date(first);
      await c.query(
        `UPDATE ${s}.channel_report_schedules SET period_start = $2 WHERE media_buy_id = $1`,
        [id, schedule.period_start],
      );
      await c.query(
        `UPDATE ${s}.channel_media_buys SET reporting_from = $2 WHERE media_buy_id = $1`,
        [id, schedule.period_start],
      );
    }
    if (schedule && !schedule.delayed_sent) {
      const b = { ...buy, expected_delay_minutes: delay ?? buy.expected_delay_minutes };
      const fireAt = this.fireTime(b, schedule.frequency, schedule.period_start.getTime());
      await c.query(
        `UPDATE ${s}.channel_report_schedules SET next_fire_at = $2 WHERE media_buy_id = $1`,
        [id, new Date(fireAt)],
      );
    }
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
    const s = this.schema;
    return this.transaction(input.client, async (c) => {
      const buy = await this.lockBuy(c, id, false);
      if (!buy) {
        this.logger.warn({ mediaBuyId: id }, 'impairment on a buy with no channels: not sent');
        return [];
      }
      if (buy.terminal_status) {
        this.logger.info({ mediaBuyId: id }, 'channels closed: impairment after terminal ignored');
        return [];
      }
      await c.query(
        `INSERT INTO ${s}.channel_impairments (media_buy_id, impairment_id, state, open, updated_at)
         VALUES ($1, $2, $3::jsonb, $4, $5)
         ON CONFLICT (media_buy_id, impairment_id) DO UPDATE SET state = excluded.state,
           open = excluded.open, updated_at = excluded.updated_at`,
        [id, imp.impairment_id, JSON.stringify(imp), imp.resolved_at === undefined, new Date(now)],
      );
      if (!buy.push_config) {
        this.logger.info({ mediaBuyId: id }, 'impairment recorded; buy has no push channel');
        return [];
      }
      if (window === 0) {
        // Fires now; an earlier observation of it still waiting in a window is superseded.
        await c.query(
          `DELETE FROM ${s}.channel_impairment_pending WHERE media_buy_id = $1 AND impairment_id = $2`,
          [id, imp.impairment_id],
        );
        const health = await this.health(c, id);
        return this.sink.enqueue([impairmentEvent(buy, imp, health, now)], c);
      }
      // The window of (buy, kind) opened with its first observation; later ones join it
      // and never push it back, so no impairment waits longer than the window.
      const { rows } = await c.query<{ fire_at: Date | null }>(
        `SELECT min(fire_at) AS fire_at FROM ${s}.channel_impairment_pending
         WHERE media_buy_id = $1 AND kind = $2`,
        [id, kind],
      );
      const fireAt = rows[0]?.fire_at ?? new Date(now + window * 1000);
      await c.query(
        `INSERT INTO ${s}.channel_impairment_pending
           (media_buy_id, impairment_id, kind, impairment, fire_at)
         VALUES ($1, $2, $3, $4::jsonb, $5)
         ON CONFLICT (media_buy_id, impairment_id) DO UPDATE SET impairment = excluded.impairment,
           fire_at = least(${s}.channel_impairment_pending.fire_at, excluded.fire_at)`,
        [id, imp.impairment_id, kind, JSON.stringify(imp), fireAt],
      );
      return [];
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
    return this.transaction(input.client, async (c) => {
      const buy = await this.lockBuy(c, id, false);
      if (!buy || buy.terminal_status || !buy.reporting_config) {
        this.logger.info({ mediaBuyId: id }, 'no open reporting channel: report not sent');
        return [];
      }
      let events: OutboundEvent[];
      if (!period) {
        events = await this.runSchedule(c, buy, now);
      } else {
        const data = supplied ?? (await this.dataSource.getDelivery(id, period));
        if (isLate(data)) {
          this.logger.info({ mediaBuyId: id }, `${type} report: data not available, not sent`);
          return [];
        }
        const schedule = await this.schedule(c, id);
        events = [
          await this.report(c, buy, {
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
    return this.transaction(input.client, async (c) => {
      await this.ensureBuy(c, id, input);
      const buy = await this.lockBuy(c, id, false);
      if (!buy) throw new Error(`media buy row ${id} vanished`);
      if (buy.terminal_status) {
        this.logger.info({ mediaBuyId: id }, 'channels already closed: terminal call ignored');
        return [];
      }
      // Ended by the flight already, the buy is reported up to the flight end.
      const end = Math.min(now, buy.flight_end?.getTime() ?? Infinity);
      const events = await this.finish(c, buy, status, end, now);
      return events.length > 0 ? this.sink.enqueue(events, c) : [];
    });
  }

  /**
   * Ends the buy's channels at `end` (§4.7): queued impairments fire first, then every
   * period ended by `end` still unreported, then the `final` report over the whole span
   * [flight start or first period, end) (a period cut short by `end` is reported there
   * only); then the channels close and every later call for the buy is a logged no-op.
   * So a flight of N periods gets N reports plus the final: `(duration / frequency) + 1`.
   */
  private async finish(
    c: PoolClient,
    buy: BuyRow,
    status: TerminalBuyStatus,
    end: number,
    now: number,
  ): Promise<OutboundEvent[]> {
    const id = buy.media_buy_id;
    const s = this.schema;
    const events = await this.flushImpairments(c, buy, now, false);
    const schedule = await this.schedule(c, id);
    if (schedule && buy.reporting_config) {
      events.push(...(await this.runSchedule(c, buy, now, end)));
      const from = Math.min(
        buy.flight_start?.getTime() ?? buy.reporting_from?.getTime() ?? Infinity,
        schedule.period_start.getTime(),
        end,
      );
      const period = reportingPeriod(from, end);
      const data = await this.dataSource.getDelivery(id, period);
      events.push(
        await this.report(c, buy, { type: 'final', period, data, now, terminalStatus: status }),
      );
    }
    await c.query(
      `UPDATE ${s}.channel_media_buys SET terminal_status = $2, terminal_at = $3
       WHERE media_buy_id = $1`,
      [id, status, new Date(now)],
    );
    await c.query(`DELETE FROM ${s}.channel_report_schedules WHERE media_buy_id = $1`, [id]);
    await c.query(`DELETE FROM ${s}.channel_impairment_pending WHERE media_buy_id = $1`, [id]);
    await c.query(`UPDATE ${s}.channel_impairments SET open = false WHERE media_buy_id = $1`, [id]);
    return events;
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
    if (this.aggregateReports && ids.length > 0) return this.tickAggregated(ids, now);
    let enqueued = 0;
    let next = 0;
    // Buys are independent (each locks its own row): a few in flight at once.
    const lanes = Math.min(this.tickConcurrency, ids.length);
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        while (next < ids.length) {
          // Read `enqueued` only after the await: `x += await y` would add to a stale value.
          const fired = await this.fireDue(ids[next++]!, now);
          enqueued += fired;
        }
      }),
    );
    return enqueued;
  }

  /** One buy's due fires, in its own transaction; 0 when another process holds the buy. */
  private async fireDue(id: string, now: number): Promise<number> {
    try {
      return await this.transaction(undefined, async (c) => {
        const buy = await this.lockBuy(c, id, true);
        if (!buy || buy.terminal_status) return 0;
        const flightEnd = buy.flight_end?.getTime();
        if (flightEnd !== undefined && flightEnd + buy.expected_delay_minutes * 60_000 <= now) {
          // The flight is over: its last periods, the final report, and the channels close.
          const events = await this.finish(c, buy, 'completed', flightEnd, now);
          return events.length > 0 ? (await this.sink.enqueue(events, c)).length : 0;
        }
        const events = [
          ...(await this.flushImpairments(c, buy, now, true)),
          ...(await this.runSchedule(c, buy, now)),
        ];
        if (events.length === 0) return 0;
        return (await this.sink.enqueue(events, c)).length;
      });
    } catch (err) {
      // One buy's failing data source must not hold back the others: its schedule is
      // postponed so due buys behind it in the next batch get their turn.
      this.logger.error({ err, mediaBuyId: id }, 'channel tick failed for buy');
      await this.pool
        .query(
          `UPDATE ${this.schema}.channel_report_schedules SET next_fire_at = $2
           WHERE media_buy_id = $1 AND next_fire_at <= $3`,
          [id, new Date(now + this.failureRetryMs), new Date(now)],
        )
        .catch(() => {});
      return 0;
    }
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

  private async transaction<T>(
    client: PoolClient | undefined,
    fn: (c: PoolClient) => Promise<T>,
  ): Promise<T> {
    return client ? fn(client) : withTransaction(this.pool, fn);
  }

  private async ensureBuy(
    c: PoolClient,
    id: string,
    input: Pick<ChannelsConfiguredInput, 'principalId' | 'taskId' | 'taskType'>,
  ): Promise<void> {
    await c.query(
      `INSERT INTO ${this.schema}.channel_media_buys (media_buy_id, principal_id, task_id, task_type)
       VALUES ($1, $2, $3, $4) ON CONFLICT (media_buy_id) DO NOTHING`,
      [id, input.principalId ?? null, input.taskId ?? id, input.taskType ?? 'create_media_buy'],
    );
  }

  private async lockBuy(c: PoolClient, id: string, skipLocked: boolean): Promise<BuyRow | null> {
    const { rows } = await c.query<BuyRow>(
      `SELECT media_buy_id, principal_id, task_id, task_type, context, push_config,
              reporting_config, currency, expected_delay_minutes, terminal_status,
              flight_start, flight_end, reporting_from
       FROM ${this.schema}.channel_media_buys WHERE media_buy_id = $1
       FOR UPDATE${skipLocked ? ' SKIP LOCKED' : ''}`,
      [id],
    );
    return rows[0] ?? null;
  }

  private async schedule(c: PoolClient, id: string): Promise<ScheduleRow | null> {
    const { rows } = await c.query<ScheduleRow>(
      `SELECT frequency, period_start, next_fire_at, delayed_sent
       FROM ${this.schema}.channel_report_schedules WHERE media_buy_id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** `impaired` iff the buy has open impairments (it is not terminal while this runs). */
  private async health(c: PoolClient, id: string): Promise<'ok' | 'impaired'> {
    const { rows } = await c.query<{ impaired: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${this.schema}.channel_impairments
                      WHERE media_buy_id = $1 AND open) AS impaired`,
      [id],
    );
    return rows[0]?.impaired ? 'impaired' : 'ok';
  }

  /** Removes pending impairments (only closed windows when `dueOnly`) and builds their fires. */
  private async flushImpairments(
    c: PoolClient,
    buy: BuyRow,
    now: number,
    dueOnly: boolean,
  ): Promise<OutboundEvent[]> {
    const { rows } = await c.query<{ impairment: Impairment; first_seen: string }>(
      `DELETE FROM ${this.schema}.channel_impairment_pending
       WHERE media_buy_id = $1 ${dueOnly ? 'AND fire_at <= $2' : 'AND $2::timestamptz IS NOT NULL'}
       RETURNING impairment, first_seen`,
      [buy.media_buy_id, new Date(now)],
    );
    if (rows.length === 0) return [];
    if (!buy.push_config) {
      this.logger.info(
        { mediaBuyId: buy.media_buy_id },
        'push channel removed: impairments dropped',
      );
      return [];
    }
    rows.sort((a, b) => Number(a.first_seen) - Number(b.first_seen));
    const health = await this.health(c, buy.media_buy_id);
    return rows.map((r) => impairmentEvent(buy, r.impairment, health, now));
  }

  /**
   * Reports every period whose fire time has passed, oldest first; with `until` (the buy
   * ends there) every period ended by then, due or not. A period the flight end (or
   * `until`) cuts short is left to the final report. Late data sends one `delayed` for the
   * period and asks again after `delayedRetrySeconds`.
   */
  private async runSchedule(
    c: PoolClient,
    buy: BuyRow,
    now: number,
    until?: number,
  ): Promise<OutboundEvent[]> {
    return (await this.scheduleItems(c, buy, now, until, false)) as OutboundEvent[];
  }

  /** `runSchedule`; with `collect`, `scheduled` fires come back unbuilt (to aggregate). */
  private async scheduleItems(
    c: PoolClient,
    buy: BuyRow,
    now: number,
    until: number | undefined,
    collect: boolean,
  ): Promise<Array<OutboundEvent | ScheduledFire>> {
    const schedule = await this.schedule(c, buy.media_buy_id);
    if (!schedule || !buy.reporting_config) return [];
    const freq = schedule.frequency;
    const stop = Math.min(until ?? Infinity, buy.flight_end?.getTime() ?? Infinity);
    const from = buy.flight_start?.getTime() ?? -Infinity;
    let start = schedule.period_start.getTime();
    let fireAt = schedule.next_fire_at.getTime();
    let delayedSent = schedule.delayed_sent;
    const events: Array<OutboundEvent | ScheduledFire> = [];
    for (let i = 0; i < this.maxCatchUp && (fireAt <= now || until !== undefined); i++) {
      const end = nextPeriodStart(freq, start);
      if (end > stop) break;
      const period = reportingPeriod(Math.max(start, from), end);
      const data = await this.dataSource.getDelivery(buy.media_buy_id, period);
      if (isLate(data)) {
        const retryAt = now + this.delayedRetryMs;
        if (!delayedSent) {
          const nextExpectedAt = data.expectedAvailability ?? isoSeconds(retryAt);
          const fire = { type: 'delayed' as const, period, data, now, nextExpectedAt };
          // Collected too, so the buy's sequence numbers follow its reports' order.
          events.push(collect ? { buy, fire } : await this.report(c, buy, fire));
          delayedSent = true;
        }
        fireAt = retryAt;
        break;
      }
      // After the flight's last period, the next fire is the final report.
      const nextFire = this.fireTime(buy, freq, end);
      const fire = {
        type: 'scheduled' as const,
        period,
        data,
        now,
        nextExpectedAt: isoSeconds(until === undefined ? nextFire : Math.min(nextFire, now)),
      };
      events.push(collect ? { buy, fire } : await this.report(c, buy, fire));
      start = end;
      fireAt = nextFire;
      delayedSent = false;
    }
    await c.query(
      `UPDATE ${this.schema}.channel_report_schedules
       SET period_start = $2, next_fire_at = $3, delayed_sent = $4 WHERE media_buy_id = $1`,
      [buy.media_buy_id, new Date(start), new Date(fireAt), delayedSent],
    );
    return events;
  }

  /**
   * When the period starting at `start` fires: its end plus the product's delay, or, when
   * the flight ends first, when the final report fires (flight end plus the delay).
   */
  private fireTime(buy: BuyRow, freq: ReportingFrequency, start: number): number {
    const delayMs = buy.expected_delay_minutes * 60_000;
    const flightEnd = buy.flight_end?.getTime() ?? Infinity;
    return Math.min(nextPeriodStart(freq, start), flightEnd) + delayMs;
  }

  /** Takes the next sequence number of the buy's current reporting URL and builds the fire. */
  private async report(
    c: PoolClient,
    buy: BuyRow,
    fire: Omit<ReportFire, 'sequenceNumber'>,
  ): Promise<OutboundEvent> {
    const url = buy.reporting_config!.url;
    const { rows } = await c.query<{ last_sequence: number }>(
      `INSERT INTO ${this.schema}.channel_report_sequences (media_buy_id, url, last_sequence)
       VALUES ($1, $2, 1)
       ON CONFLICT (media_buy_id, url) DO UPDATE
         SET last_sequence = ${this.schema}.channel_report_sequences.last_sequence + 1
       RETURNING last_sequence`,
      [buy.media_buy_id, url],
    );
    await this.rememberCurrency(c, buy, fire);
    return reportEvent(buy, { ...fire, sequenceNumber: rows[0]!.last_sequence });
  }

  /** Remembers the data's currency so a later `delayed` report (no data) can state it. */
  private async rememberCurrency(
    c: PoolClient,
    buy: BuyRow,
    fire: Pick<ReportFire, 'data'>,
  ): Promise<void> {
    if (isLate(fire.data) || 'rows' in fire.data || fire.data.currency === buy.currency) return;
    await c.query(
      `UPDATE ${this.schema}.channel_media_buys SET currency = $2 WHERE media_buy_id = $1`,
      [buy.media_buy_id, fire.data.currency],
    );
    buy.currency = fire.data.currency;
  }

  /**
   * The due buys of one tick in one transaction, so reports of several buys can share a
   * payload: each buy runs in a savepoint (a failing data source rolls back and postpones
   * that buy alone), its `scheduled` fires are collected, grouped (`groupFires`) and sent
   * as one payload per group of two or more, the others as ordinary per-buy reports.
   */
  private async tickAggregated(ids: string[], now: number): Promise<number> {
    return this.transaction(undefined, async (c) => {
      const items: Array<OutboundEvent | ScheduledFire> = [];
      for (const id of ids) {
        const mark = items.length;
        await c.query('SAVEPOINT channel_buy');
        try {
          const buy = await this.lockBuy(c, id, true);
          if (buy && !buy.terminal_status) {
            const flightEnd = buy.flight_end?.getTime();
            if (flightEnd !== undefined && flightEnd + buy.expected_delay_minutes * 60_000 <= now) {
              items.push(...(await this.finish(c, buy, 'completed', flightEnd, now)));
            } else {
              items.push(...(await this.flushImpairments(c, buy, now, true)));
              items.push(...(await this.scheduleItems(c, buy, now, undefined, true)));
            }
          }
          await c.query('RELEASE SAVEPOINT channel_buy');
        } catch (err) {
          items.length = mark;
          await c.query('ROLLBACK TO SAVEPOINT channel_buy');
          this.logger.error({ err, mediaBuyId: id }, 'channel tick failed for buy');
          await c.query(
            `UPDATE ${this.schema}.channel_report_schedules SET next_fire_at = $2
             WHERE media_buy_id = $1 AND next_fire_at <= $3`,
            [id, new Date(now + this.failureRetryMs), new Date(now)],
          );
        }
      }
      const fires = items.filter((x): x is ScheduledFire => 'fire' in x);
      const groupOf = new Map<ScheduledFire, ScheduledFire[]>();
      for (const g of groupFires(fires)) for (const f of g) groupOf.set(f, g);
      const events: OutboundEvent[] = [];
      for (const item of items) {
        if (!('fire' in item)) {
          events.push(item);
          continue;
        }
        const group = groupOf.get(item)!;
        if (group.length === 1) {
          events.push(await this.report(c, item.buy as BuyRow, item.fire));
        } else if (group[0] === item) {
          for (const f of group) await this.rememberCurrency(c, f.buy as BuyRow, f.fire);
          const stream = streamKey(item.buy);
          const { rows } = await c.query<{ last_sequence: number }>(
            `INSERT INTO ${this.schema}.channel_report_streams (stream_key, last_sequence)
             VALUES ($1, 1)
             ON CONFLICT (stream_key) DO UPDATE
               SET last_sequence = ${this.schema}.channel_report_streams.last_sequence + 1
             RETURNING last_sequence`,
            [stream],
          );
          events.push(aggregatedReportEvent(group, stream, rows[0]!.last_sequence));
        }
      }
      return events.length > 0 ? (await this.sink.enqueue(events, c)).length : 0;
    });
  }
}
