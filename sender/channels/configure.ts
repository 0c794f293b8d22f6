/**
 * A buy's channel configs recorded or replaced (spec "Persistent channels", supplement §4.8):
 * the configs and flight checked, written to the buy's row, and its reporting schedule
 * started, moved or dropped to match.
 */
import type { PoolClient } from '../../shared/infra/pg.js';
import { WEBHOOK_TASK_TYPES } from '../../shared/envelope/index.js';
import {
  ensureBuy,
  lockBuy,
  readSchedule,
  type BuyRow,
  type ChannelsContext,
} from './channel-rows.js';
import {
  validatePushNotificationConfig,
  validateReportingWebhook,
  type UrlPolicy,
} from './config-validation.js';
import { channelError } from './errors.js';
import { checkInstant, checkMediaBuyId, CURRENCY, type ChannelsConfiguredInput } from './inputs.js';
import { periodStartContaining } from './periods.js';
import { fireTime } from './reporting-schedule.js';

/** The call's input, checked: undefined leaves a value as it is, null removes a config. */
export interface CheckedConfig {
  id: string;
  push: ReturnType<typeof validatePushNotificationConfig> | null | undefined;
  reporting: ReturnType<typeof validateReportingWebhook> | null | undefined;
  delay: number | undefined;
  flightStart: number | null | undefined;
  flightEnd: number | null | undefined;
}

/** Checks everything the call can refuse before it touches the database (`TaskError`). */
export function checkConfigured(input: ChannelsConfiguredInput, policy: UrlPolicy): CheckedConfig {
  const id = checkMediaBuyId(input.mediaBuyId);
  const push =
    input.pushNotificationConfig == null
      ? (input.pushNotificationConfig as null | undefined)
      : validatePushNotificationConfig(input.pushNotificationConfig, policy);
  const reporting =
    input.reportingWebhook == null
      ? (input.reportingWebhook as null | undefined)
      : validateReportingWebhook(input.reportingWebhook, policy);
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
  return { id, push, reporting, delay, flightStart, flightEnd };
}

/** Writes the checked configs in the call's transaction, the buy's row locked. */
export async function writeConfigured(
  ctx: ChannelsContext,
  c: PoolClient,
  input: ChannelsConfiguredInput,
  v: CheckedConfig,
  now: number,
): Promise<void> {
  const { id } = v;
  await ensureBuy(ctx, c, id, input);
  const buy = await lockBuy(ctx, c, id, false);
  if (!buy) throw new Error(`media buy row ${id} vanished`);
  if (buy.terminal_status) {
    ctx.logger.info({ mediaBuyId: id }, 'channels closed: configuration after terminal ignored');
    return;
  }
  const start = await writeFlight(ctx, c, buy, v);
  await writeBuyFields(ctx, c, input, v);
  if (v.push !== undefined) await writePush(ctx, c, v.push, id, now);
  if (v.reporting !== undefined) await writeReporting(ctx, c, v.reporting, id, start, now);
  await followFlight(ctx, c, buy, v, start, now);
}

/** The flight as it is after this call (checked end after start), written when it changed. */
async function writeFlight(
  ctx: ChannelsContext,
  c: PoolClient,
  buy: BuyRow,
  v: CheckedConfig,
): Promise<number | undefined> {
  const { flightStart, flightEnd } = v;
  const start = flightStart === undefined ? buy.flight_start?.getTime() : flightStart;
  const end = flightEnd === undefined ? buy.flight_end?.getTime() : flightEnd;
  if (start != null && end != null && end <= start) {
    throw channelError('VALIDATION_ERROR', 'end_time must be after start_time', 'end_time');
  }
  if (flightStart !== undefined || flightEnd !== undefined) {
    await c.query(
      `UPDATE ${ctx.schema}.channel_media_buys SET flight_start = $2, flight_end = $3
       WHERE media_buy_id = $1`,
      [v.id, start == null ? null : new Date(start), end == null ? null : new Date(end)],
    );
    buy.flight_start = start == null ? null : new Date(start);
    buy.flight_end = end == null ? null : new Date(end);
  }
  return start ?? undefined;
}

/** The envelope's fields: each given one replaces the stored value. */
async function writeBuyFields(
  ctx: ChannelsContext,
  c: PoolClient,
  input: ChannelsConfiguredInput,
  v: CheckedConfig,
): Promise<void> {
  await c.query(
    `UPDATE ${ctx.schema}.channel_media_buys SET
       principal_id = coalesce($2, principal_id),
       task_id = coalesce($3, task_id),
       task_type = coalesce($4, task_type),
       context = coalesce($5::jsonb, context),
       currency = coalesce($6, currency),
       expected_delay_minutes = coalesce($7, expected_delay_minutes)
     WHERE media_buy_id = $1`,
    [
      v.id,
      input.principalId ?? null,
      input.taskId ?? null,
      input.taskType ?? null,
      input.context === undefined ? null : JSON.stringify(input.context),
      input.currency ?? null,
      v.delay ?? null,
    ],
  );
}

/** The push config replaced (null: removed); the previous URL kept for information. */
async function writePush(
  ctx: ChannelsContext,
  c: PoolClient,
  push: NonNullable<CheckedConfig['push']> | null,
  id: string,
  now: number,
): Promise<void> {
  await c.query(
    `UPDATE ${ctx.schema}.channel_media_buys SET push_config = $2::jsonb,
       push_previous_url = CASE WHEN push_config IS NOT NULL
         AND push_config->>'url' IS DISTINCT FROM $3 THEN push_config->>'url'
         ELSE push_previous_url END,
       push_updated_at = $4
     WHERE media_buy_id = $1`,
    [id, push === null ? null : JSON.stringify(push), push?.url ?? null, new Date(now)],
  );
}

/**
 * The reporting config replaced (null: removed with its schedule). A new or changed
 * frequency starts the schedule at the period containing now, or the flight's start if later.
 */
async function writeReporting(
  ctx: ChannelsContext,
  c: PoolClient,
  reporting: NonNullable<CheckedConfig['reporting']> | null,
  id: string,
  start: number | undefined,
  now: number,
): Promise<void> {
  const s = ctx.schema;
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
    return;
  }
  const current = await readSchedule(ctx, c, id);
  if (current && current.frequency === reporting.reporting_frequency) return;
  const freq = reporting.reporting_frequency;
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

/**
 * The open period's fire time follows the flight end and the delay as they are now; a
 * schedule that has not begun follows a moved flight start.
 */
async function followFlight(
  ctx: ChannelsContext,
  c: PoolClient,
  buy: BuyRow,
  v: CheckedConfig,
  start: number | undefined,
  now: number,
): Promise<void> {
  const s = ctx.schema;
  const id = v.id;
  const schedule = await readSchedule(ctx, c, id);
  if (schedule && v.flightStart !== undefined && schedule.period_start.getTime() > now) {
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
    const b = { ...buy, expected_delay_minutes: v.delay ?? buy.expected_delay_minutes };
    const fireAt = fireTime(b, schedule.frequency, schedule.period_start.getTime());
    await c.query(
      `UPDATE ${s}.channel_report_schedules SET next_fire_at = $2 WHERE media_buy_id = $1`,
      [id, new Date(fireAt)],
    );
  }
}
