/**
 * What the sidecar handed to the app, and how that went (issue 26, "Sidecar"): each
 * accepted event's publish outcome (published, or failed and why: the sender was answered
 * 503 and will retry), one row per (sender, idempotency key), with its verified body kept
 * so the operator can re-publish it to the app: same idempotency key, flagged as a
 * redelivery (`redelivery: true`, the `x-<brand>-redelivery` header of the forward and the
 * brokers), through the sidecar's own publisher. Each re-publish is audited.
 *
 * Bounded: a body over `maxBodyBytes` (default 256 KiB) is not kept (its outcome is; it
 * cannot be re-published: 409 `BODY_NOT_KEPT`); rows older than `retentionMs` (default 7
 * days) or beyond `maxRows` (default 100,000, oldest first) are deleted every minute. The
 * publish path only buffers (one INSERT per flush, every 500 ms or 200 rows); a lost flush
 * is logged and dropped, the pipeline never waits on it.
 */
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import { assertSchemaName, migrate, type Migration, type Pool } from '../../shared/infra/pg.js';
import type { Publisher, ReceivedEvent } from '../publish/types.js';
import { ConsoleActionFailure } from './errors.js';
import type { AuditEntry } from '../../shared/console/audit.js';

export const PUBLISHED_MIGRATIONS: Migration[] = [
  {
    id: '051_console_published',
    sql: (s) => `
      CREATE TABLE ${s}.console_published (
        id bigserial PRIMARY KEY,
        sender text NOT NULL,
        idempotency_key text NOT NULL,
        first_at timestamptz NOT NULL,
        last_at timestamptz NOT NULL,
        task_id text,
        status text,
        -- The event's other members (kind, format, flags, ids), to rebuild it.
        meta jsonb NOT NULL,
        body bytea,
        outcome text NOT NULL CHECK (outcome IN ('published', 'failed')),
        error text,
        publishes integer NOT NULL DEFAULT 1,
        republished_by text,
        UNIQUE (sender, idempotency_key)
      );
      CREATE INDEX console_published_last ON ${s}.console_published (last_at);
      CREATE TABLE ${s}.console_audit (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now(),
        operator text NOT NULL,
        via text NOT NULL,
        action text NOT NULL,
        target text NOT NULL,
        detail jsonb NOT NULL DEFAULT '{}'
      );
    `,
  },
];

export interface PublishedRow {
  id: string;
  sender: string;
  idempotencyKey: string;
  firstAt: string;
  lastAt: string;
  taskId: string | null;
  status: string | null;
  outcome: 'published' | 'failed';
  error: string | null;
  /** Publications so far (the sender's retries after a failure, and re-publishes). */
  publishes: number;
  republishedBy: string | null;
  /** Whether the body is kept (it can be re-published). */
  bodyKept: boolean;
}

export interface PublishedFilter {
  sender?: string;
  key?: string;
  outcome?: 'published' | 'failed';
  before?: string;
}

export interface RepublishResult {
  id: string;
  idempotencyKey: string;
  outcome: 'published' | 'failed';
  error: string | null;
}

/** A re-publish as the Audit page lists it. */
export type AuditRow = AuditEntry;

interface Outcome {
  event: ReceivedEvent;
  at: Date;
  ok: boolean;
  error: string | null;
}

export interface PublishedLogOptions {
  pool: Pool;
  schema?: string;
  logger?: Logger;
  maxBodyBytes?: number;
  retentionMs?: number;
  maxRows?: number;
  flushEveryMs?: number;
}

function metaOf(e: ReceivedEvent): Record<string, unknown> {
  return {
    kind: e.kind ?? 'task',
    notificationId: e.notificationId,
    operationId: e.operationId,
    taskType: e.taskType,
    timestamp: e.timestamp,
    format: e.format,
    stale: e.stale,
    reEmission: e.reEmission,
    terminal: e.terminal,
    auth: e.auth,
  };
}

const errorText = (err: unknown) =>
  (err instanceof Error ? err.message : String(err)).slice(0, 500);

export class PublishedLog {
  readonly schema: string;
  private readonly pool: Pool;
  private readonly logger: Logger;
  private readonly o: Required<
    Pick<PublishedLogOptions, 'maxBodyBytes' | 'retentionMs' | 'maxRows' | 'flushEveryMs'>
  >;
  private buffer: Outcome[] = [];
  private timer: NodeJS.Timeout | null = null;
  private pruner: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** The sidecar's own publisher, once `wrap` has seen it: what a re-publish goes through. */
  private inner: Publisher | null = null;

  constructor(o: PublishedLogOptions) {
    this.pool = o.pool;
    this.schema = assertSchemaName(o.schema ?? 'receiver');
    this.logger = o.logger ?? silentLogger;
    this.o = {
      maxBodyBytes: o.maxBodyBytes ?? 256 * 1024,
      retentionMs: o.retentionMs ?? 7 * 86_400_000,
      maxRows: o.maxRows ?? 100_000,
      flushEveryMs: o.flushEveryMs ?? 500,
    };
  }

  async start(): Promise<void> {
    await migrate(this.pool, this.schema, PUBLISHED_MIGRATIONS);
    this.pruner = setInterval(() => {
      this.prune().catch((err) => this.logger.warn({ err }, 'published log prune failed'));
    }, 60_000);
    this.pruner.unref();
  }

  /** The sidecar's publisher, each outcome recorded (a failure still throws: 503). */
  wrap(inner: Publisher): Publisher {
    this.inner = inner;
    return {
      publish: async (event) => {
        try {
          await inner.publish(event);
        } catch (err) {
          this.record({ event, at: new Date(), ok: false, error: errorText(err) });
          throw err;
        }
        this.record({ event, at: new Date(), ok: true, error: null });
      },
      ...(inner.close ? { close: () => inner.close!() } : {}),
    };
  }

  private record(o: Outcome): void {
    this.buffer.push(o);
    if (this.buffer.length >= 200) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.o.flushEveryMs);
      this.timer.unref();
    }
  }

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // One row per key in a statement (ON CONFLICT cannot touch a row twice): the last wins.
    const byKey = new Map<string, Outcome & { n: number }>();
    for (const r of this.buffer) {
      const k = `${r.event.sender}\u0000${r.event.idempotencyKey}`;
      byKey.set(k, { ...r, n: (byKey.get(k)?.n ?? 0) + 1 });
    }
    this.buffer = [];
    if (byKey.size === 0) return this.flushing;
    const rows = [...byKey.values()];
    this.flushing = this.flushing.then(() => this.write(rows));
    return this.flushing;
  }

  private async write(rows: Array<Outcome & { n: number }>): Promise<void> {
    const col = <T>(f: (r: Outcome & { n: number }) => T) => rows.map(f);
    const kept = (e: ReceivedEvent) => (e.body.length <= this.o.maxBodyBytes ? e.body : null);
    try {
      await this.pool.query(
        `INSERT INTO ${this.schema}.console_published AS p (sender, idempotency_key, first_at,
           last_at, task_id, status, meta, body, outcome, error, publishes)
         SELECT v.sender, v.key, v.at, v.at, v.task, v.status, v.meta::jsonb, v.body, v.outcome,
                v.error, v.n
           FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[],
                $6::text[], $7::bytea[], $8::text[], $9::text[], $10::int[])
             AS v(sender, key, at, task, status, meta, body, outcome, error, n)
         ON CONFLICT (sender, idempotency_key) DO UPDATE
           SET last_at = EXCLUDED.last_at, outcome = EXCLUDED.outcome, error = EXCLUDED.error,
               publishes = p.publishes + EXCLUDED.publishes,
               body = coalesce(EXCLUDED.body, p.body)`,
        [
          col((r) => r.event.sender.slice(0, 300)),
          col((r) => r.event.idempotencyKey.slice(0, 300)),
          col((r) => r.at),
          col((r) => r.event.taskId?.slice(0, 300) ?? null),
          col((r) => r.event.status?.slice(0, 100) ?? null),
          col((r) => JSON.stringify(metaOf(r.event))),
          col((r) => kept(r.event)),
          col((r) => (r.ok ? 'published' : 'failed')),
          col((r) => r.error),
          col((r) => r.n),
        ],
      );
    } catch (err) {
      this.logger.warn({ err, rows: rows.length }, 'published log batch not written');
    }
  }

  /** Newest first (by last publication), `before` an id cursor. */
  async list(f: PublishedFilter, limit = 100): Promise<PublishedRow[]> {
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (sql: string, v: unknown) => {
      values.push(v);
      where.push(sql.replace('?', `$${values.length}`));
    };
    if (f.sender) add('sender = ?', f.sender);
    if (f.key) add('idempotency_key = ?', f.key);
    if (f.outcome) add('outcome = ?', f.outcome);
    if (f.before) add('id < ?::bigint', f.before);
    values.push(limit);
    const { rows } = await this.pool.query(
      `SELECT id::text AS id, sender, idempotency_key, first_at, last_at, task_id, status,
              outcome, error, publishes, republished_by, body IS NOT NULL AS kept
         FROM ${this.schema}.console_published
        ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY console_published.id DESC LIMIT $${values.length}`,
      values,
    );
    return rows.map((r) => ({
      id: r.id,
      sender: r.sender,
      idempotencyKey: r.idempotency_key,
      firstAt: (r.first_at as Date).toISOString(),
      lastAt: (r.last_at as Date).toISOString(),
      taskId: r.task_id,
      status: r.status,
      outcome: r.outcome,
      error: r.error,
      publishes: r.publishes,
      republishedBy: r.republished_by,
      bodyKept: r.kept,
    }));
  }

  /**
   * Hands the event of row `id` to the app again: the same key and body, flagged as a
   * redelivery. The outcome is recorded on the row and audited, whichever it is.
   */
  async republish(
    id: string,
    who: { name: string; via: 'console' | 'api' | 'cli' },
  ): Promise<RepublishResult> {
    if (!/^\d{1,18}$/.test(id)) {
      throw new ConsoleActionFailure(404, 'NOT_FOUND', `no published event ${id.slice(0, 40)}`);
    }
    await this.flush();
    const { rows } = await this.pool.query(
      `SELECT sender, idempotency_key, task_id, status, meta, body
         FROM ${this.schema}.console_published WHERE id = $1::bigint`,
      [id],
    );
    const r = rows[0];
    if (!r) throw new ConsoleActionFailure(404, 'NOT_FOUND', `no published event ${id}`);
    if (!r.body) {
      throw new ConsoleActionFailure(
        409,
        'BODY_NOT_KEPT',
        `event ${id}'s body was over ${this.o.maxBodyBytes} bytes and was not kept: ask the sender to redeliver`,
      );
    }
    if (!this.inner) {
      throw new ConsoleActionFailure(503, 'NO_PUBLISHER', 'the sidecar is not publishing yet');
    }
    const event = rebuild(r);
    let error: string | null = null;
    try {
      await this.inner.publish(event);
    } catch (err) {
      error = errorText(err);
    }
    const outcome = error === null ? 'published' : 'failed';
    await this.pool.query(
      `WITH u AS (
         UPDATE ${this.schema}.console_published
            SET last_at = now(), outcome = $2, error = $3, publishes = publishes + 1,
                republished_by = $4
          WHERE id = $1::bigint)
       INSERT INTO ${this.schema}.console_audit (operator, via, action, target, detail)
       VALUES ($4, $5, 'republish', $6, $7)`,
      [
        id,
        outcome,
        error,
        who.name,
        who.via,
        `${r.sender} ${r.idempotency_key}`,
        JSON.stringify({ id, outcome, ...(error ? { error } : {}) }),
      ],
    );
    this.logger.info(
      { operator: who.name, via: who.via, action: 'republish', id, outcome },
      'receiver console: event re-published',
    );
    return { id, idempotencyKey: r.idempotency_key, outcome, error };
  }

  async audit(limit = 100): Promise<AuditRow[]> {
    const { rows } = await this.pool.query(
      `SELECT at, operator, via, action, target, detail FROM ${this.schema}.console_audit
        ORDER BY id DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ ...r, at: (r.at as Date).toISOString() }));
  }

  async prune(): Promise<number> {
    const old = await this.pool.query(
      `DELETE FROM ${this.schema}.console_published
        WHERE last_at < now() - $1::int * interval '1 millisecond'`,
      [this.o.retentionMs],
    );
    const over = await this.pool.query(
      `DELETE FROM ${this.schema}.console_published
        WHERE id <= (SELECT max(id) FROM ${this.schema}.console_published) - $1`,
      [this.o.maxRows],
    );
    return (old.rowCount ?? 0) + (over.rowCount ?? 0);
  }

  async close(): Promise<void> {
    if (this.pruner) clearInterval(this.pruner);
    await this.flush();
  }
}

/** The stored row as the event the publisher takes, flagged as a redelivery. */
function rebuild(r: Record<string, unknown>): ReceivedEvent {
  const m = r.meta as Record<string, unknown>;
  const body = r.body as Buffer;
  let payload: unknown = null;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    // Verified bytes that are not JSON cannot have been accepted; kept as bytes anyway.
  }
  return {
    sender: r.sender as string,
    idempotencyKey: r.idempotency_key as string,
    kind: m.kind as ReceivedEvent['kind'],
    notificationId: (m.notificationId as string | null) ?? null,
    taskId: (r.task_id as string | null) ?? null,
    operationId: (m.operationId as string | null) ?? null,
    taskType: (m.taskType as string | null) ?? null,
    status: (r.status as string | null) ?? null,
    timestamp: (m.timestamp as string | null) ?? null,
    format: m.format as 'mcp' | 'a2a',
    payload,
    body,
    stale: m.stale === true,
    reEmission: m.reEmission === true,
    terminal: m.terminal === true,
    redelivery: true,
    auth: m.auth as ReceivedEvent['auth'],
  };
}
