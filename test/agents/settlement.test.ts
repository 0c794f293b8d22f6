/**
 * The sales agent's settlement inputs (agents/sales/settlement): sync_event_sources (create,
 * update, unchanged, discovery-only, delete_missing, per principal and account) and
 * report_usage beyond revenue share (revenue-share.test.ts has the formula): a record on a
 * CPM buy or on no buy is stored as reported; every malformed request refused
 * VALIDATION_ERROR naming the field, an unknown account ACCOUNT_NOT_FOUND.
 */
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { buyer, harness, viewer } from './support/core.js';

const account = { brand: { domain: 'acmeoutdoor.example' }, operator: 'pinnacle-agency.example' };
let n = 0;
const key = () => `settlement-${++n}-00000000000000000000`;

async function withAccount(t: Parameters<typeof harness>[0]) {
  const h = await harness(t, { profile: brandProfile('adcp') });
  const c = buyer(h);
  await h.ok(
    'sales',
    'sync_accounts',
    { accounts: [{ ...account, billing: 'operator' }], idempotency_key: key() },
    c,
  );
  return { h, c };
}

t.test('sync_event_sources: created, unchanged, updated, listed, deleted', async (t) => {
  const { h, c } = await withAccount(t);
  const sync = (extra: Record<string, unknown>) =>
    h.ok('sales', 'sync_event_sources', { account, idempotency_key: key(), ...extra }, c);
  const web = { event_source_id: 'web', name: 'Site pixel', event_types: ['purchase'] };
  const app = { event_source_id: 'app', action_source: 'app', value_currencies: ['USD'] };
  const first = await sync({ event_sources: [web, app] });
  t.match(first.event_sources, [
    { ...web, action: 'created', managed_by: 'buyer' },
    { ...app, action: 'created' },
  ]);
  const again = await sync({ event_sources: [web, { ...app, name: 'App SDK' }] });
  t.same(
    (again.event_sources as Array<{ action: string }>).map((s) => s.action),
    ['unchanged', 'updated'],
  );
  const listed = await sync({});
  t.same(
    (listed.event_sources as Array<{ event_source_id: string }>).map((s) => s.event_source_id),
    ['app', 'web'],
    'without event_sources: discovery only',
  );
  const pruned = await sync({ event_sources: [web], delete_missing: true });
  t.match(pruned.event_sources, [
    { event_source_id: 'web', action: 'unchanged' },
    { event_source_id: 'app', action: 'deleted' },
  ]);
  t.same(
    ((await sync({})).event_sources as Array<{ event_source_id: string }>).map(
      (s) => s.event_source_id,
    ),
    ['web'],
  );
});

t.test('sync_event_sources: malformed requests and unknown accounts', async (t) => {
  const { h, c } = await withAccount(t);
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ account, event_sources: [] }, 'idempotency_key'],
    [{ idempotency_key: key(), event_sources: [{ event_source_id: 'x' }] }, 'account'],
    [{ idempotency_key: key(), account, event_sources: [] }, 'event_sources'],
    [{ idempotency_key: key(), account, event_sources: [{ name: 'x' }] }, 'event_sources[0]'],
    [
      {
        idempotency_key: key(),
        account,
        event_sources: [{ event_source_id: 'x', event_types: ['sale'] }],
      },
      'event_sources[0].event_types[0]',
    ],
    [
      {
        idempotency_key: key(),
        account,
        event_sources: [{ event_source_id: 'x', value_currencies: ['usd'] }],
      },
      'event_sources[0].value_currencies[0]',
    ],
    [
      {
        idempotency_key: key(),
        account,
        event_sources: [{ event_source_id: 'x', action_source: 'tv' }],
      },
      'event_sources[0].action_source',
    ],
    [
      {
        idempotency_key: key(),
        account,
        event_sources: [{ event_source_id: 'x' }, { event_source_id: 'x' }],
      },
      'event_sources',
    ],
  ];
  for (const [params, field] of bad) {
    const e = await h.err('sales', 'sync_event_sources', params, c);
    t.equal(e.code, 'VALIDATION_ERROR', field);
    t.match(e.field ?? '', field, field);
  }
  const unknown = await h.err(
    'sales',
    'sync_event_sources',
    {
      idempotency_key: key(),
      account: { account_id: 'acct_nope' },
      event_sources: [{ event_source_id: 'x' }],
    },
    c,
  );
  t.equal(unknown.code, 'ACCOUNT_NOT_FOUND');
  const other = await h.err(
    'sales',
    'sync_event_sources',
    { idempotency_key: key(), account, event_sources: [{ event_source_id: 'x' }] },
    viewer(h),
  );
  t.ok(
    ['ACCOUNT_NOT_FOUND', 'PERMISSION_DENIED', 'INSUFFICIENT_PERMISSIONS'].includes(other.code),
    `another principal: ${other.code}`,
  );
});

t.test('report_usage: records stored as reported, malformed requests refused', async (t) => {
  const { h, c } = await withAccount(t);
  const products = (await h.ok('sales', 'get_products', { buying_mode: 'wholesale' }, c))
    .products as Array<{ product_id: string; pricing_options: Array<Record<string, unknown>> }>;
  const cpm = products.find((p) => p.pricing_options.some((o) => o.fixed_price !== undefined))!;
  const option = cpm.pricing_options.find((o) => o.fixed_price !== undefined)!;
  const created = await h.ok(
    'sales',
    'create_media_buy',
    {
      account,
      brand: { domain: 'acmeoutdoor.example' },
      idempotency_key: key(),
      start_time: 'asap',
      end_time: '2099-01-31T00:00:00Z',
      packages: [
        {
          product_id: cpm.product_id,
          pricing_option_id: option.pricing_option_id,
          budget: Math.max(50000, Number(option.min_spend_per_package ?? 0)),
        },
      ],
    },
    c,
  );
  const period = { start: '2099-01-01T00:00:00Z', end: '2099-02-01T00:00:00Z' };
  const record = { account, vendor_cost: 120.5, currency: 'USD', impressions: 10000 };
  const r = await h.ok(
    'sales',
    'report_usage',
    {
      idempotency_key: key(),
      reporting_period: period,
      usage: [
        { ...record, media_buy_id: created.media_buy_id },
        record,
        { ...record, final: false, finalized_at: '2099-02-01T00:00:00Z' },
      ],
    },
    c,
  );
  t.equal(r.accepted, 2, 'a CPM buy and no buy: stored as reported');
  t.match(r.errors, [{ code: 'INVALID_USAGE_DATA', field: 'usage[2].finalized_at' }]);
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ reporting_period: period, usage: [record] }, 'idempotency_key'],
    [{ idempotency_key: key(), usage: [record] }, 'reporting_period'],
    [
      {
        idempotency_key: key(),
        reporting_period: { start: period.end, end: period.start },
        usage: [record],
      },
      'reporting_period.end',
    ],
    [
      {
        idempotency_key: key(),
        reporting_period: { start: '2099-01-01', end: period.end },
        usage: [record],
      },
      'reporting_period.start',
    ],
    [{ idempotency_key: key(), reporting_period: period, usage: [] }, 'usage'],
    [
      { idempotency_key: key(), reporting_period: period, usage: [{ ...record, vendor_cost: -1 }] },
      'usage[0].vendor_cost',
    ],
    [
      { idempotency_key: key(), reporting_period: period, usage: [{ ...record, currency: 'usd' }] },
      'usage[0].currency',
    ],
    [
      {
        idempotency_key: key(),
        reporting_period: period,
        usage: [{ vendor_cost: 1, currency: 'USD' }],
      },
      'usage[0].account',
    ],
    [
      {
        idempotency_key: key(),
        reporting_period: period,
        usage: [{ ...record, impressions: 1.5 }],
      },
      'usage[0].impressions',
    ],
  ];
  for (const [params, field] of bad) {
    const e = await h.err('sales', 'report_usage', params, c);
    t.equal(e.code, 'VALIDATION_ERROR', field);
    t.match(e.field ?? '', field, field);
  }
});
