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

/**
 * accept_batch's observations that need no row lock order: the notification_ids of fresh
 * claims that are unique in the batch (one upsert), and the newer non-terminal status of a
 * task that appears once in the batch (one upsert, task_observe's own fast path). What they
 * leave (a repeated id or task, a terminal, an older status) goes through task_observe.
 */
function observationUpserts(s: string): string {
  return `
      WITH input AS (
        SELECT t.sender, t.nid, t.key, t.retention, t.i
        FROM unnest(a_sender, a_nid, a_key, a_retention, a_owner)
          WITH ORDINALITY AS t(sender, nid, key, retention, owner, i)
        WHERE t.nid IS NOT NULL AND t.owner = ANY (v_fresh)
      ), single AS (
        SELECT * FROM input x WHERE (SELECT count(*) FROM input y
          WHERE y.sender = x.sender AND y.nid = x.nid) = 1
      ), ins AS (
        INSERT INTO ${s}.notification_ids AS n (sender, notification_id, first_key, expires_at)
        SELECT sender, nid, key, now() + retention * interval '1 second' FROM single
        ORDER BY sender, nid
        ON CONFLICT (sender, notification_id) DO UPDATE SET emissions = n.emissions + 1
          WHERE n.first_key <> EXCLUDED.first_key
        RETURNING n.sender, n.notification_id, n.first_key
      )
      SELECT coalesce(array_agg(single.i), '{}'),
             coalesce(array_agg(single.i) FILTER (WHERE ins.first_key <> single.key), '{}')
        INTO v_nid_done, v_nid_re
      FROM single LEFT JOIN ins
        ON ins.sender = single.sender AND ins.notification_id = single.nid;
      WITH single AS (
        SELECT t.sender, t.task_id, t.key, t.at, t.status, t.retention, t.i
        FROM unnest(a_sender, a_task_id, a_key, a_at, a_status, a_retention, a_terminal,
                    a_owner) WITH ORDINALITY
          AS t(sender, task_id, key, at, status, retention, terminal, owner, i)
        WHERE t.task_id IS NOT NULL AND NOT t.terminal AND t.at IS NOT NULL
          AND t.owner = ANY (v_fresh)
          AND (SELECT count(*) FROM unnest(a_sender, a_task_id) AS y(sender, task_id)
               WHERE y.sender = t.sender AND y.task_id = t.task_id) = 1
      ), up AS (
        INSERT INTO ${s}.task_state AS ts
          (sender, task_id, newest_at, newest_key, newest_status, expires_at)
        SELECT sender, task_id, at, key, status, now() + retention * interval '1 second'
        FROM single ORDER BY sender, task_id
        ON CONFLICT (sender, task_id) DO UPDATE
          SET newest_at = EXCLUDED.newest_at, newest_key = EXCLUDED.newest_key,
              newest_status = EXCLUDED.newest_status,
              expires_at = GREATEST(ts.expires_at, EXCLUDED.expires_at)
          WHERE ts.terminal_fp IS NULL
            AND (ts.newest_at IS NULL OR EXCLUDED.newest_at > ts.newest_at)
        RETURNING ts.sender, ts.task_id
      )
      SELECT coalesce(array_agg(single.i), '{}') INTO v_task_current
      FROM single JOIN up ON up.sender = single.sender AND up.task_id = single.task_id;`;
}

/**
 * Set-based where the common case allows: one INSERT for the batch's nonces (rows whose
 * keyid needs no cap read), one INSERT for its new keys, one UPDATE for its done-marks;
 * only what is left (a key already stored, a sender at its bound, a nonce near the cap) and
 * the task observations go row by row.
 */
/** accept_batch's done-marks: one UPDATE, each answered 'completed' or 'lost' (ord < 0). */
function doneMarks(s: string): string {
  return `
      IF cardinality(d_key) > 0 THEN
        RETURN QUERY
        WITH done AS (
          UPDATE ${s}.idempotency_keys k
            SET state = 'done', done_at = now(), outcome = t.outcome, owner = NULL
          FROM unnest(d_sender, d_key, d_owner, d_gen, d_outcome)
            WITH ORDINALITY AS t(sender, key, owner, gen, outcome, i)
          WHERE k.sender = t.sender AND k.idempotency_key = t.key AND k.owner = t.owner
            AND k.generation = t.gen AND k.state = 'processing'
          RETURNING t.i
        )
        SELECT -t.i::integer,
               CASE WHEN done.i IS NULL THEN 'lost' ELSE 'completed' END,
               t.gen, NULL::text, NULL::text, NULL::boolean
        FROM unnest(d_gen) WITH ORDINALITY AS t(gen, i) LEFT JOIN done ON done.i = t.i;
      END IF;`;
}

/** accept_batch's nonces that need no cap read: one INSERT; the first of a repeat wins. */
function nonceInserts(s: string): string {
  return `
      -- Nonces that need no cap read: one insert; the first of a repeated nonce wins.
      IF EXISTS (SELECT 1 FROM unnest(a_keyid, a_cap_check) AS t(keyid, cap_check)
                 WHERE t.keyid IS NOT NULL AND NOT t.cap_check) THEN
        WITH input AS (
          SELECT DISTINCT ON (t.keyid, t.nonce) t.keyid, t.nonce, t.ttl, t.i
          FROM unnest(a_keyid, a_nonce, a_ttl, a_cap_check)
            WITH ORDINALITY AS t(keyid, nonce, ttl, cap_check, i)
          WHERE t.keyid IS NOT NULL AND NOT t.cap_check
          ORDER BY t.keyid, t.nonce, t.i
        ), ins AS (
          INSERT INTO ${s}.replay_nonces AS rn (keyid, nonce, expires_at, shard)
          SELECT keyid, nonce, now() + make_interval(secs => ttl), p_shard FROM input
          ORDER BY keyid, nonce
          ON CONFLICT (keyid, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
            WHERE rn.expires_at <= now()
          RETURNING rn.keyid, rn.nonce, (rn.xmax = 0) AS fresh
        )
        SELECT coalesce(array_agg(f.i), '{}'),
               coalesce(array_agg(f.keyid) FILTER (WHERE ins.fresh), '{}')
          INTO v_nonce_ok, v_keyids
        FROM input f JOIN ins ON ins.keyid = f.keyid AND ins.nonce = f.nonce;
      END IF;`;
}

/** accept_batch's new keys of senders under their bound: one INSERT. */
function newKeyInserts(s: string): string {
  return `
      -- New keys of senders under their bound: one insert (owners are unique per call).
      WITH ins AS (
        INSERT INTO ${s}.idempotency_keys AS k
          (sender, idempotency_key, fingerprint, state, owner, generation, lease_until,
           expires_at)
        SELECT t.sender, t.key, t.fp, 'processing', t.owner, 1,
               clock_timestamp() + p_lease_ms * interval '1 millisecond',
               now() + t.retention * interval '1 second'
        FROM unnest(a_sender, a_key, a_fp, a_owner, a_retention, a_bounded, a_keyid,
                    a_cap_check) WITH ORDINALITY
          AS t(sender, key, fp, owner, retention, bounded, keyid, cap_check, i)
        WHERE NOT t.bounded
          AND (t.keyid IS NULL OR (NOT t.cap_check AND t.i = ANY (v_nonce_ok)))
        ORDER BY t.sender, t.key
        ON CONFLICT (sender, idempotency_key) DO NOTHING
        RETURNING k.owner
      )
      SELECT coalesce(array_agg(ins.owner), '{}') INTO v_fresh FROM ins;`;
}

function acceptBatchFunction(s: string): string {
  return `
    -- Done-marks first (ord < 0: 'completed' or 'lost'), then accepts (ord > 0).
    CREATE FUNCTION ${s}.accept_batch(
      d_sender text[], d_key text[], d_owner text[], d_gen integer[], d_outcome text[],
      a_keyid text[], a_nonce text[], a_ttl integer[], a_cap_check boolean[],
      a_sender text[], a_key text[], a_fp text[], a_owner text[], a_retention integer[],
      a_bounded boolean[], a_task_id text[], a_at timestamptz[], a_status text[],
      a_terminal boolean[], a_term_fp text[], a_record text[], a_source text[], a_nid text[],
      p_lease_ms integer, p_check_fp boolean, p_key_cap bigint, p_all_cap bigint,
      p_shard smallint, p_async boolean)
    RETURNS TABLE (ord integer, result text, generation integer, outcome text,
                   decision text, re_emission boolean)
    LANGUAGE plpgsql AS $fn$
    DECLARE r record; a record; o record;
      v_nonce_ok bigint[] := '{}'; v_fresh text[] := '{}';
      v_nid_done bigint[] := '{}'; v_nid_re bigint[] := '{}'; v_task_current bigint[] := '{}';
      v_nid text; v_task text;
      v_keyids text[] := '{}'; v_senders text[] := '{}';
    BEGIN
      IF p_async THEN
        PERFORM set_config('synchronous_commit', 'off', true);
      END IF;
      ${doneMarks(s)}
      IF cardinality(a_key) = 0 THEN
        RETURN;
      END IF;
      ${nonceInserts(s)}
      ${newKeyInserts(s)}
      ${observationUpserts(s)}
      FOR r IN SELECT * FROM unnest(a_keyid, a_nonce, a_ttl, a_cap_check, a_sender, a_key,
          a_fp, a_owner, a_retention, a_bounded, a_task_id, a_at, a_status, a_terminal,
          a_term_fp, a_record, a_source, a_nid)
          WITH ORDINALITY AS t(keyid, nonce, ttl, cap_check, sender, key, fp, owner,
            retention, bounded, task_id, at, status, terminal, term_fp, record, source,
            nid, i) LOOP
        IF r.keyid IS NOT NULL AND NOT r.cap_check AND NOT (r.i = ANY (v_nonce_ok)) THEN
          RETURN QUERY SELECT r.i::integer, 'replayed'::text, 0, NULL::text, NULL::text,
            NULL::boolean;
        ELSIF r.owner = ANY (v_fresh) THEN
          v_senders := v_senders || r.sender;
          v_nid := CASE WHEN r.i = ANY (v_nid_done) THEN NULL ELSE r.nid END;
          v_task := CASE WHEN r.i = ANY (v_task_current) THEN NULL ELSE r.task_id END;
          IF v_task IS NULL AND v_nid IS NULL THEN
            RETURN QUERY SELECT r.i::integer, 'claimed'::text, 1, NULL::text, 'current'::text,
              r.i = ANY (v_nid_re);
          ELSE
            SELECT * INTO o FROM ${s}.task_observe(r.sender, v_task, r.key, r.at,
              r.status, r.terminal, r.term_fp, r.record, r.source, v_nid, r.retention);
            RETURN QUERY SELECT r.i::integer, 'claimed'::text, 1, NULL::text, o.decision,
              o.re_emission OR r.i = ANY (v_nid_re);
          END IF;
        ELSE
          -- A key already stored, a sender at its bound, or a nonce near its cap.
          SELECT * INTO a FROM ${s}.accept_one(CASE WHEN r.cap_check THEN r.keyid END,
            r.nonce, r.ttl, p_shard, r.cap_check, p_key_cap, p_all_cap, r.sender, r.key,
            r.fp, r.owner, p_lease_ms, r.retention, p_check_fp, r.bounded, r.task_id, r.at,
            r.status, r.terminal, r.term_fp, r.record, r.source, r.nid);
          IF a.nonce_fresh THEN v_keyids := v_keyids || r.keyid; END IF;
          IF a.result = 'claimed' THEN v_senders := v_senders || r.sender; END IF;
          RETURN QUERY SELECT r.i::integer, a.result, a.generation, a.outcome, a.decision,
            a.re_emission;
        END IF;
      END LOOP;
      -- Counters last, in key order: no batch waits on a counter while holding one.
      IF cardinality(v_keyids) > 0 THEN
        INSERT INTO ${s}.replay_counts AS c (keyid, shard, n)
        SELECT k, p_shard, count(*) FROM unnest(v_keyids) AS k GROUP BY k ORDER BY k
        ON CONFLICT (keyid, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
      END IF;
      IF cardinality(v_senders) > 0 THEN
        INSERT INTO ${s}.sender_key_counts AS c (sender, shard, n)
        SELECT k, p_shard, count(*) FROM unnest(v_senders) AS k GROUP BY k ORDER BY k
        ON CONFLICT (sender, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
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
];
