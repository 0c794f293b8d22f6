/**
 * Ordering and convergence state per (sender, task_id), and the notification_id ledger.
 * The decision runs server-side under the task row's lock: one round trip per observation.
 */
import type { Migration } from '../../../shared/infra/pg.js';

/**
 * task_observe: one call records an observation of a task and decides current, stale,
 * terminal won, terminal duplicate or terminal conflict. Terminal results compare on their
 * channel-neutral fingerprint (status and value); the task type is a constraint checked
 * where both observations name one.
 */
function taskObserveFunction(s: string): string {
  return `
      CREATE OR REPLACE FUNCTION ${s}.task_observe(
        p_sender text, p_task_id text, p_key text, p_at timestamptz, p_status text,
        p_terminal boolean, p_fp text, p_record text, p_source text,
        p_notification_id text, p_retention_s integer)
      RETURNS TABLE (decision text, re_emission boolean)
      LANGUAGE plpgsql AS $fn$
      DECLARE
        r record;
        v_decision text := 'current';
        v_re boolean := false;
        v_first text;
      BEGIN
        IF p_notification_id IS NOT NULL AND p_key IS NOT NULL THEN
          INSERT INTO ${s}.notification_ids AS n (sender, notification_id, first_key, expires_at)
          VALUES (p_sender, p_notification_id, p_key, now() + p_retention_s * interval '1 second')
          ON CONFLICT (sender, notification_id) DO UPDATE
            SET emissions = n.emissions + 1
            WHERE n.first_key <> EXCLUDED.first_key
          RETURNING n.first_key INTO v_first;
          v_re := v_first IS NOT NULL AND v_first <> p_key;
        END IF;

        IF p_task_id IS NULL THEN
          RETURN QUERY SELECT v_decision, v_re;
          RETURN;
        END IF;

        -- Fast path, one statement: a non-terminal status newer than the newest applied one
        -- on a task without a terminal result (also creates the row on first sight).
        IF NOT p_terminal AND p_at IS NOT NULL THEN
          INSERT INTO ${s}.task_state AS t
            (sender, task_id, newest_at, newest_key, newest_status, expires_at)
          VALUES (p_sender, p_task_id, p_at, p_key, p_status,
                  now() + p_retention_s * interval '1 second')
          ON CONFLICT (sender, task_id) DO UPDATE
            SET newest_at = EXCLUDED.newest_at, newest_key = EXCLUDED.newest_key,
                newest_status = EXCLUDED.newest_status,
                expires_at = GREATEST(t.expires_at, EXCLUDED.expires_at)
            WHERE t.terminal_fp IS NULL AND (t.newest_at IS NULL OR EXCLUDED.newest_at > t.newest_at);
          IF FOUND THEN
            RETURN QUERY SELECT 'current'::text, v_re;
            RETURN;
          END IF;
        ELSE
          INSERT INTO ${s}.task_state (sender, task_id, expires_at)
          VALUES (p_sender, p_task_id, now() + p_retention_s * interval '1 second')
          ON CONFLICT (sender, task_id) DO NOTHING;
        END IF;
        SELECT * INTO r FROM ${s}.task_state t
          WHERE t.sender = p_sender AND t.task_id = p_task_id FOR UPDATE;

        IF p_terminal THEN
          IF r.terminal_fp IS NULL THEN
            UPDATE ${s}.task_state t SET
              terminal_status = p_status, terminal_fp = p_fp, terminal_record = p_record,
              terminal_source = p_source, terminal_key = p_key, terminal_at = now(),
              newest_at = CASE WHEN t.newest_at IS NULL OR p_at > t.newest_at THEN p_at ELSE t.newest_at END,
              newest_key = p_key, newest_status = p_status,
              expires_at = GREATEST(t.expires_at, now() + p_retention_s * interval '1 second')
            WHERE t.sender = p_sender AND t.task_id = p_task_id;
            v_decision := 'terminal_won';
          ELSIF p_key IS NOT NULL AND r.terminal_key = p_key THEN
            -- the winning delivery itself, retried after its first owner failed
            v_decision := 'terminal_won';
          ELSIF r.terminal_fp = p_fp THEN
            -- Same status and value. The task type is a constraint, checked where both
            -- observations name one (A2A payloads carry none).
            IF (r.terminal_record::jsonb ->> 'task_type') IS NOT NULL
               AND (p_record::jsonb ->> 'task_type') IS NOT NULL
               AND (r.terminal_record::jsonb ->> 'task_type') <> (p_record::jsonb ->> 'task_type') THEN
              v_decision := 'terminal_conflict';
            ELSE
              v_decision := 'terminal_duplicate';
            END IF;
          ELSE
            v_decision := 'terminal_conflict';
          END IF;
        ELSIF r.terminal_fp IS NOT NULL THEN
          v_decision := 'stale';
        ELSIF p_at IS NULL THEN
          v_decision := 'current';
        ELSIF p_key IS NOT NULL AND r.newest_key = p_key THEN
          -- the delivery that set the newest timestamp, retried
          v_decision := 'current';
        ELSE
          v_decision := 'stale';
        END IF;
        RETURN QUERY SELECT v_decision, v_re;
      END
      $fn$;
  `;
}

export const ORDERING_MIGRATIONS: Migration[] = [
  {
    id: 'ordering_001_tasks',
    sql: (s) => `
      CREATE TABLE ${s}.task_state (
        sender text NOT NULL,
        task_id text NOT NULL,
        newest_at timestamptz,
        newest_key text,
        newest_status text,
        terminal_status text,
        terminal_fp text,
        terminal_record text,
        terminal_source text,
        terminal_key text,
        terminal_at timestamptz,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (sender, task_id)
      ) WITH (fillfactor = 80);
      CREATE INDEX task_state_expires ON ${s}.task_state (expires_at);

      CREATE TABLE ${s}.notification_ids (
        sender text NOT NULL,
        notification_id text NOT NULL,
        first_key text NOT NULL,
        emissions integer NOT NULL DEFAULT 1,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (sender, notification_id)
      );
      CREATE INDEX notification_ids_expires ON ${s}.notification_ids (expires_at);

      -- decision: current | stale | terminal_won | terminal_duplicate | terminal_conflict
      -- re_emission: the notification_id was seen before under another key
${taskObserveFunction(s)}
    `,
  },
  {
    // Terminal results are compared on (status, value): the same result seen through the MCP
    // and the A2A channel must converge, though only the MCP payload names its task type.
    // (A database created after this change gets the same function from 001 already.)
    id: 'ordering_002_channel_neutral_terminal',
    sql: (s: string) => taskObserveFunction(s),
  },
];
