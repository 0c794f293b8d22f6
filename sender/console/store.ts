/**
 * What the console reads: deliveries (outbox rows) by filter with keyset pagination, one
 * delivery with its attempts, per-origin health over the last hour and day, attempts that
 * landed since a time (live updates) and the audit trail. Every statement is backed by an
 * index of `migrations.ts` or the sender's own (the plan tests check which).
 */
import { assertSchemaName, type Pool } from '../../shared/infra/pg.js';
import { recordedUrl } from '../activity/activity-log.js';
import type { OutboxState } from '../outbox/outbox.js';
import type { AttemptExchange } from '../delivery/exchange.js';
import {
  DELIVERY_STATES,
  encodeCursor,
  originCandidates,
  payloadMatch,
  payloadProbes,
  textMatch,
  type Cursor,
  type DeliveryFilter,
} from './filters.js';
import type { AuditEntry } from '../../shared/console/audit.js';
import { originSql } from './migrations.js';
import { BUCKETS, histogramPercentile, HourlyRollup } from './rollup.js';

export interface DeliverySummary {
  id: string;
  idempotencyKey: string;
  state: OutboxState;
  /** The target URL without query, fragment or credentials. */
  url: string;
  origin: string;
  /** The task's type for a task event (`create_media_buy`), else the notification type. */
  eventType: string;
  /** As written: a task event's status (`working`), a report's kind (`scheduled`). */
  notificationType: string;
  channel: string;
  mediaBuyId: string | null;
  principalId: string | null;
  taskId: string | null;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  nextAttemptAt: string | null;
  completedAt: string | null;
}

export interface Attempt {
  attempt: number;
  status: string;
  firedAt: string;
  completedAt: string | null;
  httpStatus: number | null;
  responseTimeMs: number | null;
  error: string | null;
  requestedBy: string | null;
  /** The start of the receiver's answer, bounded and sanitised by the worker. */
  responseSnippet: string | null;
  /** The kid of the key that signed the attempt (RFC 9421); null for HMAC and Bearer. */
  keyId: string | null;
  /**
   * The attempt in full: request headers as sent (signature headers included), response
   * headers, timing (DNS, connect, TTFB, total in ms); null for attempts recorded before
   * migration 074, still pending, or by the activity log's fallback.
   */
  exchange: AttemptExchange | null;
}

export interface DeliveryDetail extends DeliverySummary {
  authMode: string;
  notificationId: string | null;
  sequenceNumber: number | null;
  subscriberId: string | null;
  firstAttemptAt: string | null;
  horizonSeconds: number;
  payloadSizeBytes: number;
  /** The frozen body as sent (UTF-8), and pretty-printed when it is JSON. */
  body: string;
  bodyPretty: string;
  attemptList: Attempt[];
}

export interface DeliveryPage {
  items: DeliverySummary[];
  /** Give it back as `cursor` for the next (older) page; null on the last page. */
  next: string | null;
}

export interface WindowStats {
  attempts: number;
  succeeded: number;
  /** succeeded / attempts, null without attempts. */
  successRate: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
}

export interface Destination {
  origin: string;
  hour: WindowStats;
  day: WindowStats;
  /** Pending deliveries to this origin. */
  backlog: number;
  /** When the last 429 answer lets the next attempt go (a pending row's next attempt), if in the future. */
  pausedUntil: string | null;
  /** Paused by an operator (console Pause): its deliveries wait until Resume. */
  paused: { at: string; operator: string } | null;
  lastError: { at: string; status: number | null; message: string | null } | null;
  /**
   * Hourly buckets over the last day, oldest first: attempts and successes. The day's
   * p50/p99 come from a histogram with 25 %-wide buckets (within ~12 %); the hour's are exact.
   */
  series: Array<{ hour: string; attempts: number; succeeded: number }>;
}

export interface LandedAttempt {
  deliveryId: string;
  attempt: number;
  status: string;
  httpStatus: number | null;
  at: string;
}

export type { AuditEntry } from '../../shared/console/audit.js';

/** Of `o` (outbox_event, the frozen event) and `d` (outbox_delivery, its state). */
const SUMMARY_COLUMNS = `o.id::text AS id, o.idempotency_key, d.state, o.target_url,
  ${originSql('o.target_url')} AS origin, o.notification_type, o.task_type, o.channel, o.media_buy_id,
  o.principal_id, o.task_id, d.attempts, d.last_status, d.last_error, o.created_at,
  (extract(epoch from o.created_at) * 1000000)::bigint::text AS created_us,
  d.next_attempt_at, d.completed_at`;

/** A LIKE pattern matching `v` literally (its \\, % and _ escaped). */
export function likeEscape(v: string): string {
  return v.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

function summary(r: Record<string, unknown>): DeliverySummary {
  return {
    id: r.id as string,
    idempotencyKey: r.idempotency_key as string,
    state: r.state as OutboxState,
    url: recordedUrl(r.target_url as string),
    origin: r.origin as string,
    eventType: (r.task_type ?? r.notification_type) as string,
    notificationType: r.notification_type as string,
    channel: r.channel as string,
    mediaBuyId: r.media_buy_id as string | null,
    principalId: r.principal_id as string | null,
    taskId: r.task_id as string | null,
    attempts: r.attempts as number,
    lastStatus: r.last_status as number | null,
    lastError: r.last_error as string | null,
    createdAt: (r.created_at as Date).toISOString(),
    nextAttemptAt: r.state === 'pending' ? iso(r.next_attempt_at as Date) : null,
    completedAt: iso(r.completed_at as Date | null),
  };
}

/** Which of the operator's search indexes are built (search-index.ts); none by default. */
export interface SearchIndexesBuilt {
  contains: boolean;
  payload: boolean;
}

/**
 * The list statement for a filter: each present field one equality or range on an
 * indexed expression, newest first, after the cursor. A contains or payload search is
 * written for its index when the operator has built it (`built`), else as a walk of the
 * list's order. Exported for the plan tests.
 */
export function listStatement(
  schema: string,
  f: DeliveryFilter,
  cursor: Cursor | null,
  limit: number,
  built: SearchIndexesBuilt = { contains: false, payload: false },
): { text: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  const add = (sql: (p: string) => string, v: unknown) => {
    values.push(v);
    where.push(sql(`$${values.length}`));
  };
  // A state other than delivered (the few rows the delivery table's partial indexes hold)
  // is read along outbox_delivery's indexes; anything else along the event's.
  const byState = f.status !== undefined && f.status !== 'delivered';
  const lead = byState ? 'd' : 'o';
  // A literal (the value is one of four checked words): partial indexes on the state then
  // match in generic plans too.
  if (f.status) {
    if (!DELIVERY_STATES.includes(f.status)) throw new Error(`unknown state ${f.status}`);
    where.push(`d.state = '${f.status}'`);
  }
  /** `col` exactly, by prefix (a text_pattern_ops index) or anywhere in it. */
  const match = (col: string, field: string, v: string, eq?: (p: string) => string) => {
    const m = textMatch(field, v);
    if (m.op === 'eq') add(eq ?? ((p) => `${col} = ${p}`), m.value);
    else if (m.op === 'prefix') add((p) => `${col} LIKE ${p}`, `${likeEscape(m.value)}%`);
    // LIKE '%v%' can use the contains index (search-index.ts) when v holds a trigram (three
    // letters or digits in a row); without one a trigram search reads the whole index.
    else if (built.contains && /[\p{L}\p{N}]{3}/u.test(m.value)) {
      add((p) => `${col} LIKE ${p}`, `%${likeEscape(m.value)}%`);
    } else add((p) => `strpos(${col}, ${p}) > 0`, m.value);
  };
  if (f.origin) {
    const col = byState ? 'd.origin' : originSql('o.target_url');
    if (f.origin.includes('*')) match(col, 'origin', f.origin);
    else {
      const all = originCandidates(f.origin);
      if (all.length === 1) add((p) => `${col} = ${p}`, all[0]);
      else add((p) => `${col} = ANY(${p}::text[])`, all);
    }
  }
  // A buy's own rows, or aggregated reports covering it (two indexes OR-ed in a bitmap).
  if (f.mediaBuyId) {
    match(
      'o.media_buy_id',
      'media_buy',
      f.mediaBuyId,
      (p) => `(o.media_buy_id = ${p} OR o.media_buy_ids @> ARRAY[${p}::text])`,
    );
  }
  if (f.principalId) match('o.principal_id', 'principal', f.principalId);
  if (f.taskId) match('o.task_id', 'task', f.taskId);
  // A task event's type is its task's (its notification type is its status).
  if (f.eventType) add((p) => `coalesce(o.task_type, o.notification_type) = ${p}`, f.eventType);
  if (f.idempotencyKey) add((p) => `o.idempotency_key = ${p}`, f.idempotencyKey);
  // A value inside the body. With the payload index (search-index.ts), containment probes
  // (payloadProbes) read it when the value is rare; when it is common, or without the
  // index, the list's order is walked, where a byte search for the value spares parsing the
  // bodies that cannot hold it. Either way `#>>` then keeps exactly the bodies whose path
  // holds the value as text. The body is read through console_body_json either way: a
  // body jsonb refuses (a \u0000 escape, a lone surrogate: the outbox stores them) is null
  // to it, where a cast would fail the whole search.
  if (f.payload) payloadConditions(schema, f.payload, built.payload, values, where);
  if (f.from) add((p) => `${lead}.created_at >= ${p}`, f.from);
  if (f.to) add((p) => `${lead}.created_at < ${p}`, f.to);
  if (cursor) {
    values.push(cursor.createdUs, cursor.id);
    const t = `$${values.length - 1}`;
    const id = `$${values.length}`;
    where.push(
      `(${lead}.created_at, ${lead}.id) < (timestamptz 'epoch' + ${t}::bigint * interval '1 microsecond', ${id}::bigint)`,
    );
  }
  // A literal, not a parameter: a generic plan then knows the page is a few rows and
  // fetches them by id, where a guessed 10 % of the table would scan it.
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`bad page size ${limit}`);
  const text = `SELECT ${SUMMARY_COLUMNS}
    FROM (SELECT ${lead}.id, ${lead}.created_at
            FROM ${keysFrom(schema, lead, f, byState)}
            ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
           ORDER BY ${lead}.created_at DESC, ${lead}.id DESC LIMIT ${limit + 1}) k
    JOIN ${schema}.outbox_event o ON o.id = k.id
    JOIN ${schema}.outbox_delivery d ON d.id = k.id
   ORDER BY k.created_at DESC, k.id DESC`;
  return { text, values };
}

/**
 * A payload search's conditions (`path=value`), pushed onto listStatement's `where` with
 * their parameters on `values`; see listStatement's comment on the payload.
 */
function payloadConditions(
  schema: string,
  payload: string,
  indexed: boolean,
  values: unknown[],
  where: string[],
): void {
  const m = payloadMatch(payload);
  const json = `${schema}.console_body_json(o.body)`;
  const param = (v: unknown) => (values.push(v), `$${values.length}`);
  const probes = indexed ? payloadProbes(m.path, m.value) : null;
  if (probes) where.push(`${json} @> ANY(${param(probes)}::jsonb[])`);
  // eslint-disable-next-line no-control-regex -- what JSON escapes: the bytes differ
  if (!/["\\\u0000-\u001f]/.test(m.value)) {
    where.push(`position(convert_to(${param(m.value)}, 'UTF8') in o.body) > 0`);
  }
  // In coalesce, so the planner does not take it for a rare equality (0.5 % of rows, its
  // default for an expression it has no statistics on): a common value beside a principal
  // then walks the principal's index in the list's order and stops at the page, where it
  // used to read and sort all of that principal's bodies.
  const path = param(m.path);
  where.push(`coalesce(${json} #>> ${path}::text[] = ${param(m.value)}, false)`);
}

/**
 * The tables a list's page of keys is found in (the inner query of listStatement): only
 * the side(s) its filter reads, so a filter on the event alone reads its index alone
 * (index-only: a principal's or a prefix's rows are sorted from the index, and only the
 * page's rows are read from the table, where all of them used to be). Joined, the two
 * sides are equal on created_at too (the delivery row's is a copy of its event's:
 * storage-migration.ts), so the planner may take either side's order: a principal's rows
 * or the stopped ones, whichever are fewer, where it used to walk every stopped row.
 */
function keysFrom(schema: string, lead: 'o' | 'd', f: DeliveryFilter, byState: boolean): string {
  const o = `${schema}.outbox_event o`;
  const d = `${schema}.outbox_delivery d`;
  // The same tests as listStatement's: a field present and not empty is a condition.
  const onEvent =
    (Boolean(f.origin) && !byState) ||
    [f.mediaBuyId, f.principalId, f.taskId, f.eventType, f.idempotencyKey, f.payload].some(Boolean);
  const onDelivery = Boolean(f.status);
  if (lead === 'd' && !onEvent) return d;
  if (lead === 'o' && !onDelivery) return o;
  // Equal on created_at too when a state other than delivered (a few rows, read along the
  // delivery's partial index) meets a filter on the event: the planner may then take
  // either side's order, and joins the stopped rows and a principal's by hash, reading
  // each set once from its index, where it walked every stopped row and fetched its event.
  // Not otherwise: PostgreSQL multiplies the two clauses' selectivities as if unrelated,
  // and so would think a common state or a time range rare and scan the delivery table.
  if (byState) return `${o} JOIN ${d} ON d.id = o.id AND d.created_at = o.created_at`;
  return `${o} JOIN ${d} ON d.id = o.id`;
}

/**
 * The last hour's exact figures per origin (index-only range read of about an hour of
 * attempts); the day's come from the hourly rollup (rollup.ts).
 */
export function lastHourStatement(schema: string): string {
  return `SELECT ${originSql('url')} AS origin, count(*)::int AS n,
      count(*) FILTER (WHERE status = 'success')::int AS ok,
      percentile_disc(0.5) WITHIN GROUP (ORDER BY response_time_ms) AS p50,
      percentile_disc(0.99) WITHIN GROUP (ORDER BY response_time_ms) AS p99
    FROM ${schema}.webhook_activity
    WHERE fired_at >= now() - interval '1 hour' AND status <> 'pending'
    GROUP BY 1`;
}

function stats(n: number, ok: number, p50: number | null, p99: number | null): WindowStats {
  return { attempts: n, succeeded: ok, successRate: n ? ok / n : null, p50Ms: p50, p99Ms: p99 };
}

export class ConsoleStore {
  readonly schema: string;
  private readonly rollup: HourlyRollup;
  constructor(
    readonly pool: Pool,
    schema: string,
  ) {
    this.schema = assertSchemaName(schema);
    this.rollup = new HourlyRollup(pool, this.schema);
  }

  async list(filter: DeliveryFilter, cursor: Cursor | null, limit = 50): Promise<DeliveryPage> {
    const { text, values } = listStatement(
      this.schema,
      filter,
      cursor,
      limit,
      await this.searchIndexesFor(filter),
    );
    const { rows } = await this.pool.query(text, values);
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      items: page.map(summary),
      next: more && last ? encodeCursor({ createdUs: last.created_us, id: last.id }) : null,
    };
  }

  /**
   * Which search indexes are built, asked of the catalog only when the filter searches by
   * contains or payload (most lists do not). An index an enable is still building counts:
   * its partitions built so far answer through it.
   */
  private async searchIndexesFor(f: DeliveryFilter): Promise<SearchIndexesBuilt> {
    const contains = [f.origin, f.mediaBuyId, f.principalId, f.taskId].some((v) =>
      v?.startsWith('*'),
    );
    if (!contains && !f.payload) return { contains: false, payload: false };
    const { rows } = await this.pool.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class WHERE relnamespace = $1::regnamespace
          AND relname IN ('outbox_console_contains', 'outbox_console_payload')`,
      [this.schema],
    );
    const names = new Set(rows.map((r) => r.name));
    return {
      contains: names.has('outbox_console_contains'),
      payload: names.has('outbox_console_payload'),
    };
  }

  async get(id: string): Promise<DeliveryDetail | null> {
    if (!/^\d{1,18}$/.test(id)) return null;
    const [row, attempts] = await Promise.all([
      this.pool.query(
        `SELECT ${SUMMARY_COLUMNS}, o.auth_mode, o.notification_id, o.sequence_number,
                o.subscriber_id, d.first_attempt_at, d.horizon_seconds, o.body
           FROM ${this.schema}.outbox_event o JOIN ${this.schema}.outbox_delivery d ON d.id = o.id
          WHERE o.id = $1 AND d.id = $1`,
        [id],
      ),
      this.attempts(id),
    ]);
    const r = row.rows[0];
    if (!r) return null;
    const body = (r.body as Buffer).toString('utf8');
    let bodyPretty = body;
    try {
      bodyPretty = JSON.stringify(JSON.parse(body), null, 2);
    } catch {
      // Not JSON (a custom payload): shown as sent.
    }
    return {
      ...summary(r),
      authMode: r.auth_mode,
      notificationId: r.notification_id,
      sequenceNumber: r.sequence_number,
      subscriberId: r.subscriber_id,
      // The delivery's own first attempt: a redelivery resets first_attempt_at (its retry
      // horizon starts afresh), the attempt log keeps when attempt 1 went out.
      firstAttemptAt: attempts[0]?.firedAt ?? iso(r.first_attempt_at),
      horizonSeconds: r.horizon_seconds,
      payloadSizeBytes: (r.body as Buffer).length,
      body,
      bodyPretty,
      attemptList: attempts,
    };
  }

  async attempts(id: string): Promise<Attempt[]> {
    const { rows } = await this.pool.query(
      `SELECT attempt, status, fired_at, completed_at, http_status_code, response_time_ms,
              error_message, requested_by, response_snippet, key_id, exchange
         FROM ${this.schema}.webhook_activity WHERE outbox_id = $1 ORDER BY attempt`,
      [id],
    );
    return rows.map((r) => ({
      attempt: r.attempt,
      status: r.status,
      firedAt: (r.fired_at as Date).toISOString(),
      completedAt: iso(r.completed_at),
      httpStatus: r.http_status_code,
      responseTimeMs: r.response_time_ms,
      error: r.error_message,
      requestedBy: r.requested_by,
      responseSnippet: r.response_snippet,
      keyId: r.key_id,
      exchange: r.exchange ?? null,
    }));
  }

  async destinations(): Promise<Destination[]> {
    const [hour, day, backlog, errors, paused] = await Promise.all([
      this.pool.query(lastHourStatement(this.schema)),
      this.rollup.day(),
      this.pool.query(
        `SELECT origin, count(*)::int AS n,
                max(next_attempt_at) FILTER (WHERE last_status = 429 AND next_attempt_at > now())
                  AS paused_until
           FROM ${this.schema}.outbox_delivery WHERE state = 'pending' GROUP BY 1`,
      ),
      // The newest failures, read backwards along the window index and stopped after 2000
      // (a day of them can be tens of thousands): each origin's newest among them.
      this.pool.query(
        `SELECT ${originSql('url')} AS origin, fired_at, http_status_code, error_message
           FROM ${this.schema}.webhook_activity
          WHERE fired_at >= now() - interval '1 day'
            AND status IN ('failed', 'timeout', 'connection_error')
          ORDER BY fired_at DESC LIMIT 2000`,
      ),
      this.pool.query(
        `SELECT origin, paused_at, operator FROM ${this.schema}.console_paused_origin`,
      ),
    ]);
    const by = new Map<string, Destination>();
    const get = (o: string): Destination => {
      let d = by.get(o);
      if (!d) {
        d = {
          origin: o,
          hour: stats(0, 0, null, null),
          day: stats(0, 0, null, null),
          backlog: 0,
          pausedUntil: null,
          paused: null,
          lastError: null,
          series: [],
        };
        by.set(o, d);
      }
      return d;
    };
    for (const r of hour.rows) get(r.origin).hour = stats(r.n, r.ok, r.p50, r.p99);
    const histograms = new Map<string, number[]>();
    const hours = new Map<string, Map<number, { attempts: number; succeeded: number }>>();
    for (const a of day) {
      const h = histograms.get(a.origin) ?? new Array<number>(BUCKETS).fill(0);
      a.latency.forEach((n, i) => (h[i] = h[i]! + n));
      histograms.set(a.origin, h);
      const series = hours.get(a.origin) ?? new Map();
      const t = a.hour.getTime();
      const cur = series.get(t) ?? { attempts: 0, succeeded: 0 };
      series.set(t, {
        attempts: cur.attempts + a.attempts,
        succeeded: cur.succeeded + a.succeeded,
      });
      hours.set(a.origin, series);
    }
    for (const [o, series] of hours) {
      const d = get(o);
      const list = [...series.entries()].sort((a, b) => a[0] - b[0]);
      const n = list.reduce((x, [, v]) => x + v.attempts, 0);
      const ok = list.reduce((x, [, v]) => x + v.succeeded, 0);
      const h = histograms.get(o)!;
      d.day = stats(n, ok, histogramPercentile(h, 0.5), histogramPercentile(h, 0.99));
      d.series = list.map(([t, v]) => ({ hour: new Date(t).toISOString(), ...v }));
    }
    for (const r of backlog.rows) {
      const d = get(r.origin);
      d.backlog = r.n;
      d.pausedUntil = iso(r.paused_until);
    }
    for (const r of paused.rows) {
      get(r.origin).paused = { at: (r.paused_at as Date).toISOString(), operator: r.operator };
    }
    for (const r of errors.rows) {
      if (get(r.origin).lastError) continue;
      get(r.origin).lastError = {
        at: (r.fired_at as Date).toISOString(),
        status: r.http_status_code,
        message: r.error_message,
      };
    }
    return [...by.values()].sort((a, b) => a.origin.localeCompare(b.origin));
  }

  /** Attempt records written or completed after `since` (live updates), oldest first. */
  async landedSince(since: Date, limit = 500): Promise<LandedAttempt[]> {
    const { rows } = await this.pool.query(
      `SELECT outbox_id::text AS id, attempt, status, http_status_code,
              coalesce(completed_at, fired_at) AS at
         FROM ${this.schema}.webhook_activity
        WHERE coalesce(completed_at, fired_at) > $1
        ORDER BY coalesce(completed_at, fired_at) LIMIT $2`,
      [since, limit],
    );
    return rows.map((r) => ({
      deliveryId: r.id,
      attempt: r.attempt,
      status: r.status,
      httpStatus: r.http_status_code,
      at: (r.at as Date).toISOString(),
    }));
  }

  async audit(limit = 50): Promise<AuditEntry[]> {
    const { rows } = await this.pool.query(
      `SELECT at, operator, via, action, target, detail FROM ${this.schema}.console_audit
        ORDER BY at DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({
      at: (r.at as Date).toISOString(),
      operator: r.operator,
      via: r.via,
      action: r.action,
      target: r.target,
      detail: r.detail,
    }));
  }
}
