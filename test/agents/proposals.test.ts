/**
 * get_products proposals: a 3.x brief returns plans beside the products, refine answers
 * each entry by position, finalize commits all named proposals or none; and every
 * malformed refine request is refused with the field named.
 */
import t from 'tap';
import { buyer, harness, viewer } from './support/core.js';

interface Proposal {
  proposal_id: string;
  proposal_status: string;
  expires_at: string;
  allocations: Array<{
    product_id: string;
    allocation_percentage: number;
    pricing_option_id: string;
  }>;
}

const BRIEF = 'Premium video and display across outdoor lifestyle and sports';

t.test('brief -> proposals -> refine -> finalize', async (t) => {
  const h = await harness(t);
  const c = buyer(h);

  const older = await h.ok('sales', 'get_products', { brief: BRIEF }, c);
  t.notOk('proposals' in older, 'the older request (no buying_mode) gets no proposals');
  const anonymous = await h.ok('sales', 'get_products', { buying_mode: 'brief', brief: BRIEF });
  t.notOk('proposals' in anonymous, 'no proposals without credentials');

  const brief = await h.ok('sales', 'get_products', { buying_mode: 'brief', brief: BRIEF }, c);
  const proposals = brief.proposals as Proposal[];
  t.ok(proposals.length >= 1, 'a 3.x brief gets proposals');
  const products = new Set(
    (brief.products as Array<{ product_id: string }>).map((p) => p.product_id),
  );
  for (const p of proposals) {
    t.equal(p.proposal_status, 'draft');
    t.equal(Date.parse(p.expires_at), h.clock.nowMs() + 24 * 3600_000, 'draft pricing good a day');
    t.equal(
      p.allocations.reduce((n, a) => n + a.allocation_percentage, 0),
      100,
      'allocations sum to 100',
    );
    t.ok(
      p.allocations.every((a) => products.has(a.product_id) && a.pricing_option_id),
      'allocations name returned products and a pricing option',
    );
  }
  const [first, second] = proposals;

  // Refine: one answer per entry, in order.
  const productId = [...products][0]!;
  const refined = await h.ok(
    'sales',
    'get_products',
    {
      buying_mode: 'refine',
      refine: [
        { scope: 'proposal', proposal_id: first!.proposal_id, ask: 'more ctv' },
        { scope: 'proposal', proposal_id: 'prop_unknown' },
        { scope: 'request', ask: 'video' },
        { scope: 'request', ask: 'zzzqqq' },
        { scope: 'product', product_id: productId, action: 'omit' },
        { scope: 'product', product_id: 'no_such_product' },
        ...(second ? [{ scope: 'proposal', proposal_id: second.proposal_id, action: 'omit' }] : []),
      ],
    },
    c,
  );
  const applied = refined.refinement_applied as Array<Record<string, unknown>>;
  t.match(applied[0], { scope: 'proposal', proposal_id: first!.proposal_id, status: 'partial' });
  t.match(applied[1], { scope: 'proposal', proposal_id: 'prop_unknown', status: 'unable' });
  t.match(applied[2], { scope: 'request', status: 'applied' });
  t.match(applied[3], { scope: 'request', status: 'unable' });
  t.match(applied[4], { scope: 'product', product_id: productId, status: 'applied' });
  t.match(applied[5], { scope: 'product', product_id: 'no_such_product', status: 'unable' });
  t.notOk(
    (refined.products as Array<{ product_id: string }>).some((p) => p.product_id === productId),
    'an omitted product is gone',
  );
  const refinedIds = (refined.proposals as Proposal[]).map((p) => p.proposal_id);
  t.ok(refinedIds.includes(first!.proposal_id));
  if (second) t.notOk(refinedIds.includes(second.proposal_id), 'an omitted proposal is gone');

  // more_like_this adds the product's channel; an ask on an included product is noted.
  const ctv = await h.ok(
    'sales',
    'get_products',
    {
      buying_mode: 'refine',
      refine: [
        { scope: 'request', ask: 'podcast' },
        { scope: 'product', product_id: 'ctv_premium_sports', action: 'more_like_this' },
        { scope: 'product', product_id: 'ctv_premium_sports', ask: 'cheaper please' },
      ],
    },
    c,
  );
  const ctvProducts = ctv.products as Array<{ product_id: string; channel: string }>;
  t.ok(ctvProducts.filter((p) => p.channel === 'ctv').length >= 2, 'same-channel products added');
  t.match((ctv.refinement_applied as unknown[])[1], { status: 'applied' });
  t.match((ctv.refinement_applied as unknown[])[2], { status: 'partial' });

  // A dry run shows plans and commitments and keeps nothing.
  const dryBrief = await h.call(
    'sales',
    'get_products',
    { buying_mode: 'brief', brief: BRIEF },
    c,
    { dryRun: true },
  );
  const dryIds = ((dryBrief as Record<string, unknown>).proposals as Proposal[]).map(
    (p) => p.proposal_id,
  );
  t.ok(dryIds.length > 0, 'a dry-run brief shows proposals');
  const dryFinal = (await h.call(
    'sales',
    'get_products',
    {
      buying_mode: 'refine',
      refine: [{ scope: 'proposal', proposal_id: first!.proposal_id, action: 'finalize' }],
    },
    c,
    { dryRun: true },
  )) as Record<string, unknown>;
  t.equal((dryFinal.proposals as Proposal[])[0]!.proposal_status, 'committed');
  const { rows: stored } = await h.pool.query<{ proposal_id: string; status: string }>(
    `SELECT proposal_id, status FROM ${h.schema}.proposals`,
  );
  t.notOk(
    stored.some((r) => dryIds.includes(r.proposal_id)),
    'dry-run proposals are not stored',
  );
  t.equal(
    stored.find((r) => r.proposal_id === first!.proposal_id)?.status,
    'draft',
    'a dry-run finalize commits nothing',
  );

  // Finalize with one unknown id: nothing is committed.
  const partial = await h.ok(
    'sales',
    'get_products',
    {
      buying_mode: 'refine',
      refine: [
        { scope: 'proposal', proposal_id: first!.proposal_id, action: 'finalize' },
        { scope: 'proposal', proposal_id: 'prop_unknown', action: 'finalize' },
      ],
    },
    c,
  );
  t.same(
    (partial.refinement_applied as Array<{ status: string }>).map((a) => a.status),
    ['unable', 'unable'],
  );
  t.same(
    (partial.proposals as Proposal[]).map((p) => p.proposal_id),
    proposals.map((p) => p.proposal_id),
    "the latest brief's proposals, in the brief's order",
  );
  t.ok(
    (partial.proposals as Proposal[]).every((p) => p.proposal_status === 'draft'),
    'all or none: the known proposal stays a draft',
  );

  // Finalize: committed, firm, held 48 h; again: the hold is kept.
  h.clock.advance(60_000);
  const final = await h.ok(
    'sales',
    'get_products',
    {
      buying_mode: 'refine',
      refine: [{ scope: 'proposal', proposal_id: first!.proposal_id, action: 'finalize' }],
    },
    c,
  );
  const committed = (final.proposals as Proposal[])[0]!;
  t.equal(committed.proposal_id, first!.proposal_id);
  t.equal(committed.proposal_status, 'committed');
  t.equal(Date.parse(committed.expires_at), h.clock.nowMs() + 48 * 3600_000);
  t.ok(
    committed.allocations.every((a) => a.pricing_option_id),
    'firm: every allocation priced',
  );
  h.clock.advance(60_000);
  const again = await h.ok(
    'sales',
    'get_products',
    {
      buying_mode: 'refine',
      refine: [{ scope: 'proposal', proposal_id: first!.proposal_id, action: 'finalize' }],
    },
    c,
  );
  t.equal((again.proposals as Proposal[])[0]!.expires_at, committed.expires_at, 'hold kept');

  // Another principal does not see this buyer's proposals.
  const other = await h.ok(
    'sales',
    'get_products',
    { buying_mode: 'refine', refine: [{ scope: 'proposal', proposal_id: first!.proposal_id }] },
    viewer(h),
  );
  t.match((other.refinement_applied as unknown[])[0], { status: 'unable' });

  // Past the hold, the proposal is gone.
  h.clock.advance(49 * 3600_000);
  const late = await h.ok(
    'sales',
    'get_products',
    {
      buying_mode: 'refine',
      refine: [{ scope: 'proposal', proposal_id: first!.proposal_id, action: 'finalize' }],
    },
    c,
  );
  t.match((late.refinement_applied as unknown[])[0], { status: 'unable' });
  t.same(late.proposals, [], 'expired proposals are not returned');
  await h.ok('sales', 'get_products', { buying_mode: 'brief', brief: BRIEF }, c);
  const { rows } = await h.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${h.schema}.proposals WHERE expires_at <= $1`,
    [h.clock.now()],
  );
  t.equal(Number(rows[0]!.n), 0, 'a new brief drops the expired proposals');

  // Without credentials a refine answers proposals as unable and lists no proposals.
  const anon = await h.ok('sales', 'get_products', {
    buying_mode: 'refine',
    refine: [
      { scope: 'proposal', proposal_id: first!.proposal_id },
      { scope: 'request', ask: 'video' },
    ],
  });
  t.notOk('proposals' in anon);
  t.match((anon.refinement_applied as unknown[])[0], { status: 'unable' });
});

t.test('malformed refine requests', async (t) => {
  const h = await harness(t);
  const c = buyer(h);
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['refine mode without refine[]', { buying_mode: 'refine' }, 'VALIDATION_ERROR', 'refine'],
    [
      'refine[] without refine mode',
      { buying_mode: 'brief', brief: 'x', refine: [{ scope: 'request', ask: 'x' }] },
      'VALIDATION_ERROR',
      'buying_mode',
    ],
    [
      'brief with refine mode',
      { buying_mode: 'refine', brief: 'x', refine: [{ scope: 'request', ask: 'x' }] },
      'VALIDATION_ERROR',
      'brief',
    ],
    ['brief with wholesale', { buying_mode: 'wholesale', brief: 'x' }, 'VALIDATION_ERROR', 'brief'],
    ['unknown mode', { buying_mode: 'auction' }, 'VALIDATION_ERROR', 'buying_mode'],
    ['empty refine[]', { buying_mode: 'refine', refine: [] }, 'VALIDATION_ERROR', 'refine'],
    [
      'unknown scope',
      { buying_mode: 'refine', refine: [{ scope: 'package', ask: 'x' }] },
      'VALIDATION_ERROR',
      'refine[0].scope',
    ],
    [
      'member not published',
      { buying_mode: 'refine', refine: [{ scope: 'request', ask: 'x', weight: 2 }] },
      'VALIDATION_ERROR',
      'refine[0]',
    ],
    [
      'request scope without ask',
      { buying_mode: 'refine', refine: [{ scope: 'request' }] },
      'VALIDATION_ERROR',
      'refine[0].ask',
    ],
    [
      'proposal scope without id',
      { buying_mode: 'refine', refine: [{ scope: 'proposal', action: 'finalize' }] },
      'VALIDATION_ERROR',
      'refine[0].proposal_id',
    ],
    [
      'bad action',
      {
        buying_mode: 'refine',
        refine: [{ scope: 'product', product_id: 'p', action: 'finalize' }],
      },
      'VALIDATION_ERROR',
      'refine[0].action',
    ],
    [
      'finalize mixed with a refinement',
      {
        buying_mode: 'refine',
        refine: [
          { scope: 'proposal', proposal_id: 'p1', action: 'finalize' },
          { scope: 'product', product_id: 'p', action: 'omit' },
        ],
      },
      'INVALID_REQUEST',
      'refine[1]',
    ],
  ];
  for (const [why, params, code, field] of cases) {
    const e = await h.err('sales', 'get_products', params, c);
    t.equal(e.code, code, why);
    t.equal(e.field, field, why);
  }
});
