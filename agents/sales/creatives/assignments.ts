/**
 * Which creatives a package carries, and creative references that arrive before the
 * creative does.
 *
 * A buyer may name a creative on a package (create_media_buy / update_media_buy) before it
 * syncs that creative: the published lifecycle makes `pending_creatives` the buy's state
 * while "the buyer must attach creatives via sync_creatives before the buy can serve"
 * (media-buy-status.json), and the protocol's media_buy_seller storyboard creates its buy
 * assigning `video_30s_trail_pro` one phase before it syncs it. Such a reference is kept
 * as pending (never shown as an assignment, so the buy stays `pending_creatives`) and
 * becomes an assignment when the same principal's sync_creatives stores that creative.
 * Creatives are the principal's own namespace, so any id can still arrive; and an id held
 * by another principal is treated exactly like an unknown one (error-code.json: never
 * distinguish "exists in another tenant" from "does not exist").
 */
import { TERMINAL_BUY } from '../media-buys/records.js';
import type { TaskContext } from '../../runtime/types.js';

/**
 * Replaces a package's creatives: the principal's existing creatives are assigned, the
 * others recorded as pending. Returns the pending ids.
 */
export async function assignCreatives(
  ctx: TaskContext,
  packageId: string,
  creativeIds: string[],
): Promise<string[]> {
  const s = ctx.schema;
  const principalId = ctx.principal!.principal_id;
  const ids = [...new Set(creativeIds)];
  await lockReferences(ctx, ids);
  const { rows } = await ctx.db.query<{ creative_id: string }>(
    `SELECT creative_id FROM ${s}.creatives WHERE principal_id = $1 AND creative_id = ANY($2)
       AND status <> 'archived'`,
    [principalId, ids],
  );
  const known = new Set(rows.map((r) => r.creative_id));
  const pending = ids.filter((id) => !known.has(id));
  await ctx.db.query(`DELETE FROM ${s}.creative_assignments WHERE package_id = $1`, [packageId]);
  await ctx.db.query(`DELETE FROM ${s}.pending_creative_assignments WHERE package_id = $1`, [
    packageId,
  ]);
  await ctx.db.query(
    `INSERT INTO ${s}.creative_assignments (principal_id, creative_id, package_id)
     SELECT $1, unnest($2::text[]), $3`,
    [principalId, [...known], packageId],
  );
  await ctx.db.query(
    `INSERT INTO ${s}.pending_creative_assignments (principal_id, creative_id, package_id)
     SELECT $1, unnest($2::text[]), $3`,
    [principalId, pending, packageId],
  );
  return pending;
}

/**
 * Turns the principal's pending references to the creatives just stored into assignments,
 * for buys that can still serve (a completed, canceled or rejected buy takes no creative:
 * its references are dropped). Returns the package ids each creative was assigned to.
 */
export async function resolvePendingAssignments(
  ctx: TaskContext,
  creativeIds: string[],
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (creativeIds.length === 0) return out;
  const s = ctx.schema;
  const principalId = ctx.principal!.principal_id;
  await lockReferences(ctx, creativeIds);
  const { rows } = await ctx.db.query<{ creative_id: string; package_id: string; status: string }>(
    `DELETE FROM ${s}.pending_creative_assignments p
       USING ${s}.packages k JOIN ${s}.media_buys b USING (media_buy_id)
      WHERE p.principal_id = $1 AND p.creative_id = ANY($2) AND k.package_id = p.package_id
      RETURNING p.creative_id, p.package_id, b.status`,
    [principalId, creativeIds],
  );
  const live = rows.filter((r) => !TERMINAL_BUY.has(r.status));
  if (live.length === 0) return out;
  await ctx.db.query(
    `INSERT INTO ${s}.creative_assignments (principal_id, creative_id, package_id)
     SELECT $1, unnest($2::text[]), unnest($3::text[]) ON CONFLICT DO NOTHING`,
    [principalId, live.map((r) => r.creative_id), live.map((r) => r.package_id)],
  );
  for (const r of live.sort((a, b) => a.package_id.localeCompare(b.package_id))) {
    out.set(r.creative_id, [...(out.get(r.creative_id) ?? []), r.package_id]);
  }
  return out;
}

/**
 * Serializes a package naming a creative with a sync storing it, per (principal, creative),
 * until the transaction ends: without it a create that looks while a sync's new creative
 * is still uncommitted would record a reference that sync can no longer see, and the
 * reference would wait for a later sync. Whichever commits second sees the other's work.
 * Locks are taken in id order, so two calls never wait on each other crosswise.
 */
async function lockReferences(ctx: TaskContext, creativeIds: string[]): Promise<void> {
  const ids = [...new Set(creativeIds)].sort();
  if (ids.length === 0) return;
  await ctx.db.query(
    `SELECT pg_advisory_xact_lock(hashtextextended('pending_creative:' || $1 || '/' || id, 0))
       FROM unnest($2::text[]) AS t(id)`,
    [ctx.principal!.principal_id, ids],
  );
}
