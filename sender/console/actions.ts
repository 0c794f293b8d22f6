/**
 * The operator's two actions. Both put finished outbox rows back to `pending` (same key,
 * same frozen bytes; the worker signs each attempt afresh), write the coming attempt's
 * `pending` record into webhook_activity with `requested_by` (the worker completes that
 * record in place when the attempt ends), and audit the action, in one transaction; then
 * dispatch the rows. A dispatch Redis loses is picked up by the reconciler.
 */
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import { assertSchemaName, withTransaction, type Pool } from '../../shared/infra/pg.js';
import type { DeliveryQueue } from '../delivery/queue.js';
import { SvcError } from '../../shared/errors/base.js';
import { newIdempotencyKey } from '../outbox/keys.js';
import { Outbox } from '../outbox/outbox.js';
import { originCandidates } from './filters.js';
import { originSql } from './migrations.js';

/** Who acts, and through what (`console`, `api`, `cli`). */
export interface Operator {
  name: string;
  via: 'console' | 'api' | 'cli';
}

export class ConsoleActionError extends SvcError {
  static override readonly code = 'ERR_CONSOLE_ACTION';

  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(message, { code });
    this.name = 'ConsoleActionError';
  }
}

export interface RedeliverResult {
  id: string;
  attempt: number;
}

export interface RecoverResult {
  origin: string;
  since: string;
  recovered: number;
  /** True when more rows matched than one call takes (`limit`): run it again. */
  more: boolean;
}

export interface RecoverPreview {
  origin: string;
  since: string;
  /** Stopped or expired deliveries a recover would send again (all calls together). */
  count: number;
  /** What one call takes at most: `ceil(count / perCall)` calls recover them all. */
  perCall: number;
}

export interface PauseResult {
  origin: string;
  paused: boolean;
  /** Deliveries waiting for the destination now. */
  pending: number;
}

export interface TestEventResult {
  id: string;
  origin: string;
  url: string;
  idempotencyKey: string;
}

/** One entry of the console's audit log (every action writes one); its id. */
export async function auditAction(
  client: { query: Pool['query'] },
  schema: string,
  who: Operator,
  action: string,
  target: string,
  detail: Record<string, unknown>,
): Promise<string> {
  const { rows } = await client.query(
    `INSERT INTO ${schema}.console_audit (operator, via, action, target, detail)
     VALUES ($1, $2, $3, $4, $5) RETURNING id::text AS id`,
    [who.name, who.via, action, target, JSON.stringify(detail)],
  );
  return rows[0].id as string;
}

/** Rows of a resumed destination woken per query (`ConsoleActions.wake`). */
const WAKE_PAGE = 2000;
/** The second wake pass: after any worker's confirming read of the paused set. */
const WAKE_AGAIN_MS = 300;

/** One recover call's bound: a bulk redeliver is resumable in chunks of this many. */
export const RECOVER_PER_CALL = 10_000;
/** Rows per transaction within a recover call (live delivery runs in between). */
const RECOVER_CHUNK = 1_000;
/** The pause between a recover's chunks. */
const RECOVER_BREATH_MS = 25;

/** Rows back to pending, and the pending record of each one's coming attempt. */
function reopen(schema: string, pick: string): string {
  return `WITH picked AS (${pick}),
    d AS (
      UPDATE ${schema}.outbox_delivery o
         SET state = 'pending', next_attempt_at = now(), due_at = now(), first_attempt_at = NULL,
             completed_at = NULL
        FROM picked WHERE o.id = picked.id AND o.state <> 'pending'
      RETURNING o.id, o.attempts
    ), r AS (
      SELECT e.*, d.attempts FROM d JOIN ${schema}.outbox_event e ON e.id = d.id
    ), a AS (
      INSERT INTO ${schema}.webhook_activity (outbox_id, media_buy_id, media_buy_ids,
        principal_id, subscriber_id, idempotency_key, notification_id, notification_type,
        sequence_number, attempt, status, url, payload_size_bytes, fired_at, requested_by)
      SELECT id, media_buy_id, media_buy_ids, principal_id, subscriber_id, idempotency_key,
             notification_id, notification_type, sequence_number, attempts + 1, 'pending',
             split_part(split_part(target_url, '?', 1), '#', 1), octet_length(body), now(),
             $REQUESTED_BY
        FROM r
      ON CONFLICT (outbox_id, attempt) DO UPDATE SET requested_by = EXCLUDED.requested_by
    )
    SELECT id::text AS id, target_url, attempts + 1 AS attempt FROM r`;
}

/** As the worker sees it (URL.origin: default port dropped), which pauses compare with. */
function urlOrigin(o: string): string {
  return new URL(o).origin.toLowerCase();
}

/** The URL without query or fragment (a query may carry a token). */
function recordedUrlOf(u: string): string {
  return u.split('?')[0]!.split('#')[0]!;
}

export class ConsoleActions {
  private readonly schema: string;
  private readonly logger: Logger;
  /** Rows per transaction of a recover (RECOVER_CHUNK; the tests make it small). */
  private readonly recoverChunk: number;

  constructor(
    private readonly pool: Pool,
    private readonly queue: DeliveryQueue,
    schema: string,
    logger?: Logger,
    options: { recoverChunk?: number } = {},
  ) {
    this.schema = assertSchemaName(schema);
    this.logger = logger ?? silentLogger;
    this.recoverChunk = options.recoverChunk ?? RECOVER_CHUNK;
  }

  /** One delivery again: delivered, stopped or expired. A pending one is already on its way. */
  async redeliver(id: string, who: Operator): Promise<RedeliverResult> {
    if (!/^\d{1,18}$/.test(id)) throw new ConsoleActionError(404, 'NOT_FOUND', 'no such delivery');
    const out = await withTransaction(this.pool, async (client) => {
      const cur = await client.query(
        `SELECT state, next_attempt_at FROM ${this.schema}.outbox_delivery WHERE id = $1
          FOR UPDATE`,
        [id],
      );
      const row = cur.rows[0];
      if (!row) throw new ConsoleActionError(404, 'NOT_FOUND', `no delivery ${id}`);
      if (row.state === 'pending') {
        throw new ConsoleActionError(
          409,
          'ALREADY_PENDING',
          `delivery ${id} is pending: its next attempt is due ${(row.next_attempt_at as Date).toISOString()}`,
        );
      }
      const { rows } = await client.query(
        reopen(this.schema, `SELECT $1::bigint AS id`).replace('$REQUESTED_BY', '$2'),
        [id, who.name],
      );
      await this.audit(client, who, 'redeliver', id, { previous_state: row.state });
      return rows[0] as { id: string; target_url: string; attempt: number };
    });
    await this.dispatch([out]);
    this.logger.info(
      { operator: who.name, via: who.via, action: 'redeliver', delivery: id, attempt: out.attempt },
      'console: delivery redelivered',
    );
    return { id, attempt: out.attempt };
  }

  /**
   * Every stopped or expired delivery to `origin` created since `since`, oldest first, at
   * most `limit` per call, in transactions of `RECOVER_CHUNK` rows: each re-opens its rows,
   * writes their pending attempt records and brings the call's one audit row up to date
   * (written by the first), then its rows are dispatched as batch jobs of 50 (one Redis
   * job per 50 rows: the worker takes them like any batch). Live delivery runs between the
   * chunks instead of waiting behind one 10,000-row transaction and 10,000 jobs (issue
   * 26's bench: see README "Bulk redeliver and live delivery"). A call cut short has
   * committed whole chunks, each audited: running it again resumes.
   */
  async recover(
    origin: string,
    since: Date,
    who: Operator,
    limit = RECOVER_PER_CALL,
  ): Promise<RecoverResult> {
    // outbox_delivery's origin is the event's target origin as the console spells it.
    const match = `origin = ANY($1::text[]) AND state IN ('stopped', 'expired')
      AND created_at >= $2`;
    const origins = originCandidates(origin);
    let recovered = 0;
    let more = false;
    let auditId: string | null = null;
    while (recovered < limit) {
      const take = Math.min(this.recoverChunk, limit - recovered);
      const chunk = await withTransaction(this.pool, async (client) => {
        const pick = `SELECT id FROM ${this.schema}.outbox_delivery WHERE ${match}
           ORDER BY created_at, id LIMIT $3 FOR UPDATE`;
        const { rows } = await client.query(
          reopen(this.schema, pick).replace('$REQUESTED_BY', '$4'),
          [origins, since, take, who.name],
        );
        const rest = await client.query(
          `SELECT EXISTS (SELECT 1 FROM ${this.schema}.outbox_delivery WHERE ${match}) AS more`,
          [origins, since],
        );
        const detail = { since: since.toISOString(), recovered: recovered + rows.length };
        if (auditId === null) {
          auditId = await this.audit(client, who, 'recover', origin, detail);
        } else {
          await client.query(
            `UPDATE ${this.schema}.console_audit SET detail = $2 WHERE id = $1::bigint`,
            [auditId, JSON.stringify(detail)],
          );
        }
        return {
          rows: rows as Array<{ id: string; target_url: string; attempt: number }>,
          more: rest.rows[0].more as boolean,
        };
      });
      await this.dispatchMany(chunk.rows);
      recovered += chunk.rows.length;
      more = chunk.more;
      if (!more || chunk.rows.length < take) break;
      // Let the live work queued meanwhile (claims, settles) have the database first: a
      // short breath per chunk (10 chunks: a quarter of a second a call).
      await new Promise((r) => setTimeout(r, RECOVER_BREATH_MS));
    }
    this.logger.info(
      {
        operator: who.name,
        via: who.via,
        action: 'recover',
        origin,
        since: since.toISOString(),
        recovered,
      },
      'console: origin recovered',
    );
    return { origin, since: since.toISOString(), recovered, more };
  }

  /** How many deliveries `recover(origin, since)` would send again: the confirmation's count. */
  async recoverPreview(origin: string, since: Date): Promise<RecoverPreview> {
    const { rows } = await this.pool.query(
      `SELECT count(*)::int AS n FROM ${this.schema}.outbox_delivery
        WHERE origin = ANY($1::text[]) AND state IN ('stopped', 'expired') AND created_at >= $2`,
      [originCandidates(origin), since],
    );
    return { origin, since: since.toISOString(), count: rows[0].n, perCall: RECOVER_PER_CALL };
  }

  /**
   * Pauses a destination: the workers stop claiming its rows (they wait, nothing is failed
   * or dropped; sender/delivery/paused-origins.ts) until `resume`. `host:port` pauses both
   * schemes.
   */
  async pause(origin: string, who: Operator): Promise<PauseResult> {
    const origins = originCandidates(origin).map(urlOrigin);
    return withTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `INSERT INTO ${this.schema}.console_paused_origin (origin, operator)
           SELECT unnest($1::text[]), $2 ON CONFLICT (origin) DO NOTHING`,
        [origins, who.name],
      );
      if (!rowCount) {
        throw new ConsoleActionError(409, 'ALREADY_PAUSED', `${origin} is already paused`);
      }
      const pending = await this.pendingOf(client, origins);
      await this.audit(client, who, 'pause', origin, { pending });
      return { origin, paused: true, pending };
    });
  }

  /**
   * Resumes a paused destination. Its waiting rows' retry horizons are moved on by the
   * pause's length (the pause must not expire them), and once that commits their jobs,
   * put back by the workers for the recheck period, are promoted: they go now, not at
   * their next recheck (`wake`).
   */
  async resume(origin: string, who: Operator): Promise<PauseResult> {
    const origins = originCandidates(origin).map(urlOrigin);
    const result = await withTransaction(this.pool, async (client) => {
      const { rows } = await client.query(
        `DELETE FROM ${this.schema}.console_paused_origin WHERE origin = ANY($1::text[])
          RETURNING paused_at`,
        [origins],
      );
      if (rows.length === 0) {
        throw new ConsoleActionError(409, 'NOT_PAUSED', `${origin} is not paused`);
      }
      const since = rows[0].paused_at as Date;
      await client.query(
        `UPDATE ${this.schema}.outbox_delivery
            SET first_attempt_at = first_attempt_at + (now() - $2::timestamptz)
          WHERE origin = ANY($1::text[]) AND state = 'pending' AND first_attempt_at IS NOT NULL`,
        [origins.map((o) => o.toLowerCase()), since],
      );
      const pending = await this.pendingOf(client, origins);
      await this.audit(client, who, 'resume', origin, {
        pending,
        paused_seconds: Math.round((Date.now() - since.getTime()) / 1000),
      });
      return { origin, paused: false, pending };
    });
    await this.wake(origins);
    return result;
  }

  /**
   * A resumed destination's waiting rows go now: their delayed jobs are promoted (and a
   * job Redis lost is dispatched afresh), in keyset pages of `WAKE_PAGE` rows. A worker
   * that read the paused set just before the resume committed may put a promoted job back
   * once more (it re-reads the set before doing so, but its read may predate the commit by
   * a few ms): the second pass, `WAKE_AGAIN_MS` later, promotes those.
   */
  private async wake(origins: string[]): Promise<void> {
    const lower = origins.map((o) => o.toLowerCase());
    for (const pass of [0, 1]) {
      if (pass === 1) await new Promise((r) => setTimeout(r, WAKE_AGAIN_MS));
      let after = '0';
      for (;;) {
        const { rows } = await this.pool.query<{ id: string; target_url: string }>(
          `SELECT d.id::text AS id, e.target_url
             FROM ${this.schema}.outbox_delivery d
             JOIN ${this.schema}.outbox_event e ON e.id = d.id
            WHERE d.origin = ANY($1::text[]) AND d.state = 'pending' AND d.id > $2::bigint
            ORDER BY d.id LIMIT ${WAKE_PAGE}`,
          [lower, after],
        );
        if (rows.length === 0) break;
        await this.dispatch(rows);
        after = rows[rows.length - 1]!.id;
        if (rows.length < WAKE_PAGE) break;
      }
    }
  }

  /**
   * Sends a test event to a destination: a fresh event to the URL, authentication and
   * channel of the newest delivery to that origin, its body saying it is a test
   * (`notification_type: "console_test"`). It goes through the outbox like any event
   * (signed, retried, listed), so its outcome shows the destination's health now.
   */
  async sendTest(origin: string, who: Operator): Promise<TestEventResult> {
    const origins = originCandidates(origin);
    const { rows } = await this.pool.query(
      `SELECT target_url, auth_mode, auth_secret, channel, principal_id
         FROM ${this.schema}.outbox_event
        WHERE ${originSql('target_url')} = ANY($1::text[])
        ORDER BY created_at DESC, id DESC LIMIT 1`,
      [origins],
    );
    const last = rows[0];
    if (!last) {
      throw new ConsoleActionError(
        404,
        'NO_DESTINATION',
        `no delivery to ${origin} yet: a test goes to a URL the seller already delivers to`,
      );
    }
    const key = newIdempotencyKey();
    const outbox = new Outbox({ pool: this.pool, queue: this.queue, schema: this.schema });
    const auth =
      last.auth_mode === 'hmac'
        ? { mode: 'hmac' as const, secret: last.auth_secret as string }
        : last.auth_mode === 'bearer'
          ? { mode: 'bearer' as const, token: last.auth_secret as string }
          : { mode: 'rfc9421' as const };
    const [id] = await outbox.enqueue([
      {
        target: { url: last.target_url, auth, channel: last.channel },
        payload: {
          idempotency_key: key,
          notification_type: 'console_test',
          message: `test event sent by ${who.name} from the seller's console`,
          timestamp: new Date().toISOString(),
        },
        idempotencyKey: key,
        notificationType: 'console_test',
        ...(last.principal_id ? { principalId: last.principal_id } : {}),
      },
    ]);
    await withTransaction(this.pool, (client) =>
      this.audit(client, who, 'test_event', origin, { delivery: id }),
    );
    this.logger.info({ operator: who.name, via: who.via, origin, delivery: id }, 'console: test');
    return { id: id!, origin, url: recordedUrlOf(last.target_url), idempotencyKey: key };
  }

  private async pendingOf(client: { query: Pool['query'] }, origins: string[]): Promise<number> {
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM ${this.schema}.outbox_delivery
        WHERE origin = ANY($1::text[]) AND state = 'pending'`,
      [origins.map((o) => o.toLowerCase())],
    );
    return rows[0].n;
  }

  private audit(
    client: { query: Pool['query'] },
    who: Operator,
    action: string,
    target: string,
    detail: Record<string, unknown>,
  ): Promise<string> {
    return auditAction(client, this.schema, who, action, target, detail);
  }

  /**
   * Reopened finished rows, 50 to a batch job: a finished row has no job left in Redis
   * (finished jobs are removed), so there is nothing to promote, and one job per 50 rows
   * spares Redis 10,000 round trips per recover. A dispatch Redis loses is the
   * reconciler's, as for any row.
   */
  private async dispatchMany(rows: Array<{ id: string; target_url: string }>): Promise<void> {
    try {
      await this.queue.dispatchBatch(
        rows.map((r) => ({ id: r.id, origin: new URL(r.target_url).origin })),
      );
    } catch (err) {
      this.logger.warn(
        { err, rows: rows.length },
        'console dispatch failed; reconciler will retry',
      );
    }
  }

  /** A row job each, due now; an old job of the row still in Redis is promoted instead. */
  private async dispatch(rows: Array<{ id: string; target_url: string }>): Promise<void> {
    for (let i = 0; i < rows.length; i += 500) {
      const group = rows.slice(i, i + 500);
      try {
        await Promise.all(
          group.map(async (r) => {
            const job = await this.queue.getJob(r.id, new URL(r.target_url).origin);
            if (job && (await job.isDelayed())) await job.promote();
          }),
        );
        await this.queue.dispatch(
          group.map((r) => ({ id: r.id, origin: new URL(r.target_url).origin })),
        );
      } catch (err) {
        this.logger.warn(
          { err, rows: group.length },
          'console dispatch failed; reconciler will retry',
        );
      }
    }
  }
}
