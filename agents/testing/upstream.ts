/**
 * `force_upstream_unavailable` (published comply_test_controller scenario; the
 * stale_response_advisory storyboard): the sandbox principal's next get_products finds its
 * named upstream unreachable and answers from the seller's cache, flagged with the
 * STALE_RESPONSE advisory in `errors[]` (error-details/stale-response.json) beside a
 * populated success payload. The directive applies once: the following call is healthy
 * again, so STALE_RESPONSE never rides on an answer that was not served from cache.
 */
import type { TaskContext } from '../runtime/types.js';
import type { ControllerRequest } from './request.js';
import { refuse, str } from './replies.js';
import { putFixture, SESSION } from './sandbox.js';

const KIND = 'upstream_unavailable';
/** The tasks whose upstream this seller can force down (answered from cache). */
const TOOLS = ['get_products'] as const;
const NAME = /^[A-Za-z0-9_.:\- ]{1,100}$/;
/**
 * The freshness target of the seller's product cache: a forced-down upstream's answer comes
 * from an entry past it (STALE_RESPONSE is only for a cache hit older than the target).
 */
const FRESHNESS_TARGET_SECONDS = 300;

export async function forceUpstreamUnavailable(req: ControllerRequest, ctx: TaskContext) {
  const p = (req.params ?? {}) as Record<string, unknown>;
  const tool = p.tool === undefined ? 'get_products' : str(p.tool);
  if (!tool || !(TOOLS as readonly string[]).includes(tool)) {
    return refuse('INVALID_PARAMS', `params.tool must be one of ${TOOLS.join(', ')}`);
  }
  const upstream = p.upstream_name === undefined ? 'inventory-service' : str(p.upstream_name);
  if (!upstream || !NAME.test(upstream)) {
    return refuse('INVALID_PARAMS', 'params.upstream_name must be 1-100 letters, digits, _ . : -');
  }
  await putFixture(
    ctx.db,
    ctx.schema,
    {
      agent: ctx.agent,
      principalId: ctx.principal!.principal_id,
      account: SESSION,
      kind: KIND,
      id: tool,
    },
    { upstream },
  );
  return {
    success: true,
    message: `upstream ${upstream} of ${tool} is unreachable for this sandbox account's next ${tool}: it answers from cache with STALE_RESPONSE`,
  };
}

/**
 * The STALE_RESPONSE advisory for this call when the controller forced the task's upstream
 * down for the caller (the directive is taken: it applies once), else null. Only asked when
 * the deployment runs the test controller, so production answers pay nothing for it.
 */
export async function takeStaleResponse(
  ctx: TaskContext,
  tool: (typeof TOOLS)[number],
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
