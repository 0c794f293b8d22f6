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
import { putFixture, SESSION } from '../sandbox/fixtures.js';
import { UPSTREAM_KIND as KIND, UPSTREAM_TOOLS as TOOLS } from '../sandbox/stale-response.js';

const NAME = /^[A-Za-z0-9_.:\- ]{1,100}$/;

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
