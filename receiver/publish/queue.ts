/**
 * Publication into a durable PostgreSQL queue the app consumes (the app may be in any
 * language: the sidecar serves the same claim/ack contract over HTTP).
 *
 * Insert is keyed by (queue, sender, idempotency_key) with ON CONFLICT DO NOTHING, so a
 * publication repeated after an owner died leaves one row. Consumers claim a batch with a
 * visibility lease (`FOR UPDATE SKIP LOCKED`), process it, and ack each row with the token
 * of its claim; an unacked row becomes visible again when the lease ends (at-least-once to
 * the app, deduplicable on the key). Acked rows are kept until the retention purge so the
 * key stays bound.
 */
import { assertSchemaName, migrate, type Migration, type Pool } from '../../shared/infra/pg.js';
import { eventFlags, type Publisher, type ReceivedEvent } from './types.js';

export const QUEUE_MIGRATIONS: Migration[] = [
  {
    id: 'queue_001_items',
    sql: (s) => `
      CREATE TABLE ${s}.queue_items (
        id bigserial PRIMARY KEY,
        queue text NOT NULL,
        sender text NOT NULL,
        idempotency_key text NOT NULL,
        body bytea NOT NULL,
        flags jsonb NOT NULL,
        enqueued_at timestamptz NOT NULL DEFAULT now(),
        visible_at timestamptz NOT NULL DEFAULT now(),
        attempts integer NOT NULL DEFAULT 0,
        lease_token uuid,
        acked_at timestamptz,
        UNIQUE (queue, sender, idempotency_key)
      );
      CREATE INDEX queue_items_ready ON ${s}.queue_items (queue, visible_at, id)
        WHERE acked_at IS NULL;
    `,
  },
];

export const QUEUE_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

export interface QueueItem {
  id: string;
  /** Proves this claim; an ack with a stale token (lease ran out, re-claimed) is ignored. */
  token: string;
  sender: string;
  idempotencyKey: string;
  attempts: number;
  flags: Record<string, unknown>;
  body: Buffer;
  enqueuedAt: Date;
}

export interface DurableQueueOptions {
  pool: Pool;
  schema?: string;
  queue: string;
}

export class DurableQueue implements Publisher {
  readonly schema: string;
  readonly queue: string;
  private readonly pool: Pool;

  constructor(options: DurableQueueOptions) {
    if (!QUEUE_NAME.test(options.queue)) {
      throw new TypeError(`queue name must match ${QUEUE_NAME.source}`);
    }
    this.pool = options.pool;
    this.schema = assertSchemaName(options.schema ?? 'receiver');
    this.queue = options.queue;
  }

  async migrate(): Promise<void> {
    await migrate(this.pool, this.schema, QUEUE_MIGRATIONS);
  }

  async publish(e: ReceivedEvent): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.schema}.queue_items (queue, sender, idempotency_key, body, flags)
       VALUES ($1, $2, $3, $4, $5) ON CONFLICT (queue, sender, idempotency_key) DO NOTHING`,
      [this.queue, e.sender, e.idempotencyKey, e.body, JSON.stringify(eventFlags(e))],
    );
  }

  /** Claims up to `max` ready items for `leaseSeconds`, oldest first. */
  async claim(options: { max?: number; leaseSeconds?: number } = {}): Promise<QueueItem[]> {
    const max = Math.min(Math.max(1, Math.floor(options.max ?? 10)), 1000);
    const lease = Math.min(Math.max(1, Math.floor(options.leaseSeconds ?? 30)), 3600);
    const { rows } = await this.pool.query<{
      id: string;
      lease_token: string;
      sender: string;
      idempotency_key: string;
      attempts: number;
      flags: Record<string, unknown>;
      body: Buffer;
      enqueued_at: Date;
    }>(
      `UPDATE ${this.schema}.queue_items q
         SET visible_at = now() + $3 * interval '1 second', attempts = q.attempts + 1,
             lease_token = gen_random_uuid()
       WHERE q.id IN (
         SELECT id FROM ${this.schema}.queue_items
          WHERE queue = $1 AND acked_at IS NULL AND visible_at <= now()
          ORDER BY visible_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING q.id, q.lease_token, q.sender, q.idempotency_key, q.attempts, q.flags, q.body,
                 q.enqueued_at`,
      [this.queue, max, lease],
    );
    return rows
      .sort((a, b) => Number(a.id) - Number(b.id))
      .map((r) => ({
        id: String(r.id),
        token: r.lease_token,
        sender: r.sender,
        idempotencyKey: r.idempotency_key,
        attempts: r.attempts,
        flags: r.flags,
        body: r.body,
        enqueuedAt: r.enqueued_at,
      }));
  }

  /** Acknowledges claimed items; returns how many acks matched a live claim. */
  async ack(items: Array<{ id: string; token: string }>): Promise<number> {
    const valid = items.filter(
      (i) => /^[0-9]{1,19}$/.test(i.id) && /^[0-9a-f-]{36}$/i.test(i.token),
    );
    if (valid.length === 0) return 0;
    const { rowCount } = await this.pool.query(
      `UPDATE ${this.schema}.queue_items q SET acked_at = now(), lease_token = NULL
         FROM unnest($2::bigint[], $3::uuid[]) AS a(id, token)
       WHERE q.queue = $1 AND q.id = a.id AND q.lease_token = a.token AND q.acked_at IS NULL`,
      [this.queue, valid.map((i) => i.id), valid.map((i) => i.token)],
    );
    return rowCount ?? 0;
  }

  /** Items not yet acked (for monitoring and tests). */
  async depth(): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${this.schema}.queue_items WHERE queue = $1 AND acked_at IS NULL`,
      [this.queue],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Deletes acked items older than the retention (seconds, at least 24 h). */
  async purgeAcked(retentionSeconds = 86_400): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM ${this.schema}.queue_items
       WHERE queue = $1 AND acked_at IS NOT NULL AND enqueued_at < now() - $2 * interval '1 second'`,
      [this.queue, Math.max(86_400, retentionSeconds)],
    );
    return rowCount ?? 0;
  }
}
