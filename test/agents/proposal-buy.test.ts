/**
 * create_media_buy by proposal_id: a committed proposal and a total_budget make the buy
 * (packages = the proposal's allocations x total_budget), once; drafts, unknown, expired
 * and executed proposals are refused with the published codes; malformed requests name
 * every offending field at once with `context` echoed.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { errorResponse } from '../../agents/runtime/errors.js';
import { splitBudget } from '../../agents/sales/media-buys/proposal.js';
import { brandProfile } from '../../shared/brand.js';
import { buyer, harness, START, type Harness } from './support/core.js';

interface Proposal {
  proposal_id: string;
  proposal_status: string;
  allocations: Array<{
    product_id: string;
    allocation_percentage: number;
    pricing_option_id: string;
  }>;
  total_budget_guidance?: { min: number; recommended: number };
}

const BRIEF = 'Premium video and display across outdoor lifestyle and sports';
const DAY = 86400_000;

async function brief(h: Harness): Promise<Proposal[]> {
  const r = await h.ok('sales', 'get_products', { buying_mode: 'brief', brief: BRIEF }, buyer(h));
  return r.proposals as Proposal[];
}

async function finalize(h: Harness, id: string): Promise<void> {
  const r = await h.ok(
    'sales',
    'get_products',
    { buying_mode: 'refine', refine: [{ scope: 'proposal', proposal_id: id, action: 'finalize' }] },
    buyer(h),
  );
  t.match(r.refinement_applied, [{ status: 'applied' }]);
}

const request = (proposalId: string, amount: number, extra: Record<string, unknown> = {}) => ({
  idempotency_key: randomUUID(),
  brand: { domain: 'acme.example' },
  proposal_id: proposalId,
  total_budget: { amount, currency: 'USD' },
  start_time: 'asap',
  end_time: new Date(START + 30 * DAY).toISOString(),
  ...extra,
});

t.test('splitBudget: whole cents, the last share takes the rest', async (t) => {
  t.same(splitBudget(100, [34, 33, 33]), [34, 33, 33]);
  t.same(splitBudget(1000.01, [50, 50]), [500, 500.01]);
  t.same(splitBudget(10, [33, 33, 34]), [3.3, 3.3, 3.4]);
});

t.test('a committed proposal becomes a buy once; the others are refused', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp'), settings: { approval: 'never' } });
  const c = buyer(h);
  const proposals = await brief(h);
  const p = proposals[0]!;
  const amount = Math.max(p.total_budget_guidance?.recommended ?? 0, 50_000);

  // A draft is not executable; an id never issued is unknown.
  const draft = await h.err('sales', 'create_media_buy', request(p.proposal_id, amount), c);
  t.match(draft, { code: 'PROPOSAL_NOT_COMMITTED', field: 'proposal_id' });
  const unknown = await h.err('sales', 'create_media_buy', request('prop_nope', amount), c);
  t.match(unknown, { code: 'PROPOSAL_NOT_FOUND', field: 'proposal_id', status: 404 });

  await finalize(h, p.proposal_id);
  const first = request(p.proposal_id, amount, { context: { run: 1 } });
  const buy = await h.ok('sales', 'create_media_buy', first, c);
  t.equal(buy.status, 'completed');
  t.equal(buy.proposal_id, p.proposal_id, 'the executed proposal echoed');
  t.same(buy.context, { run: 1 });
  const packages = buy.packages as Array<{ product_id: string; budget: number }>;
  t.same(
    packages.map((x) => x.product_id),
    p.allocations.map((a) => a.product_id),
    'one package per allocation, in order',
  );
  t.same(
    packages.map((x) => x.budget),
    splitBudget(
      amount,
      p.allocations.map((a) => a.allocation_percentage),
    ),
    'each package its percentage of total_budget',
  );
  const sum = packages.reduce((n, x) => n + x.budget, 0);
  t.ok(Math.abs(sum - amount) < 0.005, 'package budgets add up to total_budget');

  // A retry with the original key replays; a new create of the same proposal is refused.
  const replay = await h.ok('sales', 'create_media_buy', first, c);
  t.equal(replay.replayed, true);
  t.equal(replay.media_buy_id, buy.media_buy_id);
  const again = await h.err('sales', 'create_media_buy', request(p.proposal_id, amount), c);
  t.match(again, { code: 'INVALID_STATE', field: 'proposal_id' });

  // A committed proposal past its hold has expired.
  const fresh = (await brief(h))[0]!;
  await finalize(h, fresh.proposal_id);
  h.clock.advance(49 * 3600_000);
  const expired = await h.err('sales', 'create_media_buy', request(fresh.proposal_id, amount), c);
  t.match(expired, { code: 'PROPOSAL_EXPIRED', field: 'proposal_id' });
});

t.test('a refused create leaves the proposal executable; shares under a minimum', async (t) => {
  const h = await harness(t, { settings: { approval: 'never' } });
  const c = buyer(h);
  // The plan whose guidance has a minimum (an allocation with a minimum spend or fee).
  const p = (await brief(h)).find((x) => (x.total_budget_guidance?.min ?? 0) > 1);
  if (!p) throw new Error('the seeded catalog has a plan with a minimum budget');
  await finalize(h, p.proposal_id);
  const low = await h.err('sales', 'create_media_buy', request(p.proposal_id, 1), c);
  t.match(low, { code: 'BUDGET_TOO_LOW', field: 'total_budget.amount' });
  // Refused after the proposal was read: it was not consumed.
  const late = await h.err(
    'sales',
    'create_media_buy',
    request(p.proposal_id, p.total_budget_guidance!.recommended, {
      end_time: new Date(START - DAY).toISOString(),
      start_time: new Date(START - 2 * DAY).toISOString(),
    }),
    c,
  );
  t.equal(late.code, 'VALIDATION_ERROR');
  const ok = await h.ok(
    'sales',
    'create_media_buy',
    request(p.proposal_id, p.total_budget_guidance!.recommended),
    c,
  );
  t.equal(ok.proposal_id, p.proposal_id);
});

t.test('malformed proposal requests name every offending field at once', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp') });
  const c = buyer(h);
  const context = { correlation_id: 'bad-proposal-buy' };
  const both = await h.err(
    'sales',
    'create_media_buy',
    request('prop_x', 1000, {
      packages: [{ product_id: 'x', pricing_option_id: 'y', budget: 1 }],
      total_budget: undefined,
      idempotency_key: undefined,
      context,
    }),
    c,
  );
  t.equal(both.code, 'VALIDATION_ERROR');
  t.same((both.issues ?? []).map((i) => i.pointer).sort(), [
    '/idempotency_key',
    '/packages',
    '/total_budget',
  ]);
  t.match(errorResponse(both, { brand: 'adcp', context }).body, {
    status: 'failed',
    errors: [{ code: 'VALIDATION_ERROR' }],
    adcp_error: { code: 'VALIDATION_ERROR' },
    context,
  });
  const neither = await h.err(
    'sales',
    'create_media_buy',
    request('prop_x', 1000, { proposal_id: undefined }),
    c,
  );
  t.match(neither, { code: 'VALIDATION_ERROR', field: 'packages' });
});
