/**
 * The sidecar console's event log: every answered delivery (accepted, duplicate, refused
 * and why), in the receiver's schema. Cheap on the hot path: `record` only buffers; one
 * INSERT per flush (every 500 ms or 500 rows). Bounded: the oldest rows beyond `maxRows`
 * (default 1,000,000) are deleted every minute (a primary-key range). A lost flush (database
 * away) is logged and dropped: the log is for looking, the pipeline never waits on it.
 */
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import { assertSchemaName, migrate, type Migration, type Pool } from '../../shared/infra/pg.js';
import type { DeliveryObservation } from '../pipeline/observation.js';

export const RECEIVER_CONSOLE_MIGRATIONS: Migration[] = [
  {
    id: '050_console_events',
    sql: (s) => `
      CREATE TABLE ${s}.console_events (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL,
        http_status integer NOT NULL,
        code text NOT NULL,
        sender text,
        keyid text,
        task_id text,
        event_status text,
        idempotency_key text
      );
      CREATE INDEX console_events_code ON ${s}.console_events (code, id DESC);
      CREATE INDEX console_events_sender ON ${s}.console_events (sender, id DESC);
      CREATE INDEX console_events_key ON ${s}.console_events (idempotency_key);
      -- Everything but plain acceptances, by time: what the rejection groups read.
      CREATE INDEX console_events_unusual ON ${s}.console_events (at)
        INCLUDE (code, sender, keyid, http_status) WHERE code <> 'published';
    `,
  },
];

export interface EventLogOptions {
  pool: Pool;
  schema?: string;
  maxRows?: number;
  flushEveryMs?: number;
  logger?: Logger;
}

export class ReceiverEventLog {
  readonly schema: string;
  private readonly pool: Pool;
  private readonly logger: Logger;
  private buffer: DeliveryObservation[] = [];
  private timer: NodeJS.Timeout | null = null;
  private pruner: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private readonly maxRows: number;
  private readonly flushEveryMs: number;

  constructor(o: EventLogOptions) {
    this.pool = o.pool;
    this.schema = assertSchemaName(o.schema ?? 'receiver');
    this.logger = o.logger ?? silentLogger;
    this.maxRows = o.maxRows ?? 1_000_000;
    this.flushEveryMs = o.flushEveryMs ?? 500;
  }

  async start(): Promise<void> {
    await migrate(this.pool, this.schema, RECEIVER_CONSOLE_MIGRATIONS);
    this.pruner = setInterval(() => {
      this.prune().catch((err) => this.logger.warn({ err }, 'console event log prune failed'));
    }, 60_000);
    this.pruner.unref();
  }

  /** The receiver's `observe` hook: buffers only. */
  readonly record = (o: DeliveryObservation): void => {
    this.buffer.push(o);
    if (this.buffer.length >= 500) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushEveryMs);
      this.timer.unref();
    }
  };

  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const rows = this.buffer;
    this.buffer = [];
    if (rows.length === 0) return this.flushing;
    this.flushing = this.flushing.then(() => this.write(rows));
    return this.flushing;
  }

  private async write(rows: DeliveryObservation[]): Promise<void> {
    const col = <T>(f: (r: DeliveryObservation) => T) => rows.map(f);
    try {
      await this.pool.query(
        `INSERT INTO ${this.schema}.console_events (at, http_status, code, sender, keyid,
           task_id, event_status, idempotency_key)
         SELECT * FROM unnest($1::timestamptz[], $2::int[], $3::text[], $4::text[], $5::text[],
           $6::text[], $7::text[], $8::text[])`,
        [
          col((r) => new Date(r.at)),
          col((r) => r.httpStatus),
          col((r) => r.code.slice(0, 100)),
          col((r) => r.sender),
          col((r) => r.keyid?.slice(0, 200) ?? null),
          col((r) => r.taskId?.slice(0, 200) ?? null),
          col((r) => r.eventStatus),
          col((r) => r.idempotencyKey?.slice(0, 300) ?? null),
        ],
      );
    } catch (err) {
      this.logger.warn({ err, rows: rows.length }, 'console event log batch not written');
    }
  }

  async prune(): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM ${this.schema}.console_events
        WHERE id <= (SELECT max(id) FROM ${this.schema}.console_events) - $1`,
      [this.maxRows],
    );
    return rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.pruner) clearInterval(this.pruner);
    await this.flush();
  }
}
