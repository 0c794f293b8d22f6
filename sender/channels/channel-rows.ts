/**
 * The channel tables as the channel calls read them (supplement §4.6-§4.8): what a call
 * needs of the channels' setup, a buy's row (locked for the call's transaction), its
 * reporting schedule and its health.
 */
import type { Pool, PoolClient } from '../../shared/infra/pg.js';
import { withTransaction } from '../../shared/infra/pg.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { EventSink } from '../outbox/types.js';
import type { ChannelsConfiguredInput } from './inputs.js';
import type { BuyChannels } from './payloads.js';
import type { DeliveryDataSource, ReportingFrequency } from './types.js';

/** What the channel calls share: the tables' schema, the outbox, the data source, the limits. */
export interface ChannelsContext {
  schema: string;
  pool: Pool;
  sink: EventSink;
  dataSource: DeliveryDataSource;
  logger: Logger;
  /** After a `delayed` report, how long until the data source is asked again (ms). */
  delayedRetryMs: number;
  /** Periods one tick may catch up per buy. */
  maxCatchUp: number;
  /** After a failed fire, when the buy's schedule is tried again (ms). */
  failureRetryMs: number;
}

export interface BuyRow extends BuyChannels {
  terminal_status: string | null;
  expected_delay_minutes: number;
  flight_start: Date | null;
  flight_end: Date | null;
  /** Start of the first period reported (when no flight start is known). */
  reporting_from: Date | null;
}

export interface ScheduleRow {
  frequency: ReportingFrequency;
  period_start: Date;
  next_fire_at: Date;
  delayed_sent: boolean;
}

/** Runs `fn` in the caller's transaction when given one, else in a new one. */
export async function transaction<T>(
  ctx: ChannelsContext,
  client: PoolClient | undefined,
  fn: (c: PoolClient) => Promise<T>,
): Promise<T> {
  return client ? fn(client) : withTransaction(ctx.pool, fn);
}

export async function ensureBuy(
  ctx: ChannelsContext,
  c: PoolClient,
  id: string,
  input: Pick<ChannelsConfiguredInput, 'principalId' | 'taskId' | 'taskType'>,
): Promise<void> {
  await c.query(
    `INSERT INTO ${ctx.schema}.channel_media_buys (media_buy_id, principal_id, task_id, task_type)
     VALUES ($1, $2, $3, $4) ON CONFLICT (media_buy_id) DO NOTHING`,
    [id, input.principalId ?? null, input.taskId ?? id, input.taskType ?? 'create_media_buy'],
  );
}

export async function lockBuy(
  ctx: ChannelsContext,
  c: PoolClient,
  id: string,
  skipLocked: boolean,
): Promise<BuyRow | null> {
  const { rows } = await c.query<BuyRow>(
    `SELECT media_buy_id, principal_id, task_id, task_type, context, push_config,
            reporting_config, currency, expected_delay_minutes, terminal_status,
            flight_start, flight_end, reporting_from
     FROM ${ctx.schema}.channel_media_buys WHERE media_buy_id = $1
     FOR UPDATE${skipLocked ? ' SKIP LOCKED' : ''}`,
    [id],
  );
  return rows[0] ?? null;
}

export async function readSchedule(
  ctx: ChannelsContext,
  c: PoolClient,
  id: string,
): Promise<ScheduleRow | null> {
  const { rows } = await c.query<ScheduleRow>(
    `SELECT frequency, period_start, next_fire_at, delayed_sent
     FROM ${ctx.schema}.channel_report_schedules WHERE media_buy_id = $1`,
    [id],
  );
  return rows[0] ?? null;
}

/** `impaired` iff the buy has open impairments (it is not terminal while this runs). */
export async function buyHealth(
  ctx: ChannelsContext,
  c: PoolClient,
  id: string,
): Promise<'ok' | 'impaired'> {
  const { rows } = await c.query<{ impaired: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${ctx.schema}.channel_impairments
                    WHERE media_buy_id = $1 AND open) AS impaired`,
    [id],
  );
  return rows[0]?.impaired ? 'impaired' : 'ok';
}
