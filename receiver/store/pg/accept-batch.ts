/**
 * `accept_batch`, the delivery store's one statement per batch (supplement §5.2, §5.3, §2.9
 * step 13): the done-marks of finished publications, then for the batch's new deliveries
 * the nonce insert, the claim of (sender, idempotency_key) and the ordering/convergence
 * observation, then the replay and per-sender counters once.
 *
 * Why it is shaped this way (issue 23, PostgreSQL CPU per event):
 * - Set-based in the common case: one statement for the batch's new deliveries (the nonces,
 *   the new keys they let through, the claimed rows' notification_ids and task statuses;
 *   store_003, four statements before), one SELECT returning every fresh claim. Only what
 *   needs a row lock decision (a key already stored, a sender at its bound, a nonce near
 *   its cap, a task seen twice in the batch, a terminal or an older status) goes row by
 *   row, through `accept_one` / `task_observe`.
 * - Nothing in that statement for the rare cases: PostgreSQL sets up every node of a
 *   statement on every call, used or not (a quarter of the backend's CPU on small batches).
 *   It returns counts; a refused nonce, a row not claimed or a status not taken is worked
 *   out by a statement of its own only when a count says it happened. Duplicates in the
 *   batch are found with a window count, not a correlated count per row (quadratic).
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

/** The batch's rows as the claim statement reads them (once, materialised). */
const CLAIM_INPUT = `SELECT t.* FROM unnest(a_keyid, a_nonce, a_ttl, a_cap_check, a_sender, a_key,
          a_fp, a_owner, a_retention, a_bounded, a_nid, a_task_id, a_at, a_status, a_terminal)
          WITH ORDINALITY AS t(keyid, nonce, ttl, cap_check, sender, key, fp, owner, retention,
            bounded, nid, task_id, at, status, terminal, i)`;

const NONCED = 'keyid IS NOT NULL AND NOT cap_check';

/** The nonce insert: the first of a repeated nonce wins; `nok`, the rows whose nonce went in. */
function nonceCtes(s: string): string {
  return `nin AS (
        SELECT DISTINCT ON (keyid, nonce) keyid, nonce, ttl, i FROM input
        WHERE ${NONCED} ORDER BY keyid, nonce, i
      ), nins AS (
        INSERT INTO ${s}.replay_nonces AS rn (keyid, nonce, expires_at, shard)
        SELECT keyid, nonce, now() + make_interval(secs => ttl), p_shard FROM nin
        ORDER BY keyid, nonce
        ON CONFLICT (keyid, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
          WHERE rn.expires_at <= now()
        RETURNING rn.keyid, rn.nonce, (rn.xmax = 0) AS fresh
      ), nok AS (
        SELECT nin.i FROM nin JOIN nins ON nins.keyid = nin.keyid AND nins.nonce = nin.nonce
      ), `;
}

/** The new keys of senders under their bound (owners are unique per call); `claimed`, their rows. */
function keyCtes(s: string, nonces: boolean): string {
  const nonceOk = nonces
    ? 'AND (keyid IS NULL OR (NOT cap_check AND i IN (SELECT i FROM nok)))'
    : '';
  return `cand AS (
        SELECT sender, key, fp, owner, retention FROM input WHERE NOT bounded ${nonceOk}
      ), kins AS (
        INSERT INTO ${s}.idempotency_keys AS k
          (sender, idempotency_key, fingerprint, state, owner, generation, lease_until,
           expires_at)
        SELECT sender, key, fp, 'processing', owner, 1,
               clock_timestamp() + p_lease_ms * interval '1 millisecond',
               now() + retention * interval '1 second'
        FROM cand ORDER BY sender, key
        ON CONFLICT (sender, idempotency_key) DO NOTHING
        RETURNING k.owner, k.sender
      ), claimed AS MATERIALIZED (
        SELECT * FROM input WHERE owner IN (SELECT owner FROM kins)
      )`;
}

/**
 * The claimed rows' notification_ids unique in the batch: one upsert, whose updated rows
 * are re-emissions (an id first seen under another key). The newer non-terminal status of
 * a task seen once in the batch: one upsert (task_observe's own fast path). Both read the
 * claimed rows only, so they run after the key insert; everything else goes row by row.
 */
function observeCtes(s: string): string {
  return `, nid_in AS (
        SELECT sender, nid, key, retention, i,
               count(*) OVER (PARTITION BY sender, nid) AS dups
        FROM claimed WHERE nid IS NOT NULL
      ), nid_up AS (
        INSERT INTO ${s}.notification_ids AS n (sender, notification_id, first_key, expires_at)
        SELECT sender, nid, key, now() + retention * interval '1 second' FROM nid_in
        WHERE dups = 1 ORDER BY sender, nid
        ON CONFLICT (sender, notification_id) DO UPDATE SET emissions = n.emissions + 1
          WHERE n.first_key <> EXCLUDED.first_key
        RETURNING n.sender, n.notification_id, (n.xmax = 0) AS inserted
      ), task_in AS (
        SELECT sender, task_id, key, at, status, retention, terminal, i,
               i IN (SELECT i FROM claimed) AS fresh,
               count(*) OVER (PARTITION BY sender, task_id) AS dups
        FROM input WHERE task_id IS NOT NULL
      ), single AS (
        SELECT * FROM task_in WHERE fresh AND NOT terminal AND at IS NOT NULL AND dups = 1
      ), task_up AS (
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
      )`;
}

/**
 * The counters, in the claim statement itself when no row can go row by row (no
 * observation to make, every row claimed: the gate, read before either insert runs, waits
 * for the key insert), so they are still taken last, in key order. Otherwise `counters`.
 */
function counterCtes(s: string, nonces: boolean): string {
  const all = '(SELECT count(*) FROM kins) = cardinality(a_key)';
  const rc = `, rc AS (
        INSERT INTO ${s}.replay_counts AS c (keyid, shard, n)
        SELECT keyid, p_shard, count(*) FROM nins WHERE fresh AND ${all}
        GROUP BY keyid ORDER BY keyid
        ON CONFLICT (keyid, shard) DO UPDATE SET n = c.n + EXCLUDED.n
      )`;
  return `${nonces ? rc : ''}, sc AS (
        INSERT INTO ${s}.sender_key_counts AS c (sender, shard, n)
        SELECT sender, p_shard, count(*) FROM kins WHERE ${all}
        GROUP BY sender ORDER BY sender
        ON CONFLICT (sender, shard) DO UPDATE SET n = c.n + EXCLUDED.n
      )`;
}

/**
 * What the claim statement hands on, in the common batch's terms only (the executor sets up
 * every node of a statement on every call, used or not, so the rare cases are not in it):
 * the fresh nonces' keyids and the claimed keys' senders (for the counters); the rows whose
 * nonce went in (of how many offered) and the rows claimed; the observations left to
 * task_observe (a notification_id or a task seen twice, a terminal or timeless status) and
 * the re-emissions; the rows the task upsert was offered and how many it took.
 */
function claimOutputs(nonces: boolean, observe: boolean): string {
  const ids = `'{}'::bigint[]`;
  const texts = `'{}'::text[]`;
  const n = (expr: string, none: string) => (nonces ? expr : none);
  const o = (expr: string, none: string) => (observe ? expr : none);
  const agg = (what: string, from: string) => `(SELECT coalesce(array_agg(${what}), '{}') ${from})`;
  return `
      SELECT ${n(agg('keyid', 'FROM nins WHERE fresh'), texts)},
        ${n(agg('i', 'FROM nok'), ids)},
        ${n(`(SELECT count(*) FROM input WHERE ${NONCED})`, '0')},
        ${agg('sender', 'FROM kins')},
        ${agg('i', 'FROM claimed')},
        ${o(agg('i', 'FROM nid_in WHERE dups > 1'), ids)},
        ${o(agg('sender', 'FROM nid_up WHERE NOT inserted'), texts)},
        ${o(agg('notification_id', 'FROM nid_up WHERE NOT inserted'), texts)},
        ${o(agg('i', 'FROM task_in WHERE fresh AND (terminal OR at IS NULL OR dups > 1)'), ids)},
        ${o(agg('i', 'FROM single'), ids)},
        ${o('(SELECT count(*) FROM task_up)', '0')}
      INTO v_keyids, v_nok, v_nonced, v_senders, v_claimed, v_nid_left, v_re_sender, v_re_nid,
        v_task_left, v_single, v_taken;`;
}

/**
 * The rare cases, each only when the claim statement's counts say it happened: rows whose
 * nonce was refused (a replay, a nonce repeated in the batch), rows not claimed (a key
 * already stored, a sender at its bound, a nonce near its cap), task statuses the upsert did
 * not take (a terminal stored, an older status: the task's newest key is not theirs, and
 * the row is still locked by this transaction, so nothing changed it since).
 */
function claimLeftovers(s: string): string {
  return `
      v_replayed := '{}';
      IF cardinality(v_nok) < v_nonced THEN
        SELECT coalesce(array_agg(t.i), '{}') INTO v_replayed
        FROM unnest(a_keyid, a_cap_check) WITH ORDINALITY AS t(keyid, cap_check, i)
        WHERE t.keyid IS NOT NULL AND NOT t.cap_check AND NOT (t.i = ANY (v_nok));
      END IF;
      v_not_fresh := '{}';
      IF cardinality(v_claimed) < cardinality(a_key) THEN
        SELECT coalesce(array_agg(g), '{}') INTO v_not_fresh
        FROM generate_series(1, cardinality(a_key)) AS g WHERE NOT (g = ANY (v_claimed));
      END IF;
      IF v_taken < cardinality(v_single) THEN
        SELECT v_task_left || coalesce(array_agg(t.i), '{}') INTO v_task_left
        FROM unnest(a_sender, a_task_id, a_key) WITH ORDINALITY AS t(sender, task_id, key, i)
        JOIN ${s}.task_state ts ON ts.sender = t.sender AND ts.task_id = t.task_id
        WHERE t.i = ANY (v_single) AND ts.newest_key IS DISTINCT FROM t.key;
      END IF;
      v_all_fresh := cardinality(v_not_fresh) = 0;`;
}

/**
 * The batch's new deliveries in one statement (store_003; four before): the nonces that
 * need no cap read, the new keys they let through, the claimed rows' notification_ids and
 * task statuses. One executor start, one snapshot; the work per row is the same.
 */
function claimStatement(s: string): string {
  // Four variants, each planned when first run: without a colocated replay cache no row has
  // a nonce (and replay_nonces may not exist); a batch without notification_ids or tasks
  // (reports, list changes...) sets up no upsert for them.
  const statement = (nonces: boolean, observe: boolean) => `
      WITH input AS MATERIALIZED (${CLAIM_INPUT}
      ), ${nonces ? nonceCtes(s) : ''}${keyCtes(s, nonces)}${
        observe ? observeCtes(s) : counterCtes(s, nonces)
      }
      ${claimOutputs(nonces, observe)}`;
  return `
      v_observe := cardinality(array_remove(a_nid, NULL)) > 0
        OR cardinality(array_remove(a_task_id, NULL)) > 0;
      IF cardinality(array_remove(a_keyid, NULL)) > 0 THEN
        IF v_observe THEN ${statement(true, true)}
        ELSE ${statement(true, false)}
        END IF;
      ELSIF v_observe THEN ${statement(false, true)}
      ELSE ${statement(false, false)}
      END IF;
      IF NOT v_observe AND cardinality(v_claimed) = cardinality(a_key) THEN
        v_keyids := '{}'; v_senders := '{}'; -- counted in the statement
      END IF;
      ${claimLeftovers(s)}`;
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
      v_nok bigint[]; v_claimed bigint[]; v_single bigint[]; v_taken bigint;
      v_nonced bigint; v_observe boolean;
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
      ${claimStatement(s)}
      ${freshResults()}
      ${rowByRow(s)}
      ${counters(s)}
    END
    $fn$;`;
}
