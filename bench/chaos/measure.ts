/**
 * The chaos run's figures, from what the receiving end got and what the sender recorded:
 * lost, changed bodies, duplicates and their cause, sidecar 500s, recovery times, and the
 * lines the bench and the test print.
 */
import type { Pool } from '../../shared/infra/pg.js';
import type { ChaosOptions } from './run.js';

/** The sidecar's schema, on the run's PostgreSQL beside the sender's. */
export const RECEIVER_SCHEMA = 'chaos_receiver';

export interface Hit {
  at: number;
  body: Buffer;
}

export interface ChaosResult {
  events: number;
  enqueued: number;
  delivered: number;
  lost: number;
  changedBodies: number;
  duplicates: number;
  duplicateCauses: Record<string, number>;
  sidecar500s: number;
  faults: string[];
  /** ms from the end of the last fault to the last first-delivery; null if none after it. */
  lastFaultToLastDeliveryMs: number | null;
  p99DuringFaultsMs: number;
  maxGapMs: number;
  peakRssMb: Record<string, number>;
  /** Attempts by HTTP status (or failure kind). */
  answers: Record<string, number>;
  /** Where the first few lost events stand in the outbox. */
  lostRows: string[];
  /** The five slowest events, stage by stage. */
  slowest: string[];
  /** Processes that exited by themselves (not SIGKILLed by the run). */
  unexpectedExits: string[];
  /** webhook_activity against the attempts made (item 7 of issue 13). */
  records: RecordCheck;
}

/**
 * Attempts against their records once nothing is in flight: every claim (`attempts` of
 * the outbox rows) must have its record with an outcome, and every request the receiving
 * end got (an attempt that reached the wire) must be one of them.
 */
export interface RecordCheck {
  /** Attempts claimed (sum of the rows' attempt counters). */
  attempts: number;
  /** Records with an outcome. */
  recorded: number;
  /** Records still `pending`, and attempts still open (claimed, neither settled nor closed). */
  pending: number;
  open: number;
  /** Requests the receiving end got beyond their event's recorded attempts. */
  hitsWithoutRecord: number;
  /** Whether the counts were taken while nothing was in flight (else the last reading). */
  settled: boolean;
}

/**
 * Reads the record check at a moment with nothing in flight: no open attempt, no pending
 * record, and no request arriving while the tables were read (a claim precedes its
 * request, so an attempt started after the reading cannot be counted as a hit in it).
 * Waits up to `waitMs` for such a moment (dead workers' attempts are closed by the
 * reconciler once their lease lapsed).
 */
export async function checkRecords(
  pool: Pool,
  schema: string,
  hits: Map<string, Hit[]>,
  waitMs: number,
): Promise<RecordCheck> {
  const until = Date.now() + waitMs;
  for (;;) {
    const before = new Map([...hits].map(([k, h]) => [k, h.length]));
    let check: RecordCheck | null = null;
    try {
      const { rows } = await pool.query<{
        key: string;
        attempts: number;
        recorded: number;
        pending: number;
        open: boolean;
      }>(
        `SELECT o.idempotency_key AS key, o.attempts,
                (SELECT count(*) FROM ${schema}.webhook_activity a
                  WHERE a.outbox_id = o.id AND a.status <> 'pending')::int AS recorded,
                (SELECT count(*) FROM ${schema}.webhook_activity a
                  WHERE a.outbox_id = o.id AND a.status = 'pending')::int AS pending,
                o.attempt_started_at IS NOT NULL AND o.state = 'pending' AS open
           FROM ${schema}.outbox o`,
      );
      const c: RecordCheck = {
        attempts: 0,
        recorded: 0,
        pending: 0,
        open: 0,
        hitsWithoutRecord: 0,
        settled: false,
      };
      for (const r of rows) {
        c.attempts += r.attempts;
        c.recorded += r.recorded;
        c.pending += r.pending;
        if (r.open) c.open++;
        c.hitsWithoutRecord += Math.max(0, (hits.get(r.key)?.length ?? 0) - r.recorded);
      }
      const still = [...hits].every(([k, h]) => before.get(k) === h.length);
      c.settled = still && c.pending === 0 && c.open === 0;
      check = c;
    } catch {
      // The database is still coming back: read again.
    }
    if (check?.settled || (check && Date.now() > until)) return check;
    if (Date.now() > until + 10_000) throw new Error('chaos: the records could not be read');
    await new Promise((r) => setTimeout(r, 250));
  }
}

function pct(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/**
 * The receiver's dedup row of each key, for a lost event: whether its claim is still open
 * (state, owner generation, lease left or overdue), so a loss says whether the store held it.
 */
async function receiverClaims(
  pool: Pool,
  schema: string,
  keys: string[],
): Promise<Map<string, string>> {
  try {
    const { rows } = await pool.query<{ key: string; line: string }>(
      `SELECT idempotency_key AS key,
              state || ' gen ' || generation || ', lease ' ||
              round(extract(epoch from lease_until - clock_timestamp()))::text || ' s from now' ||
              ', accepted ' || round(extract(epoch from now() - accepted_at))::text || ' s ago' AS line
         FROM ${schema}.idempotency_keys WHERE idempotency_key = ANY($1)`,
      [keys],
    );
    return new Map(rows.map((r) => [r.key, r.line]));
  } catch (err) {
    return new Map(keys.map((k) => [k, `unread (${(err as Error).message})`]));
  }
}

export async function measure(
  o: ChaosOptions,
  sent: Map<string, { at: number; body: string }>,
  hits: Map<string, Hit[]>,
  pool: Pool,
  schema: string,
  times: {
    firstFaultAt: number;
    lastFaultEnd: number;
    lastHit: number;
    started: number;
    capacity: (from: number, to: number) => number;
  },
  records: RecordCheck,
): Promise<ChaosResult> {
  let lost = 0;
  let changed = 0;
  const dupKeys: string[] = [];
  const latencies: number[] = [];
  const firsts: number[] = [];
  for (const [key, s] of sent) {
    const h = hits.get(key);
    if (!h) {
      lost++;
      continue;
    }
    if (h.some((x) => !x.body.equals(Buffer.from(s.body)))) changed++;
    if (h.length > 1) dupKeys.push(key);
    firsts.push(h[0]!.at);
    // "During faults": from the first fault to 5 s after the last one ended.
    if (s.at >= times.firstFaultAt && s.at <= times.lastFaultEnd + 5000) {
      latencies.push(h[0]!.at - s.at);
    }
  }
  const unknown = [...hits.keys()].filter((k) => !sent.has(k));
  changed += unknown.length; // a body whose key we never sent was changed on the way
  // The longest stretch without a first delivery while some enqueued event was waiting.
  const order = [...sent.entries()].map(([k, s]) => ({ at: s.at, first: hits.get(k)?.[0]?.at }));
  const points = firsts.sort((a, b) => a - b);
  let maxGap = 0;
  let prev = times.started;
  for (const p of points) {
    const waiting = order.some((e) => e.at <= prev && (e.first === undefined || e.first > prev));
    if (waiting) maxGap = Math.max(maxGap, times.capacity(prev, p));
    prev = p;
  }
  // Why each duplicate happened, from the attempts recorded.
  const causes: Record<string, number> = {};
  if (dupKeys.length) {
    const { rows } = await pool.query<{ key: string; statuses: string[]; errors: string[] }>(
      `SELECT o.idempotency_key AS key, array_agg(a.status ORDER BY a.attempt) AS statuses,
              array_agg(coalesce(a.error_message, '') ORDER BY a.attempt) AS errors
         FROM ${schema}.outbox o LEFT JOIN ${schema}.webhook_activity a ON a.outbox_id = o.id
        WHERE o.idempotency_key = ANY($1) GROUP BY o.idempotency_key`,
      [dupKeys],
    );
    for (const r of rows) {
      const cause = r.errors.includes('attempt_interrupted')
        ? 'attempt interrupted (worker killed mid-attempt, sent again after its lease)'
        : r.statuses.filter((s) => s === 'success').length > 1
          ? 'success recorded twice (a settle lost)'
          : r.statuses.some((s) => s !== 'success')
            ? `retried after ${r.statuses.filter((s) => s !== 'success').join('/')} (answer lost)`
            : 'unrecorded first attempt (settle and record lost in a crash)';
      causes[cause] = (causes[cause] ?? 0) + 1;
    }
  }
  // What the receiving end answered, attempt by attempt, and where lost events stand.
  const { rows: answers } = await pool.query<{ k: string; n: string }>(
    `SELECT coalesce(http_status_code::text,
              CASE WHEN error_message = 'attempt_interrupted' THEN 'interrupted' ELSE status END)
              AS k, count(*) AS n
       FROM ${schema}.webhook_activity GROUP BY 1 ORDER BY 2 DESC`,
  );
  const lostKeys = [...sent.keys()].filter((k) => !hits.has(k));
  const { rows: lostRows } = await pool.query<{
    key: string;
    state: string;
    attempts: number;
    due: string;
    tries: { at: number; k: string }[] | null;
  }>(
    `SELECT o.idempotency_key AS key, o.state, o.attempts,
            (o.next_attempt_at - now())::text AS due,
            (SELECT json_agg(json_build_object('at', extract(epoch from a.fired_at) * 1000,
                      'k', coalesce(a.http_status_code::text, a.error_message, a.status))
                      ORDER BY a.attempt)
               FROM ${schema}.webhook_activity a WHERE a.outbox_id = o.id) AS tries
       FROM ${schema}.outbox o WHERE o.idempotency_key = ANY($1) LIMIT 5`,
    [lostKeys],
  );
  const claims = o.sidecar
    ? await receiverClaims(
        pool,
        RECEIVER_SCHEMA,
        lostRows.map((r) => r.key),
      )
    : new Map<string, string>();
  // The slowest events: when enqueued, committed, first attempted, delivered (s into the run).
  const slow = [...sent.entries()]
    .map(([k, v]) => ({ k, at: v.at, lat: (hits.get(k)?.[0]?.at ?? Infinity) - v.at }))
    .sort((a, b) => b.lat - a.lat)
    .slice(0, 5);
  const { rows: slowRows } = await pool.query<{
    key: string;
    created: number;
    first: number | null;
    attempts: number;
    tries: { at: number; k: string }[] | null;
  }>(
    `SELECT o.idempotency_key AS key, extract(epoch from o.created_at) * 1000 AS created,
            extract(epoch from o.first_attempt_at) * 1000 AS first, o.attempts,
            (SELECT json_agg(json_build_object('at', extract(epoch from a.fired_at) * 1000,
                      'k', coalesce(a.http_status_code::text, a.error_message, a.status))
                      ORDER BY a.attempt)
               FROM ${schema}.webhook_activity a WHERE a.outbox_id = o.id) AS tries
       FROM ${schema}.outbox o WHERE o.idempotency_key = ANY($1)`,
    [slow.map((x) => x.k)],
  );
  const rel = (ms: number | null) =>
    ms === null ? '-' : `${((ms - times.started) / 1000).toFixed(1)}s`;
  // Each attempt's answer and time, so a slow event says what it waited on.
  const tries = (list: { at: number; k: string }[] | null | undefined) =>
    list?.length ? `: ${list.map((a) => `${rel(a.at)} ${a.k}`).join(', ')}` : '';
  const slowest = slow.map((x) => {
    const r = slowRows.find((y) => y.key === x.k);
    return `enqueued ${rel(x.at)} committed ${rel(r ? Number(r.created) : null)} first attempt ${rel(r?.first ? Number(r.first) : null)} delivered ${rel(hits.get(x.k)?.[0]?.at ?? null)} (${r?.attempts ?? '?'} attempts${tries(r?.tries)})`;
  });
  let sidecar500s = 0;
  if (o.sidecar) {
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${schema}.webhook_activity WHERE http_status_code = 500`,
    );
    sidecar500s = Number(rows[0]!.n);
  }
  const lastFirst = points.at(-1) ?? 0;
  return {
    events: o.events,
    enqueued: sent.size,
    delivered: sent.size - lost,
    lost,
    changedBodies: changed,
    duplicates: Object.values(causes).reduce((a, b) => a + b, 0),
    duplicateCauses: causes,
    sidecar500s,
    faults: [],
    lastFaultToLastDeliveryMs:
      lastFirst >= times.lastFaultEnd ? lastFirst - times.lastFaultEnd : null,
    p99DuringFaultsMs: Math.round(pct(latencies, 99)),
    maxGapMs: maxGap,
    peakRssMb: {},
    answers: Object.fromEntries(answers.map((a) => [a.k, Number(a.n)])),
    unexpectedExits: [],
    records,
    slowest,
    lostRows: lostRows.map(
      (r) =>
        `${r.state} after ${r.attempts} attempts, next in ${r.due}${tries(r.tries)}` +
        (o.sidecar ? ` (receiver's claim: ${claims.get(r.key) ?? 'none'})` : ''),
    ),
  };
}

/** One line per figure, for the bench and the test's diagnostics. */
export function formatResult(name: string, r: ChaosResult): string {
  const causes = Object.entries(r.duplicateCauses)
    .map(([c, n]) => `${n} ${c}`)
    .join('; ');
  return [
    `${name}: ${r.events} events, ${r.enqueued} enqueued, ${r.delivered} delivered`,
    `  lost ${r.lost}, changed bodies ${r.changedBodies}, sidecar 500s ${r.sidecar500s}`,
    `  duplicates ${r.duplicates}${causes ? ` (${causes})` : ''}`,
    `  last fault -> last delivery ${r.lastFaultToLastDeliveryMs === null ? 'n/a (all delivered before the last fault ended)' : `${(r.lastFaultToLastDeliveryMs / 1000).toFixed(1)} s`} (issue 13 target: under 10 s with a receiver always answering 200)`,
    `  longest time without a delivery while events waited and a worker was serving ${(r.maxGapMs / 1000).toFixed(1)} s (target: under 5 s)`,
    `  p99 latency of events enqueued during faults (first fault to 5 s after the last) ${r.p99DuringFaultsMs} ms`,
    `  peak RSS ${Object.entries(r.peakRssMb)
      .map(([k, v]) => `${k} ${v} MB`)
      .join(', ')}`,
    `  attempts recorded with an outcome ${r.records.recorded} of ${r.records.attempts} claimed; requests received without a record ${r.records.hitsWithoutRecord}; still pending ${r.records.pending}, open ${r.records.open}${r.records.settled ? '' : ' (never quiet: last reading)'}`,
    `  answers per attempt: ${Object.entries(r.answers)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
    ...(r.lostRows.length ? [`  lost rows: ${r.lostRows.join('; ')}`] : []),
    `  slowest: ${r.slowest.join('; ')}`,
    ...(r.unexpectedExits.length
      ? [`  processes that exited by themselves: ${r.unexpectedExits.join(' || ')}`]
      : []),
    `  faults: ${r.faults.join(', ')}`,
  ].join('\n');
}
