/**
 * `seed_account` (published comply_test_controller scenario; the
 * pagination_integrity_list_accounts storyboard): an account of the sandbox caller's, as the
 * fixture describes it (`brand`, `status`; `name` defaults to the brand's domain), that
 * list_accounts then pages through. Upsert for the caller's own id; an account id another
 * principal holds is FORBIDDEN and never changed.
 */
import type { TaskContext } from '../runtime/types.js';
import { ACCOUNT_STATUSES } from '../sales/accounts/accounts.js';
import type { ControllerRequest } from './request.js';
import { refuse, str } from './replies.js';

const ACCOUNT_ID = /^[A-Za-z0-9_.:-]{1,255}$/;
const DOMAIN = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/i;
const STATUSES: readonly string[] = ACCOUNT_STATUSES;

export async function seedAccount(req: ControllerRequest, ctx: TaskContext) {
  const p = req.params ?? {};
  const accountId = str(p.account_id);
  const fixture = (p.fixture ?? {}) as Record<string, unknown>;
  if (!accountId || !ACCOUNT_ID.test(accountId)) {
    return refuse('INVALID_PARAMS', 'params.account_id (letters, digits, _ . : -) is required');
  }
  if (typeof fixture !== 'object' || fixture === null || Array.isArray(fixture)) {
    return refuse('INVALID_PARAMS', 'params.fixture must be an object');
  }
  const brand = fixture.brand as { domain?: unknown } | undefined;
  if (brand !== undefined && (typeof brand?.domain !== 'string' || !DOMAIN.test(brand.domain))) {
    return refuse('INVALID_PARAMS', 'params.fixture.brand.domain must be a domain name');
  }
  const status = fixture.status ?? 'active';
  if (typeof status !== 'string' || !STATUSES.includes(status)) {
    return refuse('INVALID_PARAMS', `params.fixture.status must be one of ${STATUSES.join(', ')}`);
  }
  const name =
    typeof fixture.name === 'string' && fixture.name !== ''
      ? fixture.name.slice(0, 200)
      : ((brand?.domain as string | undefined) ?? accountId);
  const { rowCount } = await ctx.db.query(
    `INSERT INTO ${ctx.schema}.accounts (agent, account_id, principal_id, name, brand, status)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (agent, account_id) DO UPDATE SET name = EXCLUDED.name, brand = EXCLUDED.brand,
       status = EXCLUDED.status, updated_at = now()
     WHERE ${ctx.schema}.accounts.principal_id = EXCLUDED.principal_id`,
    [
      ctx.agent,
      accountId,
      ctx.principal!.principal_id,
      name,
      brand ? { domain: (brand.domain as string).toLowerCase() } : null,
      status,
    ],
  );
  if (!rowCount) return refuse('FORBIDDEN', `account ${accountId} belongs to another buyer`);
  return { success: true, message: `account ${accountId} seeded (${status})` };
}
