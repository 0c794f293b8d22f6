/**
 * get_products `buying_mode: 'refine'` (published request `refine[]`): each entry is a
 * change to the request, a product or a proposal, answered position by position in
 * `refinement_applied[]`. Products are re-ranked by the request-level asks, included,
 * omitted or widened ("more like this"); proposals are returned, omitted or finalized.
 * A finalize call names only proposals (the published exclusivity rule) and commits all
 * of them or none.
 */
import { z } from 'zod';
import { briefTerms } from '../../runtime/ranking.js';
import type { TaskContext } from '../../runtime/types.js';
import type { ProductRow } from './product-row.js';
import { commitProposals, liveProposals, wireProposal, type StoredProposal } from './proposals.js';

const Id = z.string().min(1).max(255);
const Ask = z.string().min(1).max(2000);

/** One published refine entry (closed objects, as published). */
const RefineEntrySchema = z.discriminatedUnion('scope', [
  z.strictObject({ scope: z.literal('request'), ask: Ask }),
  z.strictObject({
    scope: z.literal('product'),
    product_id: Id,
    action: z.enum(['include', 'omit', 'more_like_this']).optional(),
    ask: Ask.optional(),
  }),
  z.strictObject({
    scope: z.literal('proposal'),
    proposal_id: Id,
    action: z.enum(['include', 'omit', 'finalize']).optional(),
    ask: Ask.optional(),
  }),
]);
export type RefineEntry = z.output<typeof RefineEntrySchema>;

/**
 * The refine array. A finalize entry makes the call a commit: every entry must then be a
 * proposal finalize, else INVALID_REQUEST naming each other entry.
 */
export const RefineSchema = z
  .array(RefineEntrySchema)
  .min(1)
  .max(50)
  .superRefine((entries, issue) => {
    const finalizing = entries.some((e) => e.scope === 'proposal' && e.action === 'finalize');
    if (!finalizing) return;
    for (const [i, e] of entries.entries()) {
      if (e.scope === 'proposal' && e.action === 'finalize') continue;
      issue.addIssue({
        code: 'custom',
        path: [i],
        message: 'a finalize call may only finalize proposals: send refinements in a call before',
        params: { taskCode: 'INVALID_REQUEST' },
      });
    }
  });

/** What the catalog hands a refine: the caller's filtered products and how to write one. */
export interface CatalogView {
  products: ProductRow[];
  full: boolean;
  wire: (p: ProductRow, matched: string[]) => Record<string, unknown>;
}

type Applied = Record<string, unknown> & { scope: string; status: string };

/** Products after the request-, then product-scoped entries; one answer per such entry. */
function refineProductSet(
  entries: RefineEntry[],
  view: CatalogView,
): { products: Array<{ p: ProductRow; matched: string[] }>; applied: Map<number, Applied> } {
  const applied = new Map<number, Applied>();
  const byId = new Map(view.products.map((p) => [p.product_id, p]));
  let chosen = view.products.map((p) => ({ p, matched: [] as string[] }));
  for (const [i, e] of entries.entries()) {
    if (e.scope !== 'request') continue;
    const terms = briefTerms(e.ask);
    const scored = chosen
      .map((c) => ({ ...c, matched: terms.filter((t) => matchesTerm(c.p, t)) }))
      .filter((c) => c.matched.length > 0);
    if (scored.length > 0) {
      chosen = scored;
      applied.set(i, { scope: 'request', status: 'applied' });
    } else {
      applied.set(i, {
        scope: 'request',
        status: 'unable',
        notes: 'no product matches this ask; the selection is unchanged',
      });
    }
  }
  const omitted = new Set<string>();
  for (const [i, e] of entries.entries()) {
    if (e.scope !== 'product') continue;
    const p = byId.get(e.product_id);
    const action = e.action ?? 'include';
    if (!p) {
      applied.set(i, {
        scope: 'product',
        product_id: e.product_id,
        status: 'unable',
        notes: 'no such product in the catalog you see',
      });
      continue;
    }
    if (action === 'omit') omitted.add(p.product_id);
    else {
      const add =
        action === 'more_like_this' ? view.products.filter((q) => q.channel === p.channel) : [p];
      for (const q of add) {
        if (!chosen.some((c) => c.p === q)) chosen.push({ p: q, matched: [] });
      }
    }
    applied.set(i, {
      scope: 'product',
      product_id: e.product_id,
      // A free-text ask on a product is noted, not negotiated: the rate card is fixed.
      status: e.ask && action !== 'omit' ? 'partial' : 'applied',
      ...(e.ask && action !== 'omit'
        ? { notes: 'product returned at its rate card; the ask is not negotiated here' }
        : {}),
    });
  }
  return { products: chosen.filter((c) => !omitted.has(c.p.product_id)), applied };
}

function matchesTerm(p: ProductRow, term: string): boolean {
  const t = term.length > 4 && term.endsWith('s') ? term.slice(0, -1) : term;
  const hay = `${p.channel} ${p.delivery_type.replace('_', '-')} ${p.keywords.join(' ')} ${p.name} ${p.description}`;
  return hay.toLowerCase().includes(t);
}

/** Proposal answers (include / omit) and the proposals to return. */
async function refineProposalSet(
  entries: RefineEntry[],
  ctx: TaskContext,
  applied: Map<number, Applied>,
): Promise<StoredProposal[]> {
  const named = entries.flatMap((e) => (e.scope === 'proposal' ? [e.proposal_id] : []));
  const live = await liveProposals(ctx, named);
  const omitted = new Set<string>();
  const keep = new Set(live.filter((r) => r.latest).map((r) => r.proposal_id));
  for (const [i, e] of entries.entries()) {
    if (e.scope !== 'proposal') continue;
    const found = live.some((r) => r.proposal_id === e.proposal_id);
    if (!found) {
      applied.set(i, {
        scope: 'proposal',
        proposal_id: e.proposal_id,
        status: 'unable',
        notes: 'no live proposal with this id: it is unknown or expired; send a new brief',
      });
      continue;
    }
    if (e.action === 'omit') omitted.add(e.proposal_id);
    else keep.add(e.proposal_id);
    applied.set(i, {
      scope: 'proposal',
      proposal_id: e.proposal_id,
      status: e.ask && e.action !== 'omit' ? 'partial' : 'applied',
      ...(e.ask && e.action !== 'omit'
        ? {
            notes:
              'allocations are returned as planned: change the plan with product-scoped entries or a new brief',
          }
        : {}),
    });
  }
  return live
    .filter((r) => keep.has(r.proposal_id) && !omitted.has(r.proposal_id))
    .map((r) => ({ data: r.data, status: r.status, expires_at: r.expires_at }));
}

/**
 * A finalize call: every named proposal committed (firm pricing, inventory held until
 * `expires_at`), or none when any is not a live proposal of the caller. In that case
 * each entry says `unable` and the caller's current proposals come back unchanged.
 */
async function finalize(entries: RefineEntry[], ctx: TaskContext) {
  const ids = [...new Set(entries.flatMap((e) => (e.scope === 'proposal' ? [e.proposal_id] : [])))];
  const committed = await commitProposals(ctx, ids);
  if (committed) {
    return {
      proposals: committed.map(wireProposal),
      refinement_applied: entries.map((e) => ({
        scope: 'proposal',
        proposal_id: (e as { proposal_id: string }).proposal_id,
        status: 'applied',
      })),
    };
  }
  const live = await liveProposals(ctx, ids);
  const known = new Set(live.map((r) => r.proposal_id));
  return {
    proposals: live.filter((r) => r.latest).map(wireProposal),
    refinement_applied: entries.map((e) => {
      const id = (e as { proposal_id: string }).proposal_id;
      return {
        scope: 'proposal',
        proposal_id: id,
        status: 'unable',
        notes: known.has(id)
          ? 'not committed: another proposal of this call is unknown or expired (all or none)'
          : 'no live proposal with this id: it is unknown or expired; nothing was committed',
      };
    }),
  };
}

/** The refine answer: products, proposals (for a caller with credentials), refinement_applied. */
export async function refineProducts(
  entries: RefineEntry[],
  ctx: TaskContext,
  view: CatalogView,
): Promise<Record<string, unknown>> {
  const withProposals = view.full && ctx.principal !== null;
  const finalizing = entries.some((e) => e.scope === 'proposal' && e.action === 'finalize');
  const { products, applied } = refineProductSet(finalizing ? [] : entries, view);
  const productsOut = products.map(({ p, matched }) => view.wire(p, matched));
  if (finalizing && withProposals) {
    return { products: productsOut, ...(await finalize(entries, ctx)) };
  }
  let proposals: StoredProposal[] = [];
  if (withProposals) proposals = await refineProposalSet(entries, ctx, applied);
  else {
    for (const [i, e] of entries.entries()) {
      if (e.scope !== 'proposal') continue;
      applied.set(i, {
        scope: 'proposal',
        proposal_id: e.proposal_id,
        status: 'unable',
        notes: 'proposals are made for an authenticated buyer',
      });
    }
  }
  return {
    products: productsOut,
    ...(withProposals ? { proposals: proposals.map(wireProposal) } : {}),
    refinement_applied: entries.map((_, i) => applied.get(i)!),
  };
}
