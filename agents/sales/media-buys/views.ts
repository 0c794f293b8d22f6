/**
 * Media buys on the wire: the create/update response (and the create task's completion
 * result) and get_media_buys, in the published shapes. Statuses are the published
 * `media-buy-status` values (`wireBuyStatus`); a buy awaiting seller approval is
 * provisional (`confirmed_at: null`).
 */
import type { PoolClient } from '../../../shared/infra/pg.js';
import type { TaskContext } from '../../runtime/types.js';
import { decodeCursor, pageInfo } from '../cursor.js';
import {
  assignmentsOf,
  loadPackages,
  packageView,
  round2,
  TERMINAL_BUY,
  wireBuyStatus,
  withoutCredentials,
  type BuyRow,
  type PackageRow,
} from './records.js';
import { internalStatuses, type GetMediaBuysRequest } from './requests.js';

/** The release whose buyers read a buy's status from top-level `status`. */
export const LEGACY_STATUS_RELEASE = '3.0';

/** The members create, update and get_media_buys share for one buy. */
function buyCore(
  buy: BuyRow,
  packages: PackageRow[],
  assigned: Map<string, string[]>,
  now: Date,
): Record<string, unknown> {
  const hasCreatives = packages.some((p) => (assigned.get(p.package_id) ?? []).length > 0);
  return {
    media_buy_id: buy.media_buy_id,
    ...(buy.buyer_ref !== null ? { buyer_ref: buy.buyer_ref } : {}),
    confirmed_at: buy.approved_at ? buy.approved_at.toISOString() : null,
    revision: buy.revision,
    currency: buy.currency,
    total_budget: round2(packages.reduce((a, p) => a + p.budget, 0)),
    packages: packages.map((p) => packageView(p, assigned.get(p.package_id))),
    ...availableActions(buy, packages),
    _status: wireBuyStatus(buy, hasCreatives, now),
  };
}

const ACTION_MODES = ['self_serve', 'conditional_self_serve', 'requires_approval'];

/**
 * `available_actions` (core/media-buy-available-action.json, 3.1 and 3.2): the actions every
 * package's product declares in `allowed_actions`, each in its first listed mode, while the
 * buy is not over. Only products that declare them (seeded fixtures) contribute; a buy with
 * any other package answers none (targeting_aware_discovery.yaml:1131).
 */
function availableActions(buy: BuyRow, packages: PackageRow[]): Record<string, unknown> {
  if (packages.length === 0 || TERMINAL_BUY.has(buy.status)) return {};
  const per = packages.map((p) => {
    const list = Array.isArray(p.allowed_actions) ? p.allowed_actions : [];
    const modes = new Map<string, string>();
    for (const a of list as Array<{ action?: unknown; modes?: unknown }>) {
      const mode = Array.isArray(a?.modes)
        ? a.modes.find((m) => ACTION_MODES.includes(m))
        : undefined;
      if (typeof a?.action === 'string' && typeof mode === 'string' && !modes.has(a.action)) {
        modes.set(a.action, mode);
      }
    }
    return modes;
  });
  const actions = [...per[0]!].filter(([action]) => per.every((m) => m.has(action)));
  if (actions.length === 0) return {};
  return { available_actions: actions.map(([action, mode]) => ({ action, mode })) };
}

/**
 * The full response of create/update (and the create task's result): the buy as it stands.
 * Its status is `media_buy_status` (3.1+; top-level `status` is the task's). A buyer pinned
 * to 3.0 (`release`) reads the buy's status from top-level `status` (the 3.0 schema; 3.1
 * keeps it, deprecated, with the same value as `media_buy_status`; adcp#4895): it gets both,
 * and top-level `status` replaces the task status the dispatcher would put there.
 */
export async function buyResponse(
  db: Pick<PoolClient, 'query'>,
  schema: string,
  buy: BuyRow,
  now: Date,
  release?: string,
): Promise<Record<string, unknown>> {
  const packages = await loadPackages(db, schema, [buy.media_buy_id]);
  const assigned = await assignmentsOf(
    db,
    schema,
    packages.map((p) => p.package_id),
  );
  const { _status, ...core } = buyCore(buy, packages, assigned, now);
  return {
    ...core,
    media_buy_status: _status,
    ...(release === LEGACY_STATUS_RELEASE ? { status: _status } : {}),
  };
}

export async function getMediaBuys(params: GetMediaBuysRequest, ctx: TaskContext) {
  const s = ctx.schema;
  const principal = ctx.principal!;
  const offset = decodeCursor(params.pagination?.cursor);
  const pageSize = params.pagination?.max_results ?? params.limit ?? 50;
  const { rows } = await ctx.db.query<BuyRow & { total: string }>(
    `SELECT *, count(*) OVER () AS total FROM ${s}.media_buys WHERE principal_id = $1
       AND ($2::text[] IS NULL OR media_buy_id = ANY($2))
       AND ($3::text[] IS NULL OR buyer_ref = ANY($3))
       AND ($4::text[] IS NULL OR status = ANY($4))
     ORDER BY created_at DESC, media_buy_id LIMIT $5 OFFSET $6`,
    [
      principal.principal_id,
      params.media_buy_ids ?? null,
      params.buyer_refs ?? null,
      internalStatuses(params.status_filter),
      pageSize,
      offset,
    ],
  );
  const total = rows.length > 0 ? Number(rows[0]!.total) : 0;
  const ids = rows.map((b) => b.media_buy_id);
  const packages = await loadPackages(ctx.db, s, ids);
  const assigned = await assignmentsOf(
    ctx.db,
    s,
    packages.map((p) => p.package_id),
  );
  const { rows: impairments } = await ctx.db.query<{
    media_buy_id: string;
    body: Record<string, unknown>;
  }>(
    `SELECT media_buy_id, body FROM ${s}.impairments
      WHERE media_buy_id = ANY($1) AND resolved_at IS NULL ORDER BY observed_at`,
    [ids],
  );
  const out = [];
  const now = ctx.clock.now();
  for (const { total: _total, ...b } of rows) {
    const imps = impairments.filter((i) => i.media_buy_id === b.media_buy_id).map((i) => i.body);
    const { _status, ...core } = buyCore(
      b,
      packages.filter((p) => p.media_buy_id === b.media_buy_id),
      assigned,
      now,
    );
    const view: Record<string, unknown> = {
      ...core,
      status: _status,
      brand_manifest: b.brand_manifest,
      start_time: b.start_at.toISOString(),
      end_time: b.end_at.toISOString(),
      impairments: imps,
      health: imps.length > 0 && !TERMINAL_BUY.has(b.status) ? 'impaired' : 'ok',
      created_at: b.created_at.toISOString(),
      updated_at: b.updated_at.toISOString(),
    };
    // Published 3.1+: the create request's context, persisted, on every read of the buy
    // (buyers reconcile media_buy_id with their own tracking by it).
    if (b.context && typeof b.context === 'object') view.context = b.context;
    if (b.push_notification_config)
      view.push_notification_config = withoutCredentials(b.push_notification_config);
    if (b.reporting_webhook) view.reporting_webhook = withoutCredentials(b.reporting_webhook);
    if (params.include_webhook_activity) {
      view.webhook_activity = ctx.settings.webhookActivity
        ? await ctx.settings.webhookActivity.list({
            principalId: principal.principal_id,
            mediaBuyId: b.media_buy_id,
            limit: params.webhook_activity_limit ?? 50,
          })
        : [];
    }
    out.push(view);
  }
  return { media_buys: out, pagination: pageInfo(offset, out.length, total) };
}
