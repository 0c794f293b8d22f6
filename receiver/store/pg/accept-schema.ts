/**
 * The store's one round trip (`accept_batch`): for a batch of deliveries it runs the
 * done-marks of publications that finished, then for each new delivery the nonce insert
 * (step 13, when the replay cache lives in this schema), the claim of (sender,
 * idempotency_key) and the task's ordering/convergence observation, then bumps the replay
 * and per-sender counters once per batch. Before this, the nonce insert, the claim and the
 * done-mark were three statements (three commits) per delivery.
 *
 * `sender_key_counts` is the per-sender storage bound, kept as a counter (issue 19 item 4):
 * bumped by the batch that inserts a key, lowered by the purge that deletes it, spread over
 * shard rows so concurrent batches rarely wait on one row. Reading it is an index lookup of
 * at most a few rows whatever the table's size (counting the table took 718 ms at 2M keys).
 * The migration initialises it from the keys already stored.
 *
 * Cap check of the nonce insert: the caller passes `cap_check` only when its cached count
 * of the keyid is near or over the cap (or unknown); far from it, the insert skips the
 * counter reads. The cap bounds storage, it is not a quota (see pg-replay-store.ts).
 */
import type { Migration } from '../../../shared/infra/pg.js';
import { acceptBatchFunction } from './accept-batch.js';

function acceptOneFunction(s: string): string {
  return `
    CREATE FUNCTION ${s}.accept_one(
      p_keyid text, p_nonce text, p_ttl integer, p_shard smallint, p_cap_check boolean,
      p_key_cap bigint, p_all_cap bigint,
      p_sender text, p_key text, p_fp text, p_owner text, p_lease_ms integer,
      p_retention_s integer, p_check_fp boolean, p_bounded boolean,
      p_task_id text, p_at timestamptz, p_status text, p_terminal boolean, p_term_fp text,
      p_record text, p_source text, p_notification_id text)
    RETURNS TABLE (result text, generation integer, outcome text, decision text,
                   re_emission boolean, nonce_fresh boolean)
    LANGUAGE plpgsql AS $fn$
    DECLARE c record; o record; v_fresh boolean := false;
    BEGIN
      IF p_keyid IS NOT NULL THEN
        IF p_cap_check AND (
             (SELECT coalesce(sum(n), 0) FROM ${s}.replay_counts WHERE keyid = p_keyid) >= p_key_cap
          OR (SELECT coalesce(sum(n), 0) FROM ${s}.replay_counts) >= p_all_cap) THEN
          -- Over the cap a nonce already present still reads as a replay (SDK precedence).
          IF EXISTS (SELECT 1 FROM ${s}.replay_nonces r WHERE r.keyid = p_keyid
                       AND r.nonce = p_nonce AND r.expires_at > now()) THEN
            RETURN QUERY SELECT 'replayed'::text, 0, NULL::text, NULL::text, NULL::boolean, false;
          ELSE
            RETURN QUERY SELECT 'rate_abuse'::text, 0, NULL::text, NULL::text, NULL::boolean, false;
          END IF;
          RETURN;
        END IF;
        INSERT INTO ${s}.replay_nonces AS r (keyid, nonce, expires_at, shard)
        VALUES (p_keyid, p_nonce, now() + make_interval(secs => p_ttl), p_shard)
        ON CONFLICT (keyid, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
          WHERE r.expires_at <= now()
        RETURNING (r.xmax = 0) INTO v_fresh;
        IF NOT FOUND THEN
          RETURN QUERY SELECT 'replayed'::text, 0, NULL::text, NULL::text, NULL::boolean, false;
          RETURN;
        END IF;
      END IF;
      IF p_bounded AND NOT EXISTS (SELECT 1 FROM ${s}.idempotency_keys k
                                   WHERE k.sender = p_sender AND k.idempotency_key = p_key) THEN
        RETURN QUERY SELECT 'over_limit'::text, 0, NULL::text, NULL::text, NULL::boolean, v_fresh;
        RETURN;
      END IF;
      SELECT * INTO c FROM ${s}.idem_claim(p_sender, p_key, p_fp, p_owner, p_lease_ms,
        p_retention_s, p_check_fp);
      IF c.result IN ('claimed', 'taken_over') THEN
        SELECT * INTO o FROM ${s}.task_observe(p_sender, p_task_id, p_key, p_at, p_status,
          p_terminal, p_term_fp, p_record, p_source, p_notification_id, p_retention_s);
        RETURN QUERY SELECT c.result, c.generation, c.outcome, o.decision, o.re_emission, v_fresh;
      ELSE
        RETURN QUERY SELECT c.result, c.generation, c.outcome, NULL::text, NULL::boolean, v_fresh;
      END IF;
    END
    $fn$;`;
}

export const ACCEPT_BATCH_MIGRATIONS: Migration[] = [
  {
    id: 'store_001_accept_batch',
    sql: (s) => `
      CREATE TABLE ${s}.sender_key_counts (
        sender text NOT NULL,
        shard smallint NOT NULL,
        n bigint NOT NULL,
        PRIMARY KEY (sender, shard)
      ) WITH (fillfactor = 50);
      LOCK TABLE ${s}.idempotency_keys IN SHARE MODE;
      INSERT INTO ${s}.sender_key_counts (sender, shard, n)
        SELECT sender, 0, count(*) FROM ${s}.idempotency_keys GROUP BY sender;
      ${acceptOneFunction(s)}
      ${acceptBatchFunction(s)}
    `,
  },
  {
    // accept_batch set-based without per-row array lookups, on generic plans, and the task
    // row's expiry moved only when it falls short (HOT updates): see accept-batch.ts. Same
    // signature and answers; a database created after this change has it from 001 already.
    id: 'store_002_accept_batch_set_based',
    sql: (s) => acceptBatchFunction(s),
  },
  {
    // Issue 23, database CPU per event: the nonce and key inserts in one statement (see
    // accept-batch.ts), and room on every page of idempotency_keys for each row's done-mark,
    // so the mark is a HOT update (no new entry in the key and expiry indexes): at
    // fillfactor 80 a page had room for about one row in five's new version, and half the
    // marks were not HOT. Pages written from now on keep the room; existing pages are left
    // as they are (no rewrite, no lock beyond the ALTER's brief one).
    id: 'store_003_claim_one_statement',
    sql: (s) => `
      ALTER TABLE ${s}.idempotency_keys SET (fillfactor = 50);
      ${acceptBatchFunction(s)}
    `,
  },
];
