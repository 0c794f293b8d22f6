/**
 * Tables and functions of the delivery-key store. The claim runs as one server-side
 * function so a delivery costs one round trip to decide "claimed / in flight / done /
 * conflict" under a row lock, whatever the number of receiver processes.
 */
import type { Migration } from '../../../shared/infra/pg.js';

export const IDEMPOTENCY_MIGRATIONS: Migration[] = [
  {
    id: 'idempotency_001_keys',
    sql: (s) => `
      CREATE TABLE ${s}.idempotency_keys (
        sender text NOT NULL,
        idempotency_key text NOT NULL,
        fingerprint text NOT NULL,
        state text NOT NULL CHECK (state IN ('processing', 'done')),
        owner text,
        generation integer NOT NULL DEFAULT 1,
        lease_until timestamptz NOT NULL,
        accepted_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        done_at timestamptz,
        outcome text,
        PRIMARY KEY (sender, idempotency_key)
      ) WITH (fillfactor = 80); -- room for HOT updates (claim -> done changes no indexed column)
      CREATE INDEX idempotency_keys_expires ON ${s}.idempotency_keys (expires_at);

      -- result: claimed | taken_over | in_flight | done | conflict
      CREATE FUNCTION ${s}.idem_claim(
        p_sender text, p_key text, p_fp text, p_owner text,
        p_lease_ms integer, p_retention_s integer, p_check_fp boolean)
      RETURNS TABLE (result text, generation integer, outcome text)
      LANGUAGE plpgsql AS $fn$
      DECLARE r record;
      BEGIN
        INSERT INTO ${s}.idempotency_keys AS k
          (sender, idempotency_key, fingerprint, state, owner, generation, lease_until, expires_at)
        VALUES (p_sender, p_key, p_fp, 'processing', p_owner, 1,
          clock_timestamp() + p_lease_ms * interval '1 millisecond',
          now() + p_retention_s * interval '1 second')
        ON CONFLICT (sender, idempotency_key) DO NOTHING;
        IF FOUND THEN
          RETURN QUERY SELECT 'claimed'::text, 1, NULL::text;
          RETURN;
        END IF;
        SELECT * INTO r FROM ${s}.idempotency_keys k
          WHERE k.sender = p_sender AND k.idempotency_key = p_key FOR UPDATE;
        IF NOT FOUND THEN
          -- purged between the two statements: the sender retries and claims it fresh
          RETURN QUERY SELECT 'in_flight'::text, 0, NULL::text;
          RETURN;
        END IF;
        IF p_check_fp AND r.fingerprint <> p_fp THEN
          RETURN QUERY SELECT 'conflict'::text, r.generation, r.outcome;
          RETURN;
        END IF;
        IF r.state = 'done' THEN
          RETURN QUERY SELECT 'done'::text, r.generation, r.outcome;
          RETURN;
        END IF;
        IF r.lease_until > clock_timestamp() THEN
          RETURN QUERY SELECT 'in_flight'::text, r.generation, NULL::text;
          RETURN;
        END IF;
        UPDATE ${s}.idempotency_keys k
          SET owner = p_owner, generation = r.generation + 1,
              lease_until = clock_timestamp() + p_lease_ms * interval '1 millisecond'
          WHERE k.sender = p_sender AND k.idempotency_key = p_key;
        RETURN QUERY SELECT 'taken_over'::text, r.generation + 1, NULL::text;
      END
      $fn$;

      -- The fenced done-mark. p_async: commit without waiting for the WAL flush (see store.ts).
      CREATE FUNCTION ${s}.idem_complete(
        p_sender text, p_key text, p_owner text, p_generation integer, p_outcome text,
        p_async boolean)
      RETURNS boolean
      LANGUAGE plpgsql AS $fn$
      BEGIN
        IF p_async THEN
          PERFORM set_config('synchronous_commit', 'off', true);
        END IF;
        UPDATE ${s}.idempotency_keys k
          SET state = 'done', done_at = now(), outcome = p_outcome, owner = NULL
        WHERE k.sender = p_sender AND k.idempotency_key = p_key AND k.owner = p_owner
          AND k.generation = p_generation AND k.state = 'processing';
        RETURN FOUND;
      END
      $fn$;
    `,
  },
];
