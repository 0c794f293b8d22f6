/**
 * webhook_activity (supplement §4.4): one record per attempt, written in batches (one
 * statement per flush, whatever the number of rows), read per media buy and principal,
 * most recent first, purged after the retention period.
 *
 * An attempt is recorded `pending` when it starts and completed with its outcome when it
 * ends. Both go through the buffer: a start and its outcome that meet in one flush are
 * written once, as the completed record; an attempt still in flight at a flush is written
 * `pending` and completed by a later flush (an upsert on `(outbox_id, attempt)`). A
 * pending record whose attempt never reported (its worker died) is closed when the next
 * attempt of the same event starts.
 */
import { assertSchemaName, type Pool } from '../../shared/infra/pg.js';
import type { Logger } from '../../shared/infra/logger.js';
import { silentLogger } from '../../shared/infra/logger.js';
import { INTERRUPTED_ATTEMPT } from '../outbox/attempts.js';
import { DEFAULT_SENDER_SCHEMA } from '../schema.js';

export type ActivityStatus = 'success' | 'failed' | 'timeout' | 'connection_error' | 'pending';

/** One attempt as the worker reports it. */
export interface AttemptRecord {
  outboxId: string;
  mediaBuyId: string | null;
  /** The buys an aggregated report covers (its `mediaBuyId` is null); listed under each. */
  mediaBuyIds?: string[] | null;
  principalId: string | null;
  subscriberId: string | null;
  idempotencyKey: string;
  notificationId: string | null;
  notificationType: string;
  sequenceNumber: number | null;
  attempt: number;
  status: ActivityStatus;
  url: string;
  httpStatusCode: number | null;
  responseTimeMs: number | null;
  payloadSizeBytes: number;
  errorMessage: string | null;
  firedAt: Date;
  completedAt: Date | null;
}

/** An attempt as it starts: everything but the outcome. */
export type AttemptStart = Omit<
  AttemptRecord,
  'status' | 'completedAt' | 'httpStatusCode' | 'responseTimeMs' | 'errorMessage'
>;

/** The wire record (`webhook-activity-record.json`): nullable fields explicit null. */
export interface WebhookActivityRecord {
  idempotency_key: string;
  notification_id?: string;
  subscriber_id?: string;
  fired_at: string;
  completed_at: string | null;
  notification_type: string;
  sequence_number?: number;
  attempt: number;
  status: ActivityStatus;
  http_status_code: number | null;
  response_time_ms: number | null;
  payload_size_bytes: number;
  url: string;
  error_message: string | null;
}

/** error_message of an attempt recorded as interrupted (its worker never reported). */
export { INTERRUPTED_ATTEMPT } from '../outbox/attempts.js';

/** The URL as recorded: no query, no fragment (they may carry tokens). */
export function recordedUrl(url: string): string {
  try {
    const u = new URL(url);
    u.search = '';
    u.hash = '';
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url.split(/[?#]/, 1)[0] ?? '';
  }
}

/**
 * list()'s statement ($1 principal, $2 media buy, $3 limit). A record is the buy's when it
 * names the buy (`media_buy_id`) or covers it (`media_buy_ids`, aggregated reports): two
 * index lookups (btree, partial GIN) OR-ed in a bitmap, never a scan of the log.
 */
export function listSql(schema: string): string {
  return `SELECT idempotency_key, notification_id, subscriber_id, notification_type,
              sequence_number, attempt, status, url, http_status_code, response_time_ms,
              payload_size_bytes, error_message, fired_at, completed_at, id
         FROM ${schema}.webhook_activity
        WHERE principal_id = $1 AND (media_buy_id = $2 OR media_buy_ids @> ARRAY[$2::text])
       UNION ALL
       SELECT idempotency_key, notification_id, subscriber_id, notification_type,
              sequence_number, attempts + 1, 'pending', target_url, NULL, NULL,
              octet_length(body), NULL, next_attempt_at, NULL, 0
         FROM ${schema}.outbox o
        WHERE principal_id = $1 AND (media_buy_id = $2 OR media_buy_ids @> ARRAY[$2::text])
          AND state = 'pending'
          AND NOT EXISTS (SELECT 1 FROM ${schema}.webhook_activity a
                           WHERE a.outbox_id = o.id AND a.attempt = o.attempts
                             AND a.status = 'pending')
        ORDER BY fired_at DESC, id DESC LIMIT $3`;
}

export interface ActivityLogOptions {
  pool: Pool;
  schema?: string;
  /** Flush when this many rows are buffered; default 500. */
  maxBatch?: number;
  /** Flush at least this often; default 200 ms. */
  flushEveryMs?: number;
  /** Records kept for retry while the database is away; default 100,000. */
  maxBuffered?: number;
  logger?: Logger;
}

export class ActivityLog {
  private readonly pool: Pool;
  private readonly schema: string;
  private readonly maxBatch: number;
  private readonly flushEveryMs: number;
  private readonly logger: Logger;
  /** By `outboxId:attempt`: a start and its outcome in the same flush make one row. */
  private buffer = new Map<string, AttemptRecord>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private readonly maxBuffered: number;
  private failures = 0;
  private dropped = 0;

  constructor(options: ActivityLogOptions) {
    this.pool = options.pool;
    this.schema = assertSchemaName(options.schema ?? DEFAULT_SENDER_SCHEMA);
    this.maxBatch = options.maxBatch ?? 500;
    this.flushEveryMs = options.flushEveryMs ?? 200;
    this.maxBuffered = options.maxBuffered ?? 100_000;
    this.logger = options.logger ?? silentLogger;
  }

  /** An attempt starts: recorded `pending` (no outcome yet) unless its outcome comes first. */
  start(record: AttemptStart): void {
    const key = `${record.outboxId}:${record.attempt}`;
    if (this.buffer.has(key)) return;
    this.put(key, {
      ...record,
      status: 'pending',
      completedAt: null,
      httpStatusCode: null,
      responseTimeMs: null,
      errorMessage: null,
    });
  }

  /** An attempt's outcome (or any complete record): replaces its pending record. */
  add(record: AttemptRecord): void {
    this.put(`${record.outboxId}:${record.attempt}`, record);
  }

  /**
   * The attempt's outcome was written elsewhere (the outbox settle records it in its own
   * statement): its start, if not yet flushed, need not be written at all.
   */
  settled(outboxId: string, attempt: number): void {
    const key = `${outboxId}:${attempt}`;
    if (this.buffer.get(key)?.status === 'pending') this.buffer.delete(key);
  }

  /** Records waiting to be written (buffered, or kept after a failed flush). */
  get buffered(): number {
    return this.buffer.size;
  }

  private put(key: string, record: AttemptRecord): void {
    this.buffer.set(key, {
      ...record,
      url: recordedUrl(record.url),
      errorMessage: record.errorMessage?.slice(0, 500) ?? null,
    });
    // After a failed flush only the back-off timer flushes (no hammering a database away).
    if (this.buffer.size >= this.maxBatch && this.failures === 0) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushEveryMs);
      this.timer.unref();
    }
  }

  /** Writes what is buffered in one statement; flushes run one after another. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const rows = [...this.buffer.values()];
    this.buffer = new Map();
    if (rows.length === 0) return this.flushing;
    this.flushing = this.flushing.then(async () => {
      // A buffer that grew while the database was away goes in statements of a bounded size.
      for (let i = 0; i < rows.length; i += 5000) {
        if (!(await this.write(rows.slice(i, i + 5000)))) {
          this.requeue(rows.slice(i + 5000));
          return;
        }
      }
    });
    return this.flushing;
  }

  /** Writes one batch; false (and the batch back in the buffer) when the database refused. */
  private async write(rows: AttemptRecord[]): Promise<boolean> {
    const col = <T>(f: (r: AttemptRecord) => T) => rows.map(f);
    // Only a batch with a record covering several buys pays for their column: the others
    // run the statement as it was before it existed.
    const buys = rows.some((r) => r.mediaBuyIds);
    const params: unknown[] = [
      col((r) => r.outboxId),
      col((r) => r.mediaBuyId),
      col((r) => r.principalId),
      col((r) => r.subscriberId),
      col((r) => r.idempotencyKey),
      col((r) => r.notificationId),
      col((r) => r.notificationType),
      col((r) => r.sequenceNumber),
      col((r) => r.attempt),
      col((r) => r.status),
      col((r) => r.url),
      col((r) => r.httpStatusCode),
      col((r) => r.responseTimeMs),
      col((r) => r.payloadSizeBytes),
      col((r) => r.errorMessage),
      col((r) => r.firedAt),
      col((r) => r.completedAt),
    ];
    // One array per row: unnest cannot take ragged text[][], so JSON text (or null).
    if (buys) params.push(col((r) => (r.mediaBuyIds ? JSON.stringify(r.mediaBuyIds) : null)));
    try {
      // Each (outbox_id, attempt) appears once per statement (the buffer is keyed by it),
      // inserted in key order as the settles do (no lock-order deadlock with them).
      // A pending record never overwrites an outcome; an outcome replaces the pending
      // record. Starts of later attempts close what an interrupted earlier attempt left
      // pending (the CTE skips rows this statement also writes: one change per row).
      await this.pool.query(
        `WITH v AS (
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[],
             $6::text[], $7::text[], $8::int[], $9::int[], $10::text[], $11::text[], $12::int[],
             $13::int[], $14::int[], $15::text[], $16::timestamptz[], $17::timestamptz[]
             ${buys ? ', $18::text[]' : ''})
             AS v(outbox_id, media_buy_id, principal_id, subscriber_id, idempotency_key,
               notification_id, notification_type, sequence_number, attempt, status, url,
               http_status_code, response_time_ms, payload_size_bytes, error_message, fired_at,
               completed_at${buys ? ', buys' : ''})
         ), interrupted AS (
           UPDATE ${this.schema}.webhook_activity a
              SET status = 'timeout', error_message = '${INTERRUPTED_ATTEMPT}',
                  completed_at = v.fired_at
             FROM v
            WHERE v.attempt > 1 AND a.outbox_id = v.outbox_id AND a.outbox_id = ANY($1::bigint[])
              AND a.attempt < v.attempt
              AND a.status = 'pending'
              AND NOT EXISTS (SELECT 1 FROM v w
                               WHERE w.outbox_id = a.outbox_id AND w.attempt = a.attempt)
         )
         INSERT INTO ${this.schema}.webhook_activity AS a (outbox_id, media_buy_id,
           principal_id, subscriber_id, idempotency_key, notification_id, notification_type,
           sequence_number, attempt, status, url, http_status_code, response_time_ms,
           payload_size_bytes, error_message, fired_at, completed_at${buys ? ', media_buy_ids' : ''})
         ${
           buys
             ? `SELECT outbox_id, media_buy_id, principal_id, subscriber_id, idempotency_key,
                  notification_id, notification_type, sequence_number, attempt, status, url,
                  http_status_code, response_time_ms, payload_size_bytes, error_message,
                  fired_at, completed_at,
                  CASE WHEN buys IS NOT NULL
                    THEN ARRAY(SELECT jsonb_array_elements_text(buys::jsonb)) END
                FROM v ORDER BY outbox_id, attempt`
             : 'SELECT * FROM v ORDER BY outbox_id, attempt'
         }
         ON CONFLICT (outbox_id, attempt) DO UPDATE
           SET status = EXCLUDED.status, http_status_code = EXCLUDED.http_status_code,
               response_time_ms = EXCLUDED.response_time_ms,
               error_message = EXCLUDED.error_message, completed_at = EXCLUDED.completed_at
           WHERE EXCLUDED.status <> 'pending'`,
        params,
      );
      this.failures = 0;
      return true;
    } catch (err) {
      // Deliveries never wait on the log; the batch goes back into the buffer (behind
      // anything newer for the same attempt) and is written by a later flush, after a
      // back-off while the database is away, up to `maxBuffered` records.
      this.failures++;
      this.requeue(rows);
      this.logger.warn(
        { err, rows: rows.length, buffered: this.buffer.size },
        'webhook_activity batch not written; will retry',
      );
      if (!this.timer && this.buffer.size > 0) {
        const delay = Math.min(this.flushEveryMs * 2 ** this.failures, 5000);
        this.timer = setTimeout(() => void this.flush(), delay);
        this.timer.unref();
      }
      return false;
    }
  }

  private requeue(rows: AttemptRecord[]): void {
    for (const r of rows) {
      const key = `${r.outboxId}:${r.attempt}`;
      const newer = this.buffer.get(key);
      // A newer outcome wins; a newer pending start never hides an older outcome.
      if (newer && (newer.status !== 'pending' || r.status === 'pending')) continue;
      if (!newer && this.buffer.size >= this.maxBuffered) {
        this.dropped++;
        continue;
      }
      this.buffer.set(key, r);
    }
    if (this.dropped > 0) {
      this.logger.error(
        { dropped: this.dropped, maxBuffered: this.maxBuffered },
        'webhook_activity buffer full: records dropped',
      );
      this.dropped = 0;
    }
  }

  /**
   * Most recent first; `limit` 1-200, default 50. An attempt in flight is its `pending`
   * record; an event waiting for its next attempt shows as one `pending` record too
   * (attempt = the coming one, fired_at = when it is due, completed_at null), next to the
   * records of its past attempts.
   */
  async list(query: {
    principalId: string;
    mediaBuyId: string;
    limit?: number;
  }): Promise<WebhookActivityRecord[]> {
    const limit = query.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
      throw new RangeError('webhook_activity_limit must be an integer from 1 to 200');
    }
    const { rows } = await this.pool.query(listSql(this.schema), [
      query.principalId,
      query.mediaBuyId,
      limit,
    ]);
    return rows.map((r) => {
      const rec: WebhookActivityRecord = {
        idempotency_key: r.idempotency_key,
        fired_at: (r.fired_at as Date).toISOString(),
        completed_at: r.completed_at ? (r.completed_at as Date).toISOString() : null,
        notification_type: r.notification_type,
        attempt: r.attempt,
        status: r.status,
        http_status_code: r.http_status_code,
        response_time_ms: r.response_time_ms,
        payload_size_bytes: r.payload_size_bytes,
        url: recordedUrl(r.url),
        error_message: r.error_message,
      };
      if (r.notification_id !== null) rec.notification_id = r.notification_id;
      if (r.subscriber_id !== null) rec.subscriber_id = r.subscriber_id;
      if (r.sequence_number !== null) rec.sequence_number = r.sequence_number;
      return rec;
    });
  }

  async close(): Promise<void> {
    await this.flush();
  }
}
