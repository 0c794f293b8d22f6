/**
 * `list_tasks` (agents/common/list-tasks.ts, published protocol/list-tasks): a submitted
 * create_media_buy task found by id and type (create_media_buy_async_lifecycle.yaml:218),
 * then completed and found by status; filters, sort and pages; only the caller's own tasks
 * at that agent; every malformed filter refused VALIDATION_ERROR naming it.
 */
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { buyer, harness, olderFormBuy, pendingBuyId, START } from './support/core.js';

type Listed = {
  query_summary: { total_matching: number; returned: number; filters_applied: string[] };
  tasks: Array<{ task_id: string; task_type: string; domain: string; status: string }>;
  pagination: { has_more: boolean; cursor?: string };
};

t.test('list_tasks finds the caller tasks as get_task_status sees them', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp') });
  const c = buyer(h);
  const end = new Date(START + 7 * 86400_000).toISOString();
  const first = await h.ok('sales', 'create_media_buy', olderFormBuy('lt-1', end), c);
  const second = await h.ok('sales', 'create_media_buy', olderFormBuy('lt-2', end), c);
  t.equal(first.status, 'submitted', 'a buy awaiting approval is a submitted task');
  const list = async (params: Record<string, unknown>) =>
    (await h.ok('sales', 'list_tasks', params, c)) as unknown as Listed;

  const one = await list({
    filters: { task_ids: [first.task_id], task_type: 'create_media_buy' },
    pagination: { max_results: 1 },
  });
  t.equal(one.query_summary.total_matching, 1);
  t.match(one.tasks, [
    {
      task_id: first.task_id,
      task_type: 'create_media_buy',
      domain: 'media-buy',
      status: 'submitted',
    },
  ]);
  t.same(one.query_summary.filters_applied, ['task_type', 'task_ids']);

  await h.core.operator.approve(await pendingBuyId(h, first.task_id));
  const done = await list({ filters: { task_ids: [first.task_id], status: 'completed' } });
  t.match(done.tasks, [{ task_id: first.task_id, status: 'completed' }], 'completed once approved');
  const polled = await h.ok('sales', 'get_task_status', { task_id: first.task_id }, c);
  t.equal(polled.status, 'completed', 'get_task_status agrees');

  const all = await list({
    filters: { task_type: 'create_media_buy' },
    sort: { direction: 'asc' },
  });
  t.same(
    all.tasks.map((x) => x.task_id),
    [first.task_id, second.task_id],
    'oldest first when asked',
  );
  const paged = await list({
    filters: { task_type: 'create_media_buy' },
    pagination: { max_results: 1 },
  });
  t.equal(paged.tasks.length, 1);
  t.ok(paged.pagination.has_more && paged.pagination.cursor);
  const rest = await list({
    filters: { task_type: 'create_media_buy' },
    pagination: { max_results: 1, cursor: paged.pagination.cursor },
  });
  t.not(rest.tasks[0]!.task_id, paged.tasks[0]!.task_id, 'the next page');
  t.same((await list({ filters: { protocol: 'signals' } })).tasks, [], 'not this agent domain');
  t.same(
    (await list({ filters: { context_contains: 'no-such-thing' } })).tasks,
    [],
    'context_contains narrows',
  );
  // Scoped to the named account (get_signals_async.yaml list_signals_task_wrong_account).
  const ref = { brand: { domain: 'acme.example' }, operator: 'acme.example' };
  const scoped = await h.ok(
    'sales',
    'create_media_buy',
    { ...olderFormBuy('lt-3', end), account: ref, brand: { domain: 'acme.example' } },
    c,
  );
  const mine = await list({ account: ref, filters: { task_type: 'create_media_buy' } });
  t.same(
    mine.tasks.map((x) => x.task_id),
    [scoped.task_id],
    'only the account named',
  );
  const otherAccount = await list({
    account: { brand: { domain: 'otherbrand.example' }, operator: 'other-operator.example' },
    filters: { task_ids: [scoped.task_id] },
  });
  t.same(otherAccount.tasks, [], 'another account sees none of them');
  const signals = (await h.ok(
    'signals',
    'list_tasks',
    {},
    buyer(h, 'signals'),
  )) as unknown as Listed;
  t.notOk(
    signals.tasks.some((x) => x.task_id === first.task_id),
    'another agent lists its own tasks only',
  );
});

t.test('list_tasks refuses malformed filters and needs credentials', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp') });
  const c = buyer(h);
  for (const [params, field] of [
    [{ filters: { status: 'done' } }, 'filters.status'],
    [{ filters: { statuses: [] } }, 'filters.statuses'],
    [{ filters: { task_type: 'get_everything' } }, 'filters.task_type'],
    [{ filters: { protocol: 'tv' } }, 'filters.protocol'],
    [{ filters: { task_ids: [] } }, 'filters.task_ids'],
    [{ filters: { created_after: 'yesterday' } }, 'filters.created_after'],
    [{ filters: { has_webhook: 'yes' } }, 'filters.has_webhook'],
    [{ sort: { field: 'priority' } }, 'sort.field'],
    [{ sort: { direction: 'up' } }, 'sort.direction'],
    [{ pagination: { max_results: 0 } }, 'pagination.max_results'],
    [{ pagination: { cursor: 'not-a-cursor' } }, 'pagination.cursor'],
  ] as const) {
    const e = await h.err('sales', 'list_tasks', params, c);
    t.equal(e.code, 'VALIDATION_ERROR', field);
    t.equal(e.field, field);
  }
  const anonymous = await h.err('sales', 'list_tasks', {});
  t.equal(anonymous.code, 'AUTH_REQUIRED');
});
