/**
 * create_media_buy by `proposal_id` (published create-media-buy-request, 3.1.19 and
 * 3.2.0-beta.5; service-spec's A2A example): the buyer names a committed proposal (finalized
 * through get_products refine: firm pricing, inventory held until `expires_at`) and a
 * `total_budget`; the packages are the proposal's allocations, each getting its percentage
 * of the total at the allocation's pricing option (an auction option bids its floor, the
 * firm price of the plan). The result is an ordinary create request, so the rest of create
 * (media-buy-create.ts) sees one shape. A proposal executes once: the buy that executes it
 * marks it in the same transaction, so a refused create leaves it executable; a retry with
 * the original idempotency_key replays the first answer before getting here.
 *
 * Refusals (published error codes, `field: proposal_id`): PROPOSAL_NOT_FOUND (never issued
 * to this principal, or evicted), PROPOSAL_EXPIRED (past `expires_at`: the hold lapsed),
 * PROPOSAL_NOT_COMMITTED (a draft), INVALID_STATE (already executed); BUDGET_TOO_LOW
 * (`total_budget.amount`) when an allocation's share is under its option's minimum.
 */
import { taskError } from '../../runtime/errors.js';
import type { TaskContext } from '../../runtime/types.js';
import type { CreateMediaBuyInput, CreateMediaBuyRequest, PackageRequest } from './requests.js';
import { productsById } from './create.js';
import { isAuction, minimumBudget } from '../catalog/pricing.js';
import type { ProposalData } from '../catalog/proposals.js';

interface Row {
  status: 'draft' | 'committed';
  data: ProposalData;
  expires_at: Date;
  executed_at: Date | null;
}

/** Whole cents of `amount` split by percentages; the last share takes the rounding rest. */
export function splitBudget(amount: number, percentages: number[]): number[] {
  const cents = Math.round(amount * 100);
  const total = percentages.reduce((a, b) => a + b, 0);
  let left = cents;
  return percentages.map((pct, i) => {
    const share = i === percentages.length - 1 ? left : Math.floor((cents * pct) / total);
    left -= share;
    return share / 100;
  });
}

const refused = (code: Parameters<typeof taskError>[0], message: string) =>
  taskError(code, message, { field: 'proposal_id' });

/** The request with its packages: as sent, or derived from the named proposal. */
export async function withProposalPackages(
  params: CreateMediaBuyInput,
  ctx: TaskContext,
): Promise<CreateMediaBuyRequest> {
  if (params.proposal_id === undefined) return params as CreateMediaBuyRequest;
  const id = params.proposal_id;
  // The request schema makes total_budget required with a proposal_id.
  const total = params.total_budget!;
  const { rows } = await ctx.db.query<Row>(
    `SELECT status, data, expires_at, executed_at FROM ${ctx.schema}.proposals
      WHERE principal_id = $1 AND proposal_id = $2 FOR UPDATE`,
    [ctx.principal!.principal_id, id],
  );
  const row = rows[0];
  const shown = id.slice(0, 80);
  if (!row) throw refused('PROPOSAL_NOT_FOUND', `no proposal ${shown} for this principal`);
  if (row.executed_at !== null) {
    throw refused('INVALID_STATE', `proposal ${shown} was already executed by a media buy`);
  }
  if (row.expires_at.getTime() <= ctx.clock.nowMs()) {
    throw refused(
      'PROPOSAL_EXPIRED',
      `proposal ${shown} expired at ${row.expires_at.toISOString()}; request and finalize a fresh one`,
    );
  }
  if (row.status !== 'committed') {
    throw refused(
      'PROPOSAL_NOT_COMMITTED',
      `proposal ${shown} is a draft; finalize it first (get_products refine, action finalize)`,
    );
  }
  const allocations = row.data.allocations;
  const products = await productsById(
    ctx.db,
    ctx.schema,
    allocations.map((a) => a.product_id),
  );
  const budgets = splitBudget(
    total.amount,
    allocations.map((a) => a.allocation_percentage),
  );
  const packages: PackageRequest[] = allocations.map((a, i) => {
    const option = products
      .find((p) => p.product_id === a.product_id)
      ?.pricing_options.find((o) => o.pricing_option_id === a.pricing_option_id);
    const budget = budgets[i]!;
    if (option && budget < minimumBudget(option)) {
      throw taskError(
        'BUDGET_TOO_LOW',
        `total_budget.amount gives ${a.product_id} ${budget} (${a.allocation_percentage}%), ` +
          `below its minimum ${minimumBudget(option)}`,
        { field: 'total_budget.amount' },
      );
    }
    return {
      product_id: a.product_id,
      pricing_option_id: a.pricing_option_id,
      budget,
      ...(option && isAuction(option) ? { bid_price: option.floor_price ?? 0 } : {}),
    } as PackageRequest;
  });
  // Executed by this buy; rolled back with it if create refuses later. A dry run marks
  // nothing (its transaction is rolled back too).
  await ctx.db.query(
    `UPDATE ${ctx.schema}.proposals SET executed_at = $3, updated_at = $3
      WHERE principal_id = $1 AND proposal_id = $2`,
    [ctx.principal!.principal_id, id, ctx.clock.now()],
  );
  return { ...params, packages };
}
