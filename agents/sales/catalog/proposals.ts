/**
 * Proposals (published `core/proposal.json`): media plans the sales agent returns beside
 * the products of a `buying_mode: 'brief'` get_products, which the buyer refines by
 * proposal id (`buying_mode: 'refine'`, scope `proposal`) and finalizes (action
 * `finalize`: draft, indicative pricing -> committed, firm pricing held until
 * `expires_at`). Stored per principal in `proposals`; a brief writes its plans in one
 * statement, a finalize commits every named proposal in one statement (all or none).
 *
 * Only a buyer that says `buying_mode` gets proposals: the spec's older get_products (no
 * buying_mode) has none, and its callers keep the write-free catalog read.
 */
import { randomBytes } from 'node:crypto';
import type { TaskContext } from '../../runtime/types.js';
import type { ProductRow } from './product-row.js';
import { isAuction, minimumBudget, type PricingOption } from './pricing.js';

/** A draft's indicative pricing stays good for a day; a commitment holds inventory 48 h. */
export const DRAFT_TTL_MS = 24 * 3600_000;
export const HOLD_MS = 48 * 3600_000;

export interface Allocation {
  product_id: string;
  allocation_percentage: number;
  pricing_option_id: string;
  rationale: string;
}

/** A proposal as stored (the wire form minus status and expiry, which live in columns). */
export interface ProposalData {
  proposal_id: string;
  name: string;
  description: string;
  allocations: Allocation[];
  brief_alignment?: string;
  total_budget_guidance?: Record<string, unknown>;
}

export interface StoredProposal {
  data: ProposalData;
  status: 'draft' | 'committed';
  expires_at: Date;
}

/** The option a plan recommends: fixed prices before auctions, then the smallest minimum. */
function recommendedOption(p: ProductRow): PricingOption | undefined {
  return [...p.pricing_options].sort(
    (a, b) => Number(isAuction(a)) - Number(isAuction(b)) || minimumBudget(a) - minimumBudget(b),
  )[0];
}

/** Whole percentages summing to 100, the first ones taking the remainder. */
function evenSplit(n: number): number[] {
  const base = Math.floor(100 / n);
  return Array.from({ length: n }, (_, i) => base + (i < 100 - base * n ? 1 : 0));
}

function newProposalId(): string {
  return `prop_${randomBytes(8).toString('hex')}`;
}

/** Budget guidance of a plan: the smallest total that meets every allocation's minimum. */
function guidance(
  picks: Array<{ option: PricingOption; pct: number }>,
): Record<string, unknown> | undefined {
  const currencies = new Set(picks.map((x) => x.option.currency));
  if (currencies.size !== 1) return undefined;
  const min = Math.max(0, ...picks.map((x) => (minimumBudget(x.option) * 100) / x.pct));
  return {
    min: Math.ceil(min),
    recommended: Math.ceil(Math.max(min, 10_000)),
    currency: picks[0]!.option.currency,
  };
}

/** One plan over `products` (at most one per channel), split evenly. */
function plan(
  products: ProductRow[],
  name: string,
  description: string,
  matched: string[],
): ProposalData | null {
  const picks = products
    .map((p) => ({ p, option: recommendedOption(p) }))
    .filter((x): x is { p: ProductRow; option: PricingOption } => x.option !== undefined);
  if (picks.length === 0) return null;
  const split = evenSplit(picks.length);
  const withPct = picks.map((x, i) => ({ ...x, pct: split[i]! }));
  const budget = guidance(withPct);
  return {
    proposal_id: newProposalId(),
    name,
    description,
    allocations: withPct.map(({ p, option, pct }) => ({
      product_id: p.product_id,
      allocation_percentage: pct,
      pricing_option_id: option.pricing_option_id,
      rationale: `${p.name}: ${p.channel}, ${p.delivery_type.replace('_', '-')}`,
    })),
    ...(matched.length > 0 ? { brief_alignment: `matches: ${matched.join(', ')}` } : {}),
    ...(budget ? { total_budget_guidance: budget } : {}),
  };
}

/**
 * The plans for a brief's ranked products: a balanced plan over the best product of each
 * of the top three channels (when there are two or more), and a focused plan on the best
 * product alone.
 */
export function planProposals(ranked: ProductRow[], matched: string[]): ProposalData[] {
  const best = ranked[0];
  if (!best) return [];
  const perChannel: ProductRow[] = [];
  for (const p of ranked) {
    if (perChannel.length === 3) break;
    if (!perChannel.some((q) => q.channel === p.channel)) perChannel.push(p);
  }
  const out: ProposalData[] = [];
  if (perChannel.length >= 2) {
    const channels = perChannel.map((p) => p.channel).join(', ');
    const balanced = plan(
      perChannel,
      'Balanced reach',
      `Even split across ${channels}: the best-matching product of each channel.`,
      matched,
    );
    if (balanced) out.push(balanced);
  }
  const focused = plan(
    [best],
    `Focused: ${best.name}`,
    `The whole budget on the best-matching product, ${best.name}.`,
    matched,
  );
  if (focused) out.push(focused);
  return out;
}

/** The published proposal of a stored one. */
export function wireProposal(p: StoredProposal): Record<string, unknown> {
  return { ...p.data, proposal_status: p.status, expires_at: p.expires_at.toISOString() };
}

/**
 * Stores a brief's plans as drafts and drops the principal's expired ones (one statement);
 * returns the plans as stored.
 */
export async function saveDrafts(
  ctx: TaskContext,
  plans: ProposalData[],
): Promise<StoredProposal[]> {
  const expires = new Date(ctx.clock.nowMs() + DRAFT_TTL_MS);
  const drafts = plans.map((data) => ({ data, status: 'draft' as const, expires_at: expires }));
  // A dry run shows the plans and keeps none (its ids cannot be refined later).
  if (plans.length === 0 || ctx.dryRun) return drafts;
  const batch = randomBytes(8).toString('hex');
  await ctx.db.query(
    // Expired proposals of the principal go as new ones come (one statement).
    `WITH gone AS (DELETE FROM ${ctx.schema}.proposals WHERE principal_id = $1 AND expires_at <= $4)
     INSERT INTO ${ctx.schema}.proposals (principal_id, proposal_id, batch_id, ord, status, data, expires_at, created_at)
     SELECT $1, d->>'proposal_id', $2, n, 'draft', d, $3, $4
       FROM jsonb_array_elements($5::jsonb) WITH ORDINALITY AS x(d, n)`,
    [ctx.principal!.principal_id, batch, expires, ctx.clock.now(), JSON.stringify(plans)],
  );
  return drafts;
}

interface ProposalRow {
  proposal_id: string;
  status: 'draft' | 'committed';
  data: ProposalData;
  expires_at: Date;
  latest: boolean;
}

/**
 * The principal's live proposals: those of its latest brief, and any other named in `ids`;
 * expired ones are gone.
 */
export async function liveProposals(ctx: TaskContext, ids: string[]): Promise<ProposalRow[]> {
  const { rows } = await ctx.db.query<ProposalRow>(
    `WITH latest AS (SELECT batch_id FROM ${ctx.schema}.proposals WHERE principal_id = $1
                      ORDER BY created_at DESC LIMIT 1)
     SELECT proposal_id, status, data, expires_at, batch_id IN (SELECT batch_id FROM latest) AS latest
       FROM ${ctx.schema}.proposals
      WHERE principal_id = $1 AND expires_at > $3
        AND (batch_id IN (SELECT batch_id FROM latest) OR proposal_id = ANY($2))
      ORDER BY created_at, ord`,
    [ctx.principal!.principal_id, ids, ctx.clock.now()],
  );
  return rows;
}

/**
 * Commits every named live proposal, or none (one statement): firm pricing held until
 * now + HOLD_MS. A committed proposal named again keeps its hold. Returns the committed
 * rows, or null when any name is not a live proposal of the principal.
 */
export async function commitProposals(
  ctx: TaskContext,
  ids: string[],
): Promise<StoredProposal[] | null> {
  const now = ctx.clock.now();
  const hold = new Date(now.getTime() + HOLD_MS);
  // A dry run answers what would be committed and commits nothing.
  const sql = ctx.dryRun
    ? `SELECT proposal_id, 'committed' AS status, data,
              CASE WHEN status = 'committed' THEN expires_at ELSE $4 END AS expires_at
         FROM ${ctx.schema}.proposals
        WHERE principal_id = $1 AND proposal_id = ANY($2) AND expires_at > $3`
    : `WITH named AS (SELECT * FROM ${ctx.schema}.proposals
                     WHERE principal_id = $1 AND proposal_id = ANY($2) AND expires_at > $3)
     UPDATE ${ctx.schema}.proposals p
        SET status = 'committed', updated_at = $3,
            expires_at = CASE WHEN p.status = 'committed' THEN p.expires_at ELSE $4 END
       FROM named n
      WHERE p.principal_id = n.principal_id AND p.proposal_id = n.proposal_id
        AND (SELECT count(*) FROM named) = cardinality($2::text[])
      RETURNING p.proposal_id, p.status, p.data, p.expires_at`;
  const { rows } = await ctx.db.query<ProposalRow>(sql, [
    ctx.principal!.principal_id,
    ids,
    now,
    hold,
  ]);
  if (rows.length !== ids.length) return null;
  const order = new Map(ids.map((id, i) => [id, i]));
  return rows
    .sort((a, b) => order.get(a.proposal_id)! - order.get(b.proposal_id)!)
    .map((r) => ({ data: r.data, status: r.status, expires_at: r.expires_at }));
}
