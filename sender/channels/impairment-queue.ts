/**
 * Coalesced impairments on `push_notification_config` (supplement §4.6): an observation is
 * recorded, then fires now (latency-sensitive kinds) or joins the open window of its kind
 * for the buy, which fires once when it closes.
 */
import type { PoolClient } from '../../shared/infra/pg.js';
import type { OutboundEvent } from '../outbox/types.js';
import { buyHealth, type BuyRow, type ChannelsContext } from './channel-rows.js';
import { impairmentEvent } from './payloads.js';
import type { ImpairmentKind } from './impairment-kinds.js';
import type { Impairment } from './types.js';

/**
 * Records an observation on a locked buy that has channels open, then fires it now (window 0)
 * or queues it in the window of its kind. Resolves to the outbox ids enqueued.
 */
export async function recordImpairment(
  ctx: ChannelsContext,
  c: PoolClient,
  buy: BuyRow,
  imp: Impairment,
  kind: ImpairmentKind,
  window: number,
  now: number,
): Promise<string[]> {
  const s = ctx.schema;
  const id = buy.media_buy_id;
  await c.query(
    `INSERT INTO ${s}.channel_impairments (media_buy_id, impairment_id, state, open, updated_at)
     VALUES ($1, $2, $3::jsonb, $4, $5)
     ON CONFLICT (media_buy_id, impairment_id) DO UPDATE SET state = excluded.state,
       open = excluded.open, updated_at = excluded.updated_at`,
    [id, imp.impairment_id, JSON.stringify(imp), imp.resolved_at === undefined, new Date(now)],
  );
  if (!buy.push_config) {
    ctx.logger.info({ mediaBuyId: id }, 'impairment recorded; buy has no push channel');
    return [];
  }
  if (window === 0) {
    // Fires now; an earlier observation of it still waiting in a window is superseded.
    await c.query(
      `DELETE FROM ${s}.channel_impairment_pending WHERE media_buy_id = $1 AND impairment_id = $2`,
      [id, imp.impairment_id],
    );
    const health = await buyHealth(ctx, c, id);
    return ctx.sink.enqueue([impairmentEvent(buy, imp, health, now)], c);
  }
  // The window of (buy, kind) opened with its first observation; later ones join it
  // and never push it back, so no impairment waits longer than the window.
  const { rows } = await c.query<{ fire_at: Date | null }>(
    `SELECT min(fire_at) AS fire_at FROM ${s}.channel_impairment_pending
     WHERE media_buy_id = $1 AND kind = $2`,
    [id, kind],
  );
  const fireAt = rows[0]?.fire_at ?? new Date(now + window * 1000);
  await c.query(
    `INSERT INTO ${s}.channel_impairment_pending
       (media_buy_id, impairment_id, kind, impairment, fire_at)
     VALUES ($1, $2, $3, $4::jsonb, $5)
     ON CONFLICT (media_buy_id, impairment_id) DO UPDATE SET impairment = excluded.impairment,
       fire_at = least(${s}.channel_impairment_pending.fire_at, excluded.fire_at)`,
    [id, imp.impairment_id, kind, JSON.stringify(imp), fireAt],
  );
  return [];
}

/** Removes pending impairments (only closed windows when `dueOnly`) and builds their fires. */
export async function flushImpairments(
  ctx: ChannelsContext,
  c: PoolClient,
  buy: BuyRow,
  now: number,
  dueOnly: boolean,
): Promise<OutboundEvent[]> {
  const { rows } = await c.query<{ impairment: Impairment; first_seen: string }>(
    `DELETE FROM ${ctx.schema}.channel_impairment_pending
     WHERE media_buy_id = $1 ${dueOnly ? 'AND fire_at <= $2' : 'AND $2::timestamptz IS NOT NULL'}
     RETURNING impairment, first_seen`,
    [buy.media_buy_id, new Date(now)],
  );
  if (rows.length === 0) return [];
  if (!buy.push_config) {
    ctx.logger.info({ mediaBuyId: buy.media_buy_id }, 'push channel removed: impairments dropped');
    return [];
  }
  rows.sort((a, b) => Number(a.first_seen) - Number(b.first_seen));
  const health = await buyHealth(ctx, c, buy.media_buy_id);
  return rows.map((r) => impairmentEvent(buy, r.impairment, health, now));
}
