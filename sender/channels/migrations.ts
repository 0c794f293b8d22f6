/**
 * The channel registry's tables, in the sender's schema beside the outbox (ids prefixed
 * `ch_`, tables `channel_`). PostgreSQL holds every piece of channel state: configs,
 * schedules, sequence counters and pending coalescence windows; nothing lives only in memory.
 */
import type { Migration } from '../../shared/infra/pg.js';

export const CHANNEL_MIGRATIONS: Migration[] = [
  {
    id: 'ch_001_registry',
    sql: (s) => `
      CREATE TABLE ${s}.channel_media_buys (
        media_buy_id text PRIMARY KEY,
        principal_id text,
        task_id text NOT NULL,
        task_type text NOT NULL,
        context jsonb,
        push_config jsonb,
        push_previous_url text,
        push_updated_at timestamptz,
        reporting_config jsonb,
        reporting_previous_url text,
        reporting_updated_at timestamptz,
        currency text,
        expected_delay_minutes integer NOT NULL DEFAULT 0,
        terminal_status text,
        terminal_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      -- One row per buy with a reporting_webhook: the period not yet reported and when
      -- to try it. The runner claims due rows with SKIP LOCKED on the buy row.
      CREATE TABLE ${s}.channel_report_schedules (
        media_buy_id text PRIMARY KEY
          REFERENCES ${s}.channel_media_buys (media_buy_id) ON DELETE CASCADE,
        frequency text NOT NULL,
        period_start timestamptz NOT NULL,
        next_fire_at timestamptz NOT NULL,
        delayed_sent boolean NOT NULL DEFAULT false
      );
      CREATE INDEX channel_report_schedules_due ON ${s}.channel_report_schedules (next_fire_at);

      -- sequence_number runs from 1 per buy per URL: a rotated URL starts its own stream.
      CREATE TABLE ${s}.channel_report_sequences (
        media_buy_id text NOT NULL,
        url text NOT NULL,
        last_sequence integer NOT NULL,
        PRIMARY KEY (media_buy_id, url)
      );

      -- Every impairment seen, latest state: the buy's health is derived from the open ones.
      CREATE TABLE ${s}.channel_impairments (
        media_buy_id text NOT NULL,
        impairment_id text NOT NULL,
        state jsonb NOT NULL,
        open boolean NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (media_buy_id, impairment_id)
      );

      -- Coalescence windows waiting to fire: one row per impairment (latest state wins),
      -- fire_at fixed when the window of its (buy, kind) opened.
      CREATE TABLE ${s}.channel_impairment_pending (
        media_buy_id text NOT NULL,
        impairment_id text NOT NULL,
        kind text NOT NULL,
        impairment jsonb NOT NULL,
        first_seen bigserial,
        fire_at timestamptz NOT NULL,
        PRIMARY KEY (media_buy_id, impairment_id)
      );
      CREATE INDEX channel_impairment_pending_due ON ${s}.channel_impairment_pending (fire_at);
    `,
  },
  {
    // Flight dates end the reporting schedule; reporting_from is where the final report's
    // span starts when no flight start is known.
    id: 'ch_002_flight',
    sql: (s) => `
      ALTER TABLE ${s}.channel_media_buys
        ADD COLUMN flight_start timestamptz,
        ADD COLUMN flight_end timestamptz,
        ADD COLUMN reporting_from timestamptz;
      CREATE INDEX channel_media_buys_flight_end ON ${s}.channel_media_buys (flight_end)
        WHERE terminal_status IS NULL AND flight_end IS NOT NULL;
    `,
  },
  {
    // Aggregated reports (opt-in): sequence_number per stream of identical registrations.
    id: 'ch_003_report_streams',
    sql: (s) => `
      CREATE TABLE ${s}.channel_report_streams (
        stream_key text PRIMARY KEY,
        last_sequence integer NOT NULL
      );
    `,
  },
];
