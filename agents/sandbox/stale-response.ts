/**
 * The read side of `force_upstream_unavailable` (agents/testing/upstream.ts sets it): the
 * sandbox principal's next get_products answers from the seller's cache with the
 * STALE_RESPONSE advisory in `errors[]` (error-details/stale-response.json), once.
 */
import type { TaskContext } from '../runtime/types.js';
import { SESSION } from './fixtures.js';

/** The fixture kind of the directive. */
export const UPSTREAM_KIND = 'upstream_unavailable';
/** The tasks whose upstream this seller can force down (answered from cache). */
export const UPSTREAM_TOOLS = ['get_products'] as const;
const KIND = UPSTREAM_KIND;
type Tool = (typeof UPSTREAM_TOOLS)[number];
/**
 * The freshness target of the seller's product cache: a forced-down upstream's answer comes
 * from an entry past it (STALE_RESPONSE is only for a cache hit older than the target).
 */
const FRESHNESS_TARGET_SECONDS = 300;

/**
 * The STALE_RESPONSE advisory for this call when the controller forced the task's upstream
 * down for the caller (the directive is taken: it applies once), else null. Only asked when
 * the deployment runs the test controller, so production answers pay nothing for it.
 */
export async function takeStaleResponse(
  ctx: TaskContext,
  tool: Tool,
): Promise<Record<string, unknown> | null> {
  if (!ctx.settings.testController || !ctx.principal) return null;
  const { rows } = await ctx.db.query<{ data: { upstream: string }; created_at: Date }>(
    `DELETE FROM ${ctx.schema}.sandbox_fixtures
      WHERE agent = $1 AND principal_id = $2 AND account_key = $3 AND kind = $4 AND fixture_id = $5
      RETURNING data, created_at`,
    [ctx.agent, ctx.principal.principal_id, SESSION, KIND, tool],
  );
  const row = rows[0];
  if (!row) return null;
  const sinceForced = Math.max(
    0,
    Math.floor((ctx.clock.nowMs() - row.created_at.getTime()) / 1000),
  );
  return {
    code: 'STALE_RESPONSE',
    message: `upstream ${row.data.upstream} is unreachable; these products are served from cache`,
    field: 'products',
    recovery: 'transient',
    details: {
      served_from_cache: true,
      cache_age_seconds: FRESHNESS_TARGET_SECONDS + 1 + sinceForced,
      freshness_target_seconds: FRESHNESS_TARGET_SECONDS,
      upstream: { name: row.data.upstream },
    },
  };
}
