/**
 * The enqueue's side of the outbox: an event's checks before it is written, and the one
 * INSERT that writes a batch of events and their delivery state (storage-migration.ts).
 */
import { originSql } from '../console/migrations.js';
import { IDEMPOTENCY_KEY_PATTERN } from './keys.js';
import { newIdSql } from './partitions.js';
import { OutboxError } from './rows.js';
import type { DeliveryAuth, OutboundEvent } from './types.js';

export function checkEvent(e: OutboundEvent): void {
  if (!IDEMPOTENCY_KEY_PATTERN.test(e.idempotencyKey)) {
    throw new OutboxError(`idempotency key does not match ${IDEMPOTENCY_KEY_PATTERN}`);
  }
  try {
    new URL(e.target.url);
  } catch {
    throw new OutboxError('target url is not a valid URL');
  }
  const buys: unknown = e.mediaBuyIds;
  if (
    buys !== undefined &&
    (!Array.isArray(buys) ||
      buys.length === 0 ||
      buys.some((b) => typeof b !== 'string' || b.length === 0))
  ) {
    throw new OutboxError('mediaBuyIds must be a non-empty array of non-empty strings');
  }
}

export function originOf(url: string): string {
  return new URL(url).origin;
}

export function authOf(mode: string, secret: string | null): DeliveryAuth {
  if (mode === 'hmac') return { mode: 'hmac', secret: secret ?? '' };
  if (mode === 'bearer') return { mode: 'bearer', token: secret ?? '' };
  return { mode: 'rfc9421' };
}

/**
 * The enqueue's INSERT ($1..$13 and $15 (the task type) one array element per event, $14 the
 * horizon, $18 the buys as JSON text when `buys`): the event written once to outbox_event, its delivery
 * state to the narrow outbox_delivery (storage-migration.ts). Without `buys` it runs as it
 * did before the column of buys existed. The bodies come as one bytea ($16, every body's
 * bytes in a row, sent in binary) cut at $2 (offsets) and $17 (lengths): a bytea[] goes as
 * hex text that PostgreSQL's array parser reads a character at a time, an eighth of the
 * insert's backend CPU (issue 19).
 */
export function insertSql(s: string, buys: boolean): string {
  return `
      WITH x AS (
        SELECT ${newIdSql(s)} AS id, k, substring($16::bytea from bo + 1 for bl) AS b, u, m, sc,
               c, t, n, mb, p, tk, sq, sb, tt${buys ? ', mbs' : ''}
          FROM unnest($1::text[], $2::int[], $17::int[], $3::text[], $4::text[], $5::text[],
                      $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
                      $12::int[], $13::text[], $15::text[]${buys ? ', $18::text[]' : ''})
            WITH ORDINALITY AS x(k, bo, bl, u, m, sc, c, t, n, mb, p, tk, sq, sb, tt, ${buys ? 'mbs, ' : ''}ord)
          ORDER BY ord
      ), e AS (
        INSERT INTO ${s}.outbox_event (id, idempotency_key, body, target_url, auth_mode,
          auth_secret, channel, notification_type, notification_id, media_buy_id, principal_id,
          task_id, sequence_number, subscriber_id, task_type${buys ? ', media_buy_ids' : ''})
        SELECT id, k, b, u, m, sc, c, t, n, mb, p, tk, sq, sb, tt${
          buys
            ? `,
               CASE WHEN mbs IS NOT NULL
                 THEN ARRAY(SELECT jsonb_array_elements_text(mbs::jsonb)) END`
            : ''
        }
          FROM x
      )
      INSERT INTO ${s}.outbox_delivery (id, created_at, origin, horizon_seconds)
        SELECT id, now(), ${originSql('u')}, $14 FROM x
      RETURNING id::text`;
}

/**
 * The INSERT's parameters for a batch of events (`insertSql`'s $1..$18), the rows' origins
 * (their dispatch shard) and whether the batch needs the column of buys.
 */
export function insertParams(
  events: OutboundEvent[],
  horizonSeconds: number,
): { params: unknown[]; buys: boolean; origins: string[] } {
  const cols = {
    key: [] as string[],
    body: [] as Buffer[],
    offset: [] as number[],
    length: [] as number[],
    url: [] as string[],
    mode: [] as string[],
    secret: [] as (string | null)[],
    channel: [] as string[],
    type: [] as string[],
    nid: [] as (string | null)[],
    buy: [] as (string | null)[],
    buys: [] as (string | null)[],
    principal: [] as (string | null)[],
    task: [] as (string | null)[],
    taskType: [] as (string | null)[],
    seq: [] as (number | null)[],
    sub: [] as (string | null)[],
  };
  const origins: string[] = [];
  let bytes = 0;
  for (const e of events) {
    origins.push(originOf(e.target.url));
    cols.key.push(e.idempotencyKey);
    // Serialised once, here: these bytes are what every attempt sends and signs.
    const body = Buffer.from(JSON.stringify(e.payload), 'utf8');
    cols.offset.push(bytes);
    cols.length.push(body.length);
    cols.body.push(body);
    bytes += body.length;
    cols.url.push(e.target.url);
    cols.mode.push(e.target.auth.mode);
    cols.secret.push(
      e.target.auth.mode === 'hmac'
        ? e.target.auth.secret
        : e.target.auth.mode === 'bearer'
          ? e.target.auth.token
          : null,
    );
    cols.channel.push(e.target.channel);
    cols.type.push(e.notificationType);
    cols.nid.push(e.notificationId ?? null);
    cols.buy.push(e.mediaBuyId ?? null);
    // One array per row: unnest cannot take ragged text[][], so JSON text (or null).
    cols.buys.push(e.mediaBuyIds ? JSON.stringify(e.mediaBuyIds) : null);
    cols.principal.push(e.principalId ?? null);
    cols.task.push(e.taskId ?? null);
    cols.taskType.push(e.taskType ?? null);
    cols.seq.push(e.sequenceNumber ?? null);
    cols.sub.push(e.subscriberId ?? null);
  }
  // Only a batch with an event covering several buys pays for their column (insertSql).
  const buys = cols.buys.some((b) => b !== null);
  const params: unknown[] = [
    cols.key,
    cols.offset,
    cols.url,
    cols.mode,
    cols.secret,
    cols.channel,
    cols.type,
    cols.nid,
    cols.buy,
    cols.principal,
    cols.task,
    cols.seq,
    cols.sub,
    horizonSeconds,
    cols.taskType,
    Buffer.concat(cols.body, bytes),
    cols.length,
  ];
  if (buys) params.push(cols.buys);
  return { params, buys, origins };
}
