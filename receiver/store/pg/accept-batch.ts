/**
 * `accept_batch`, the delivery store's one statement per batch (supplement §5.2, §5.3, §2.9
 * step 13): the done-marks of finished publications, then for the batch's new deliveries
 * the nonce insert, the claim of (sender, idempotency_key) and the ordering/convergence
 * observation, then the replay and per-sender counters once.
 *
 * Why it is shaped this way (issue 23, PostgreSQL CPU per event):
 * - Set-based in the common case: one statement inserting the nonces and the new keys they
 *   let through (store_003; two before), one upsert for the notification_ids, one for the
 *   task rows, one SELECT returning every fresh claim. Only what needs a row lock decision (a key already stored, a sender at
 *   its bound, a nonce near its cap, a task seen twice in the batch, a terminal or an older
 *   status) goes row by row, through `accept_one` / `task_observe`.
 * - No per-row lookups in long arrays: "did every row go in" is a count compared with the
 *   candidates (the common answer is yes); which rows did not is worked out only when the
 *   counts differ, and the later statements test a row against that (short) list. Duplicates in the batch are found with a window count, not a correlated
 *   count per row (that was quadratic in the batch).
 * - Generic plans (`plan_cache_mode`, this transaction only): the statements' custom plans
 *   were re-planned on every call, which was most of a small batch's CPU.
 * - The task row's `expires_at` is set an hour past now + retention, and moves only when
 *   it would fall short of now + retention: the common update changes no indexed column,
 *   so it is a HOT update (no index entries). A task's state is still kept at least its
 *   retention after its last observation, at most an hour longer.
 */

/**
 * The predicate of a row claimed by the set insert. `v_not_fresh` lists the rows it did not
 * claim (a key already stored, a sender at its bound, a nonce near its cap or refused): empty
 * in the common batch, so the test per row is against an empty or short array.
 */
const FRESH = `NOT (t.i = ANY (v_not_fresh))`;
/** Done-marks: one UPDATE, each answered 'completed' or 'lost' (ord < 0). */
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

/** The batch's rows as `claimInserts` reads them (once, materialised). */
const CLAIM_INPUT = `SELECT t.* FROM unnest(a_keyid, a_nonce, a_ttl, a_cap_check, a_sender, a_key,
          a_fp, a_owner, a_retention, a_bounded) WITH ORDINALITY
          AS t(keyid, nonce, ttl, cap_check, sender, key, fp, owner, retention, bounded, i)`;

/** The key insert of `claimInserts`, from the candidates `cand`. */
function keyInsert(s: string): string {
  return `kins AS (
        INSERT INTO ${s}.idempotency_keys AS k
          (sender, idempotency_key, fingerprint, state, owner, generation, lease_until,
           expires_at)
        SELECT sender, key, fp, 'processing', owner, 1,
               clock_timestamp() + p_lease_ms * interval '1 millisecond',
               now() + retention * interval '1 second'
        FROM cand ORDER BY sender, key
        ON CONFLICT (sender, idempotency_key) DO NOTHING
        RETURNING k.owner, k.sender
      )`;
}

/** The rows the key insert did not claim: none (the common batch), else found by owner. */
const NOT_FRESH = `CASE WHEN (SELECT count(*) FROM kins) = cardinality(a_key) THEN '{}'::bigint[]
          ELSE (SELECT coalesce(array_agg(x.i), '{}') FROM input x
                WHERE NOT EXISTS (SELECT 1 FROM kins WHERE kins.owner = x.owner)) END`;

/**
 * The nonces that need no cap read and the new keys they let through, in one statement
 * (issue 23: one executor start, one snapshot instead of two): the first of a repeated
 * nonce wins, a key is inserted only when its nonce went in (or it carries none), owners
 * are unique per call. Out: the fresh nonces' keyids and the claimed keys' senders (for the
 * counters), the rows whose nonce was refused (`v_replayed`) and the rows not claimed
 * (`v_not_fresh`), both found only when a count says some are.
 */
function claimInserts(s: string): string {
  const nonced = 'keyid IS NOT NULL AND NOT cap_check';
  // Without a colocated replay cache no row has a nonce, and replay_nonces may not exist:
  // the statement without the nonce insert (PL/pgSQL plans a statement when first run).
  return `
      IF cardinality(array_remove(a_keyid, NULL)) > 0 THEN
      WITH input AS MATERIALIZED (${CLAIM_INPUT}
      ), nin AS (
        SELECT DISTINCT ON (keyid, nonce) keyid, nonce, ttl, i FROM input
        WHERE ${nonced} ORDER BY keyid, nonce, i
      ), nins AS (
        INSERT INTO ${s}.replay_nonces AS rn (keyid, nonce, expires_at, shard)
        SELECT keyid, nonce, now() + make_interval(secs => ttl), p_shard FROM nin
        ORDER BY keyid, nonce
        ON CONFLICT (keyid, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
          WHERE rn.expires_at <= now()
        RETURNING rn.keyid, rn.nonce, (rn.xmax = 0) AS fresh
      ), nok AS (
        SELECT nin.i FROM nin JOIN nins ON nins.keyid = nin.keyid AND nins.nonce = nin.nonce
      ), cand AS (
        SELECT sender, key, fp, owner, retention FROM input
        WHERE NOT bounded AND (keyid IS NULL OR (NOT cap_check AND i IN (SELECT i FROM nok)))
      ), ${keyInsert(s)}
      SELECT (SELECT coalesce(array_agg(keyid) FILTER (WHERE fresh), '{}') FROM nins),
             (SELECT coalesce(array_agg(sender), '{}') FROM kins),
             CASE WHEN (SELECT count(*) FROM nok) = (SELECT count(*) FROM input WHERE ${nonced})
               THEN '{}'::bigint[]
               ELSE (SELECT coalesce(array_agg(i), '{}') FROM input
                     WHERE ${nonced} AND i NOT IN (SELECT i FROM nok)) END,
             ${NOT_FRESH}
        INTO v_keyids, v_senders, v_replayed, v_not_fresh;
      ELSE
      WITH input AS MATERIALIZED (${CLAIM_INPUT}
      ), cand AS (
        SELECT sender, key, fp, owner, retention FROM input WHERE NOT bounded
      ), ${keyInsert(s)}
      SELECT (SELECT coalesce(array_agg(sender), '{}') FROM kins), ${NOT_FRESH}
        INTO v_senders, v_not_fresh;
      v_replayed := '{}';
      END IF;
      v_all_fresh := cardinality(v_not_fresh) = 0;`;
}

/**
 * The fresh claims' notification_ids that are unique in the batch: one upsert. Its
 * re-emissions (an id first seen under another key) are the rows it updated.
 */
function notificationUpsert(s: string): string {
  return `
      v_nid_left := '{}'; v_re_sender := '{}'; v_re_nid := '{}';
      IF cardinality(array_remove(a_nid, NULL)) > 0 THEN
      WITH input AS (
        SELECT t.sender, t.nid, t.key, t.retention, t.i,
               count(*) OVER (PARTITION BY t.sender, t.nid) AS dups
        FROM unnest(a_sender, a_nid, a_key, a_retention)
          WITH ORDINALITY AS t(sender, nid, key, retention, i)
        WHERE t.nid IS NOT NULL AND ${FRESH}
      ), ins AS (
        INSERT INTO ${s}.notification_ids AS n (sender, notification_id, first_key, expires_at)
        SELECT sender, nid, key, now() + retention * interval '1 second' FROM input
        WHERE dups = 1 ORDER BY sender, nid
        ON CONFLICT (sender, notification_id) DO UPDATE SET emissions = n.emissions + 1
          WHERE n.first_key <> EXCLUDED.first_key
        RETURNING n.sender, n.notification_id, (n.xmax = 0) AS inserted
      )
      SELECT coalesce((SELECT array_agg(x.i) FROM input x WHERE x.dups > 1), '{}'),
             coalesce(array_agg(ins.sender) FILTER (WHERE NOT ins.inserted), '{}'),
             coalesce(array_agg(ins.notification_id) FILTER (WHERE NOT ins.inserted), '{}')
        INTO v_nid_left, v_re_sender, v_re_nid
      FROM ins;
      END IF;`;
}

/**
 * The newer non-terminal status of a task seen once in the batch: one upsert (task_observe's
 * own fast path). Every other fresh observation of a task, and any the upsert did not take
 * (a terminal result stored, an older status), goes through task_observe.
 */
function taskUpsert(s: string): string {
  const single = 'NOT c.terminal AND c.at IS NOT NULL AND c.dups = 1';
  return `
      v_task_left := '{}';
      IF cardinality(array_remove(a_task_id, NULL)) > 0 THEN
      WITH c AS (
        SELECT t.sender, t.task_id, t.key, t.at, t.status, t.retention, t.terminal, t.i,
               ${FRESH} AS fresh, count(*) OVER (PARTITION BY t.sender, t.task_id) AS dups
        FROM unnest(a_sender, a_task_id, a_key, a_at, a_status, a_retention, a_terminal)
          WITH ORDINALITY AS t(sender, task_id, key, at, status, retention, terminal, i)
        WHERE t.task_id IS NOT NULL
      ), single AS (
        SELECT * FROM c WHERE c.fresh AND ${single}
      ), up AS (
        INSERT INTO ${s}.task_state AS ts
          (sender, task_id, newest_at, newest_key, newest_status, expires_at)
        SELECT sender, task_id, at, key, status,
               now() + retention * interval '1 second' + interval '1 hour'
        FROM single ORDER BY sender, task_id
        ON CONFLICT (sender, task_id) DO UPDATE
          SET newest_at = EXCLUDED.newest_at, newest_key = EXCLUDED.newest_key,
              newest_status = EXCLUDED.newest_status,
              expires_at = CASE
                WHEN ts.expires_at >= EXCLUDED.expires_at - interval '1 hour' THEN ts.expires_at
                ELSE EXCLUDED.expires_at END
          WHERE ts.terminal_fp IS NULL
            AND (ts.newest_at IS NULL OR EXCLUDED.newest_at > ts.newest_at)
        RETURNING ts.sender, ts.task_id
      )
      SELECT coalesce((SELECT array_agg(c.i) FROM c WHERE c.fresh AND NOT (${single})), '{}')
          || CASE WHEN (SELECT count(*) FROM up) = (SELECT count(*) FROM single)
                  THEN '{}'::bigint[]
                  ELSE (SELECT coalesce(array_agg(x.i), '{}') FROM single x
                        WHERE NOT EXISTS (SELECT 1 FROM up u
                          WHERE u.sender = x.sender AND u.task_id = x.task_id)) END
        INTO v_task_left;
      END IF;`;
}

/** A fresh claim's re-emission flag as the set upsert found it. */
const SET_RE_EMISSION = `(cardinality(v_re_nid) > 0 AND EXISTS (SELECT 1
  FROM unnest(v_re_sender, v_re_nid) AS x(sender, nid)
  WHERE x.sender = t.sender AND x.nid = t.nid))`;

/** Every fresh claim whose observation the set statements finished: one SELECT. */
function freshResults(): string {
  return `
      v_left := v_task_left || v_nid_left;
      IF v_all_fresh AND cardinality(v_left) = 0 AND cardinality(v_re_nid) = 0 THEN
        -- The common batch: every row claimed, observed and current; nothing row by row.
        result := 'claimed'; generation := 1; outcome := NULL; decision := 'current';
        re_emission := false;
        FOR j IN 1 .. cardinality(a_key) LOOP
          ord := j;
          RETURN NEXT;
        END LOOP;
      ELSE
        RETURN QUERY
        SELECT t.i::integer, 'claimed'::text, 1, NULL::text, 'current'::text,
               ${SET_RE_EMISSION}
        FROM unnest(a_sender, a_nid) WITH ORDINALITY AS t(sender, nid, i)
        WHERE ${FRESH} AND NOT (t.i = ANY (v_left));
      END IF;`;
}

/** The rest, row by row: replays, left-over observations and the accept_one cases. */
function rowByRow(s: string): string {
  return `
      IF NOT v_all_fresh OR cardinality(v_left) > 0 THEN
      v_set := set_config('enable_seqscan', v_seqscan, true);
      FOR r IN SELECT t.*, t.i = ANY (v_replayed) AS replayed, ${FRESH} AS fresh,
          ${SET_RE_EMISSION} AS re
          FROM unnest(a_keyid, a_nonce, a_ttl, a_cap_check, a_sender, a_key, a_fp, a_owner,
            a_retention, a_bounded, a_task_id, a_at, a_status, a_terminal, a_term_fp,
            a_record, a_source, a_nid)
          WITH ORDINALITY AS t(keyid, nonce, ttl, cap_check, sender, key, fp, owner,
            retention, bounded, task_id, at, status, terminal, term_fp, record, source,
            nid, i)
          WHERE NOT ${FRESH} OR t.i = ANY (v_left) LOOP
        IF r.replayed THEN
          RETURN QUERY SELECT r.i::integer, 'replayed'::text, 0, NULL::text, NULL::text,
            NULL::boolean;
        ELSIF r.fresh THEN
          SELECT * INTO o FROM ${s}.task_observe(r.sender,
            CASE WHEN r.i = ANY (v_task_left) THEN r.task_id END, r.key, r.at, r.status,
            r.terminal, r.term_fp, r.record, r.source,
            CASE WHEN r.i = ANY (v_nid_left) THEN r.nid END, r.retention);
          RETURN QUERY SELECT r.i::integer, 'claimed'::text, 1, NULL::text, o.decision,
            o.re_emission OR r.re;
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
      END IF;`;
}

/** Counters last, in key order: no batch waits on a counter while holding one. */
function counters(s: string): string {
  // Both in one statement when both move (always in the same order, so no two batches wait
  // on each other's counters); apart otherwise (replay_counts may not exist).
  return `
      IF cardinality(v_keyids) > 0 AND cardinality(v_senders) > 0 THEN
        WITH rc AS (
          INSERT INTO ${s}.replay_counts AS c (keyid, shard, n)
          SELECT k, p_shard, count(*) FROM unnest(v_keyids) AS k GROUP BY k ORDER BY k
          ON CONFLICT (keyid, shard) DO UPDATE SET n = c.n + EXCLUDED.n
          RETURNING 1
        ), sc AS (
          INSERT INTO ${s}.sender_key_counts AS c (sender, shard, n)
          SELECT k, p_shard, count(*) FROM unnest(v_senders) AS k GROUP BY k ORDER BY k
          ON CONFLICT (sender, shard) DO UPDATE SET n = c.n + EXCLUDED.n
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM rc) + (SELECT count(*) FROM sc) INTO v_moved;
      ELSIF cardinality(v_keyids) > 0 THEN
        INSERT INTO ${s}.replay_counts AS c (keyid, shard, n)
        SELECT k, p_shard, count(*) FROM unnest(v_keyids) AS k GROUP BY k ORDER BY k
        ON CONFLICT (keyid, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
      ELSIF cardinality(v_senders) > 0 THEN
        INSERT INTO ${s}.sender_key_counts AS c (sender, shard, n)
        SELECT k, p_shard, count(*) FROM unnest(v_senders) AS k GROUP BY k ORDER BY k
        ON CONFLICT (sender, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
      END IF;`;
}

/** `CREATE OR REPLACE` of accept_batch (its signature and result unchanged since store_001). */
export function acceptBatchFunction(s: string): string {
  return `
    -- Done-marks first (ord < 0: 'completed' or 'lost'), then accepts (ord > 0).
    CREATE OR REPLACE FUNCTION ${s}.accept_batch(
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
    DECLARE r record; a record; o record; v_seqscan text; v_all_fresh boolean; v_moved bigint;
      v_set text;
      v_replayed bigint[];   -- rows whose set-path nonce was refused (usually none)
      v_not_fresh bigint[];  -- rows the set insert did not claim (usually none)
      v_task_left bigint[]; v_nid_left bigint[]; v_left bigint[];
      v_re_sender text[]; v_re_nid text[];
      v_keyids text[] := '{}'; v_senders text[];
    BEGIN
      -- The done-mark is planned (once per session) without a sequential scan: built while
      -- the table was small, its plan read the whole table on every call as it grew. The
      -- row-by-row path gets the setting back (its cap read wants the scan). Assignments, not
      -- statements: PL/pgSQL evaluates a plain expression without the executor.
      v_seqscan := current_setting('enable_seqscan');
      v_set := set_config('plan_cache_mode', 'force_generic_plan', true);
      v_set := set_config('enable_seqscan', 'off', true);
      IF p_async THEN
        v_set := set_config('synchronous_commit', 'off', true);
      END IF;
      ${doneMarks(s)}
      IF cardinality(a_key) = 0 THEN
        RETURN;
      END IF;
      ${claimInserts(s)}
      ${notificationUpsert(s)}
      ${taskUpsert(s)}
      ${freshResults()}
      ${rowByRow(s)}
      ${counters(s)}
    END
    $fn$;`;
}
