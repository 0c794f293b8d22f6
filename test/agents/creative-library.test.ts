/**
 * The creative agent's library: sync_creatives stores, list_creatives filters and pages,
 * build_creative and preview_creative take a library creative_id; malformed requests are
 * refused naming the field. Also: a click-through URL is optional in our formats, and a
 * format_ids filter answers in the request's order at both agents.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { brandProfile } from '../../shared/brand.js';
import { buyer, harness, viewer } from './support/core.js';

const CREATIVE = 'http://127.0.0.1:3002';
const fmt = (id: string, agent_url = CREATIVE) => ({ agent_url, id });
const banner = (id: string, name = `Banner ${id}`) => ({
  creative_id: id,
  name,
  format_id: fmt('display_300x250'),
  // No click_url: optional, as in the published display formats.
  assets: {
    image: { asset_type: 'image', url: 'https://cdn.example/b.png', width: 300, height: 250 },
  },
});

interface Listed {
  creatives: Array<{ creative_id: string; status: string; format_id: { id: string } }>;
  pagination: { has_more: boolean; cursor?: string; total_count?: number };
}

t.test('sync, list, filter, page; build and preview by creative_id', async (t) => {
  const h = await harness(t);
  const c = buyer(h, 'creative');

  const synced = await h.ok(
    'creative',
    'sync_creatives',
    {
      idempotency_key: 'library-sync-0001',
      creatives: [
        banner('b1', 'Trail banner'),
        banner('b2'),
        {
          creative_id: 'v1',
          name: 'Spot',
          format_id: fmt('video_30s'),
          assets: { video: { asset_type: 'video', url: 'https://cdn.example/v.mp4' } },
        },
        { ...banner('bad'), format_id: fmt('display_300x250', 'https://other-creative.example') },
        { creative_id: 'noimg', name: 'No image', format_id: fmt('display_300x250'), assets: {} },
      ],
    },
    c,
  );
  const results = synced.creatives as Array<Record<string, unknown>>;
  t.same(
    results.map((r) => [r.creative_id, r.action]),
    [
      ['b1', 'created'],
      ['b2', 'created'],
      ['v1', 'created'],
      ['bad', 'failed'],
      ['noimg', 'failed'],
    ],
  );
  t.equal(results[0]!.status, 'approved');
  t.match(results[3], { errors: [{ code: 'FORMAT_NOT_SUPPORTED' }] });
  t.match(results[4], {
    errors: [{ code: 'VALIDATION_ERROR', field: 'creatives[4].assets.image' }],
  });

  const again = await h.ok(
    'creative',
    'sync_creatives',
    {
      idempotency_key: randomUUID(),
      creatives: [banner('b1', 'Trail banner'), banner('b2', 'Renamed')],
    },
    c,
  );
  t.same(
    (again.creatives as Array<{ action: string }>).map((r) => r.action),
    ['unchanged', 'updated'],
  );

  const all = (await h.ok('creative', 'list_creatives', {}, c)) as unknown as Listed;
  t.same(
    all.creatives.map((x) => x.creative_id),
    ['b1', 'b2', 'v1'],
  );
  t.equal(all.pagination.total_count, 3);
  const display = (await h.ok(
    'creative',
    'list_creatives',
    { filters: { format_ids: [fmt('display_300x250')] } },
    c,
  )) as unknown as Listed;
  t.same(
    display.creatives.map((x) => x.creative_id),
    ['b1', 'b2'],
  );
  const foreign = (await h.ok(
    'creative',
    'list_creatives',
    { filters: { format_ids: [fmt('display_300x250', 'https://other-creative.example')] } },
    c,
  )) as unknown as Listed;
  t.same(foreign.creatives, [], 'formats of another agent match nothing here');
  const named = (await h.ok(
    'creative',
    'list_creatives',
    { filters: { name_contains: 'trail', creative_ids: ['b1', 'v1'], statuses: ['approved'] } },
    c,
  )) as unknown as Listed;
  t.same(
    named.creatives.map((x) => x.creative_id),
    ['b1'],
  );
  const old = (await h.ok(
    'creative',
    'list_creatives',
    { filters: { format_types: ['video'] } },
    c,
  )) as unknown as Listed;
  t.same(
    old.creatives.map((x) => x.creative_id),
    ['v1'],
    'the older format_types filter',
  );
  const page1 = (await h.ok(
    'creative',
    'list_creatives',
    { pagination: { max_results: 2 } },
    c,
  )) as unknown as Listed;
  t.equal(page1.creatives.length, 2);
  t.equal(page1.pagination.has_more, true);
  const page2 = (await h.ok(
    'creative',
    'list_creatives',
    { pagination: { max_results: 2, cursor: page1.pagination.cursor } },
    c,
  )) as unknown as Listed;
  t.same(
    page2.creatives.map((x) => x.creative_id),
    ['v1'],
  );
  t.equal(page2.pagination.has_more, false);

  // Another principal's library is its own.
  const theirs = (await h.ok(
    'creative',
    'list_creatives',
    {},
    viewer(h, 'creative'),
  )) as unknown as Listed;
  t.same(theirs.creatives, []);

  // build_creative and preview_creative from the library.
  const built = await h.ok(
    'creative',
    'build_creative',
    {
      idempotency_key: randomUUID(),
      creative_id: 'b1',
      target_format_id: fmt('display_728x90'),
      message: 'Go further',
    },
    c,
  );
  t.match(built.creative_manifest, { format_id: { id: 'display_728x90' } });
  const preview = await h.ok(
    'creative',
    'preview_creative',
    { request_type: 'single', creative_id: 'b1', output_format: 'html' },
    c,
  );
  t.match(preview, {
    response_type: 'single',
    previews: [{ format_id: { id: 'display_300x250' } }],
  });

  // dry_run changes nothing; delete_missing archives the others.
  const dry = await h.ok(
    'creative',
    'sync_creatives',
    {
      idempotency_key: randomUUID(),
      creatives: [banner('b9')],
      dry_run: true,
      delete_missing: true,
    },
    c,
  );
  t.equal(dry.dry_run, true);
  t.equal(
    ((await h.ok('creative', 'list_creatives', {}, c)) as unknown as Listed).creatives.length,
    3,
  );
  const pruned = await h.ok(
    'creative',
    'sync_creatives',
    {
      idempotency_key: randomUUID(),
      creatives: [banner('b1', 'Trail banner')],
      delete_missing: true,
    },
    c,
  );
  t.same(
    (pruned.creatives as Array<{ creative_id: string; action: string }>)
      .filter((r) => r.action === 'deleted')
      .map((r) => r.creative_id)
      .sort(),
    ['b2', 'v1'],
  );
  const archived = (await h.ok(
    'creative',
    'list_creatives',
    { filters: { statuses: ['archived'] } },
    c,
  )) as unknown as Listed;
  t.same(archived.creatives.map((x) => x.creative_id).sort(), ['b2', 'v1']);
  t.equal(
    (
      await h.err(
        'creative',
        'build_creative',
        { idempotency_key: randomUUID(), creative_id: 'v1', target_format_id: fmt('video_15s') },
        c,
      )
    ).code,
    'CREATIVE_NOT_FOUND',
    'an archived creative is not buildable',
  );
});

t.test('malformed library requests', async (t) => {
  const h = await harness(t);
  const c = buyer(h, 'creative');
  const cases: Array<[string, string, Record<string, unknown>, string, string]> = [
    ['no creatives', 'sync_creatives', { creatives: [] }, 'VALIDATION_ERROR', 'creatives'],
    [
      'assignments at a creative agent',
      'sync_creatives',
      {
        idempotency_key: randomUUID(),
        creatives: [banner('a')],
        assignments: [{ creative_id: 'a', package_id: 'p' }],
      },
      'INVALID_REQUEST',
      'assignments',
    ],
    [
      'duplicate creative_id',
      'sync_creatives',
      { idempotency_key: randomUUID(), creatives: [banner('a'), banner('a')] },
      'VALIDATION_ERROR',
      'creatives[1].creative_id',
    ],
    [
      'format id as a string',
      'sync_creatives',
      {
        idempotency_key: randomUUID(),
        creatives: [{ ...banner('a'), format_id: 'display_300x250' }],
      },
      'INVALID_FORMAT_ID',
      'creatives[0].format_id',
    ],
    [
      'unknown status filter',
      'list_creatives',
      { filters: { statuses: ['active'] } },
      'VALIDATION_ERROR',
      'filters.statuses[0]',
    ],
    [
      'bad cursor',
      'list_creatives',
      { pagination: { cursor: 'not-a-cursor' } },
      'VALIDATION_ERROR',
      'pagination.cursor',
    ],
    [
      'page too large',
      'list_creatives',
      { pagination: { max_results: 100000 } },
      'VALIDATION_ERROR',
      'pagination.max_results',
    ],
    [
      'empty name filter',
      'list_creatives',
      { filters: { name_contains: '' } },
      'VALIDATION_ERROR',
      'filters.name_contains',
    ],
    [
      'unknown library creative',
      'preview_creative',
      { request_type: 'single', creative_id: 'nope' },
      'CREATIVE_NOT_FOUND',
      'creative_id',
    ],
    [
      'creative_id and manifest together',
      'build_creative',
      {
        creative_id: 'a',
        creative_manifest: { format_id: fmt('display_300x250'), assets: {} },
        target_format_id: fmt('display_728x90'),
      },
      'VALIDATION_ERROR',
      'creative_id',
    ],
  ];
  for (const [why, task, params, code, field] of cases) {
    const e = await h.err('creative', task, params, c);
    t.equal(e.code, code, why);
    t.equal(e.field, field, why);
  }
  // The library is authenticated like the other tasks.
  for (const task of ['list_creatives', 'sync_creatives']) {
    const e = await h.err('creative', task, { creatives: [banner('a')] });
    t.equal(e.code, 'AUTH_REQUIRED', `${task} without credentials`);
  }
});

t.test('format_ids answers in the request order at both agents', async (t) => {
  const h = await harness(t);
  const ids = [fmt('video_30s'), fmt('display_728x90'), fmt('nope'), fmt('video_30s')];
  for (const agent of ['creative', 'sales'] as const) {
    const r = await h.ok(agent, 'list_creative_formats', { format_ids: ids }, buyer(h, agent));
    t.same(
      (r.formats as Array<{ format_id: { id: string } }>).map((f) => f.format_id.id),
      ['video_30s', 'display_728x90'],
      `${agent}: requested order, unknown and repeated ids left out`,
    );
    const other = await h.ok(agent, 'list_creative_formats', {
      format_ids: [fmt('video_30s', 'https://other-creative.example')],
    });
    t.same(other.formats, [], `${agent}: a format of another creative agent is not ours`);
    const e = await h.err(agent, 'list_creative_formats', { format_ids: ['video_30s'] });
    t.equal(e.code, 'INVALID_FORMAT_ID', `${agent}: a format id as a string`);
  }
  const display = await h.ok('creative', 'list_creative_formats', {
    format_ids: [fmt('display_300x250')],
  });
  const assets = (
    display.formats as Array<{ assets: Array<{ asset_id: string; required: boolean }> }>
  )[0]!.assets;
  t.equal(assets.find((a) => a.asset_id === 'click_url')?.required, false, 'click_url optional');
  t.equal(assets.find((a) => a.asset_id === 'image')?.required, true, 'the image is required');
});

t.test('the test controller seeds the creative library of a sandbox buyer', async (t) => {
  const h = await harness(t, { profile: brandProfile('adcp'), settings: { testController: true } });
  const c = buyer(h, 'creative');
  const sandbox = { brand: { domain: 'acme.example' }, operator: 'acme.example', sandbox: true };
  const seed = (params: Record<string, unknown>) =>
    h.ok(
      'creative',
      'comply_test_controller',
      { scenario: 'seed_creative', account: sandbox, params },
      c,
    );
  t.match(
    await seed({ creative_id: 'seeded-1', fixture: { status: 'pending_review', name: 'Seeded' } }),
    { success: true },
  );
  t.match(await seed({ creative_id: 'seeded-2', fixture: { status: 'live' } }), {
    success: false,
    error: 'INVALID_PARAMS',
  });
  const listed = (await h.ok('creative', 'list_creatives', {}, c)) as unknown as Listed;
  t.same(
    listed.creatives.map((x) => [x.creative_id, x.status]),
    [['seeded-1', 'pending_review']],
    'in the library with its published status',
  );
  const { rows } = await h.pool.query(
    `SELECT 1 FROM ${h.schema}.creatives WHERE creative_id = 'seeded-1'`,
  );
  t.equal(rows.length, 0, 'not in the sales agent creatives');
});
