/**
 * Every migration of the receiver's PostgreSQL schema, and the first combined accept call: the delivery-key claim and, when it is won, the
 * ordering/convergence observation, in one round trip (each half keeps its own function and
 * its own tests; this only chains them server-side).
 *
 * `p_async` commits without waiting for the WAL flush. What a database crash could then
 * lose is a claim and its ordering observation from the last moments before the crash; the
 * effect is at most one more publication of that key when it is delivered again, the same
 * outcome as an owner dying mid-publication (which the lease handles), never a lost event.
 */
import type { Migration } from '../../../shared/infra/pg.js';
import { IDEMPOTENCY_MIGRATIONS } from './idempotency-schema.js';
import { ORDERING_MIGRATIONS } from './ordering-schema.js';
import { QUEUE_MIGRATIONS } from '../../publish/queue.js';
import { ACCEPT_BATCH_MIGRATIONS } from './accept-schema.js';

const ACCEPT_MIGRATIONS: Migration[] = [
  {
    id: 'pipeline_001_accept',
    sql: (s) => `
      CREATE FUNCTION ${s}.accept_delivery(
        p_sender text, p_key text, p_fp text, p_owner text,
        p_lease_ms integer, p_retention_s integer, p_check_fp boolean,
        p_task_id text, p_at timestamptz, p_status text, p_terminal boolean,
        p_term_fp text, p_record text, p_source text, p_notification_id text,
        p_async boolean)
      RETURNS TABLE (result text, generation integer, outcome text, decision text,
                     re_emission boolean)
      LANGUAGE plpgsql AS $fn$
      DECLARE c record; o record;
      BEGIN
        IF p_async THEN
          PERFORM set_config('synchronous_commit', 'off', true);
        END IF;
        SELECT * INTO c FROM ${s}.idem_claim(p_sender, p_key, p_fp, p_owner, p_lease_ms,
          p_retention_s, p_check_fp);
        IF c.result IN ('claimed', 'taken_over') THEN
          SELECT * INTO o FROM ${s}.task_observe(p_sender, p_task_id, p_key, p_at, p_status,
            p_terminal, p_term_fp, p_record, p_source, p_notification_id, p_retention_s);
          RETURN QUERY SELECT c.result, c.generation, c.outcome, o.decision, o.re_emission;
        ELSE
          RETURN QUERY SELECT c.result, c.generation, c.outcome, NULL::text, NULL::boolean;
        END IF;
      END
      $fn$;
    `,
  },
];

/** Every table and function of the receiver, in dependency order. */
export const RECEIVER_MIGRATIONS: Migration[] = [
  ...IDEMPOTENCY_MIGRATIONS,
  ...ORDERING_MIGRATIONS,
  ...QUEUE_MIGRATIONS,
  ...ACCEPT_MIGRATIONS,
  ...ACCEPT_BATCH_MIGRATIONS,
];
