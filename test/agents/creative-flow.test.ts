/**
 * The typical creative flow: list_creative_formats, build_creative, preview_creative,
 * then sync_creatives at the sales agent.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { buyer, harness } from './support/core.js';

const CREATIVE = 'http://127.0.0.1:3002';

t.test('formats, build, preview, traffic', async (t) => {
  const h = await harness(t, { settings: { previewBaseUrl: 'http://127.0.0.1:3002/previews' } });
  const c = buyer(h, 'creative');

  const all = await h.ok('creative', 'list_creative_formats', {});
  const formats = all.formats as Array<{
    format_id: { id: string; agent_url: string };
    type: string;
    assets: Array<{ item_type: string; asset_id: string; required: boolean }>;
    renders?: Array<{ role: string; dimensions: unknown }>;
  }>;
  t.ok(formats.length >= 10);
  t.ok(
    formats.every(
      (f) =>
        f.format_id.agent_url === CREATIVE &&
        f.assets.length > 0 &&
        f.assets.every((a) => a.item_type === 'individual' && typeof a.required === 'boolean'),
    ),
    'published assets[] (not assets_required)',
  );
  t.ok(
    formats.every((f) =>
      f.type === 'audio'
        ? f.renders === undefined
        : f.renders!.length > 0 && f.renders!.every((r) => r.dimensions !== undefined),
    ),
    'every render has dimensions; audio has no visual render',
  );
  t.same(new Set(formats.map((f) => f.type)), new Set(['display', 'video', 'audio', 'dooh']));
  const small = await h.ok('creative', 'list_creative_formats', {
    type: 'display',
    max_width: 320,
    max_height: 250,
  });
  t.same(
    (small.formats as Array<{ format_id: { id: string } }>).map((f) => f.format_id.id).sort(),
    ['display_300x250', 'display_320x50'],
  );
  const responsive = await h.ok('creative', 'list_creative_formats', { is_responsive: true });
  t.same(
    (responsive.formats as Array<{ format_id: { id: string } }>).map((f) => f.format_id.id),
    ['display_responsive'],
  );
  const audio = await h.ok('creative', 'list_creative_formats', {
    asset_types: ['audio'],
    name_search: '30',
  });
  t.same(
    (audio.formats as Array<{ format_id: { id: string } }>).map((f) => f.format_id.id),
    ['audio_30s'],
  );
  const byId = await h.ok('creative', 'list_creative_formats', {
    format_ids: [{ agent_url: CREATIVE, id: 'video_15s' }],
  });
  t.equal((byId.formats as unknown[]).length, 1);

  // Generation from a brand manifest and a message: deterministic.
  const brand = {
    name: 'Acme Running',
    url: 'https://acme.example',
    colors: { primary: '#ff6600', secondary: '#000000' },
  };
  const build = {
    target_format_id: { agent_url: CREATIVE, id: 'display_300x250' },
    message: 'Run further this spring',
    brand_manifest: brand,
  };
  const built = await h.ok('creative', 'build_creative', build, c);
  const again = await h.ok('creative', 'build_creative', build, c);
  t.same(built.creative_manifest, again.creative_manifest, 'same input, same manifest');
  const manifest = built.creative_manifest as {
    format_id: unknown;
    assets: Record<string, { asset_type: string; url?: string; content?: string; width?: number }>;
  };
  t.same(manifest.format_id, { agent_url: CREATIVE, id: 'display_300x250' });
  t.equal(manifest.assets.image!.asset_type, 'image');
  t.equal(manifest.assets.image!.width, 300);
  t.match(manifest.assets.image!.url, /^data:image\/svg\+xml;base64,/);
  t.match(Buffer.from(manifest.assets.image!.url!.split(',')[1]!, 'base64').toString(), /#ff6600/);
  t.equal(manifest.assets.headline!.content, 'Run further this spring');
  t.equal(manifest.assets.click_url!.url, 'https://acme.example');

  // Generation from promoted_offerings inside a minimal manifest, video target (VAST).
  const video = await h.ok(
    'creative',
    'build_creative',
    {
      target_format_id: { agent_url: CREATIVE, id: 'video_15s' },
      creative_manifest: {
        assets: {
          promoted_offerings: {
            asset_type: 'text',
            brand_manifest: { url: 'https://shoes.example' },
          },
        },
      },
    },
    c,
  );
  const v = (
    video.creative_manifest as {
      assets: Record<
        string,
        { asset_type: string; delivery_type?: string; content?: string; duration_ms?: number }
      >;
    }
  ).assets;
  t.equal(v.video!.duration_ms, 15000);
  t.equal(v.video!.asset_type, 'vast', 'a generated video is an inline VAST asset');
  t.equal(v.video!.delivery_type, 'inline');
  t.match(v.video!.content, /<VAST version="4.2">.*Shoes/);

  // Transformation: the 300x250 manifest into a 728x90 leaderboard.
  const transformed = await h.ok(
    'creative',
    'build_creative',
    {
      target_format_id: { agent_url: CREATIVE, id: 'display_728x90' },
      creative_manifest: manifest,
    },
    c,
  );
  const tm = transformed.creative_manifest as {
    assets: Record<string, { width?: number; height?: number; content?: string; url?: string }>;
  };
  t.equal(tm.assets.image!.width, 728);
  t.equal(tm.assets.image!.height, 90);
  t.equal(tm.assets.headline!.content, 'Run further this spring', 'text carried over');
  t.equal(tm.assets.click_url!.url, 'https://acme.example');
  const nothing = await h.err(
    'creative',
    'build_creative',
    { target_format_id: { agent_url: CREATIVE, id: 'display_728x90' } },
    c,
  );
  t.equal(nothing.code, 'VALIDATION_ERROR');
  t.equal(
    (
      await h.err(
        'creative',
        'build_creative',
        { target_format_id: { agent_url: CREATIVE, id: 'nope' }, message: 'x' },
        c,
      )
    ).code,
    'FORMAT_NOT_SUPPORTED',
  );

  // Preview: single with two device inputs, as URLs served by the agent.
  const single = await h.ok(
    'creative',
    'preview_creative',
    {
      request_type: 'single',
      format_id: manifest.format_id,
      creative_manifest: manifest,
      inputs: [
        { name: 'desktop', macros: { DEVICE_TYPE: 'desktop' } },
        { name: 'mobile', macros: { DEVICE_TYPE: 'mobile' } },
      ],
    },
    c,
  );
  t.equal(single.response_type, 'single');
  const previews = single.previews as Array<{
    preview_id: string;
    renders: Array<{ render_id: string; role: string; output_format: string; preview_url: string }>;
    input: { name: string };
  }>;
  t.equal(previews.length, 2);
  t.same(
    previews.map((p) => p.input.name),
    ['desktop', 'mobile'],
  );
  t.ok(
    previews.every(
      (p) =>
        p.renders.length === 1 &&
        p.renders[0]!.role === 'primary' &&
        p.renders[0]!.output_format === 'url' &&
        p.renders[0]!.preview_url === `http://127.0.0.1:3002/previews/${p.preview_id}`,
    ),
  );
  t.equal(single.expires_at, new Date(h.clock.nowMs() + 86400_000).toISOString());
  const served = await h.core.getPreview(previews[0]!.preview_id);
  t.match(served?.html, /<img src="data:image\/svg\+xml/);
  t.equal(await h.core.getPreview('prv_' + '0'.repeat(32)), null);
  t.equal(await h.core.getPreview('../../etc/passwd'), null);
  h.clock.advance(86400_000 + 1);
  t.equal(await h.core.getPreview(previews[0]!.preview_id), null, 'expired');

  // Batch, as HTML.
  const batch = await h.ok(
    'creative',
    'preview_creative',
    {
      request_type: 'batch',
      output_format: 'html',
      requests: [
        { format_id: manifest.format_id, creative_manifest: manifest },
        {
          format_id: { agent_url: CREATIVE, id: 'video_15s' },
          creative_manifest: video.creative_manifest,
        },
      ],
    },
    c,
  );
  t.equal(batch.response_type, 'batch');
  const results = batch.results as Array<{
    success: boolean;
    creative_id: string;
    response: {
      previews: Array<{ renders: Array<{ preview_html: string; preview_url?: string }> }>;
    };
  }>;
  t.same(
    results.map((r) => [r.success, r.creative_id]),
    [
      [true, 'request_0'],
      [true, 'request_1'],
    ],
  );
  const bp = results.map((r) => r.response.previews[0]!.renders[0]!);
  t.ok(
    bp.every((p) => p.preview_html.startsWith('<!doctype html>') && p.preview_url === undefined),
  );
  t.match(bp[1]!.preview_html, /&#60;VAST/);
  // A manifest that does not match its format: that item fails with the asset path, the
  // others still preview (the published batch result), and a single request is a 422.
  const mixed = await h.ok(
    'creative',
    'preview_creative',
    {
      request_type: 'batch',
      requests: [
        {
          format_id: { agent_url: CREATIVE, id: 'audio_30s' },
          creative_manifest: { assets: manifest.assets },
        },
        { creative_id: 'lib-1', creative_manifest: manifest },
        { format_id: { agent_url: CREATIVE, id: 'audio_30s' }, creative_manifest: manifest },
      ],
    },
    c,
  );
  const mr = mixed.results as Array<{
    success: boolean;
    creative_id: string;
    errors?: Array<{ code: string; field: string }>;
  }>;
  t.same(
    mr.map((r) => [r.success, r.creative_id]),
    [
      [false, 'request_0'],
      [true, 'lib-1'],
      [false, 'request_2'],
    ],
  );
  t.match(mr[0]!.errors, [
    { code: 'VALIDATION_ERROR', field: 'requests[0].creative_manifest.assets.audio' },
  ]);
  t.match(mr[2]!.errors, [{ code: 'VALIDATION_ERROR', field: 'requests[2].format_id' }]);
  const mismatch = await h.err(
    'creative',
    'preview_creative',
    {
      request_type: 'single',
      format_id: { agent_url: CREATIVE, id: 'audio_30s' },
      creative_manifest: { assets: manifest.assets },
    },
    c,
  );
  t.equal(mismatch.status, 422);
  t.equal(mismatch.field, 'creative_manifest.assets.audio');

  // Traffic it at the sales agent.
  const synced = await h.ok(
    'sales',
    'sync_creatives',
    { creatives: [{ creative_id: 'acme-spring-300', name: 'Spring 300x250', ...manifest }] },
    buyer(h),
  );
  t.equal((synced.creatives as Array<{ action: string }>)[0]!.action, 'created');
});

t.test('preview pages never carry script URLs from a manifest', async (t) => {
  const h = await harness(t);
  const r = await h.ok(
    'creative',
    'preview_creative',
    {
      request_type: 'single',
      output_format: 'html',
      format_id: { agent_url: CREATIVE, id: 'display_300x250' },
      creative_manifest: {
        assets: {
          image: { asset_type: 'image', url: 'javascript:alert(1)' },
          headline: { asset_type: 'text', content: '<script>alert(2)</script>' },
          click_url: { asset_type: 'url', url: 'javascript:alert(3)' },
        },
      },
    },
    buyer(h, 'creative'),
  );
  const html = (r.previews as Array<{ renders: Array<{ preview_html: string }> }>)[0]!.renders[0]!
    .preview_html;
  t.notMatch(html, /javascript:/);
  t.notMatch(html, /<script>/);
  t.match(html, /href="#"/);
});

t.test('published request forms and their malformed versions', async (t) => {
  const h = await harness(t);
  const c = buyer(h, 'creative');
  const fmt = (id: string) => ({ agent_url: CREATIVE, id });
  const assets = {
    image: { asset_type: 'image', url: 'https://acme.example/a.png', width: 300, height: 250 },
    click_url: { asset_type: 'url', url: 'https://acme.example' },
  };
  // preview_creative: format_id inside the manifest, none beside it (published).
  const published = await h.ok(
    'creative',
    'preview_creative',
    { request_type: 'single', creative_manifest: { format_id: fmt('display_300x250'), assets } },
    c,
  );
  t.match(published.previews, [
    { format_id: fmt('display_300x250'), renders: [{ role: 'primary' }] },
  ]);
  const bad: Array<[string, unknown, string, string]> = [
    [
      'no format anywhere',
      { request_type: 'single', creative_manifest: { assets } },
      'VALIDATION_ERROR',
      'creative_manifest.format_id',
    ],
    [
      'no manifest',
      { request_type: 'single', format_id: fmt('display_300x250') },
      'VALIDATION_ERROR',
      'creative_manifest',
    ],
    [
      'library creative',
      { request_type: 'single', creative_id: 'c1' },
      'CREATIVE_NOT_FOUND',
      'creative_id',
    ],
    ['variant', { request_type: 'variant', variant_id: 'v1' }, 'VALIDATION_ERROR', 'request_type'],
    [
      'format id as a string',
      { request_type: 'single', creative_manifest: { format_id: 'display_300x250', assets } },
      'INVALID_FORMAT_ID',
      'creative_manifest.format_id',
    ],
    [
      'unknown format',
      { request_type: 'single', creative_manifest: { format_id: fmt('nope'), assets } },
      'FORMAT_NOT_SUPPORTED',
      'creative_manifest.format_id.id',
    ],
    [
      'bad output format',
      {
        request_type: 'single',
        output_format: 'pdf',
        creative_manifest: { format_id: fmt('display_300x250'), assets },
      },
      'VALIDATION_ERROR',
      'output_format',
    ],
  ];
  for (const [name, params, code, field] of bad) {
    const e = await h.err('creative', 'preview_creative', params, c);
    t.equal(e.code, code, `${name}: code`);
    t.equal(e.field, field, `${name}: field`);
  }

  // build_creative: brand as a domain reference, several target formats, inline previews.
  const multi = await h.ok(
    'creative',
    'build_creative',
    {
      idempotency_key: randomUUID(),
      brand: { domain: 'acme.example' },
      target_format_ids: [fmt('display_728x90'), fmt('audio_30s')],
      include_preview: true,
      preview_output_format: 'html',
    },
    c,
  );
  const manifests = multi.creative_manifests as Array<{
    format_id: { id: string };
    assets: Record<string, { asset_type: string; url?: string }>;
  }>;
  t.same(
    manifests.map((m) => m.format_id.id),
    ['display_728x90', 'audio_30s'],
  );
  t.equal(manifests[0]!.assets.click_url!.url, 'https://acme.example');
  t.equal(manifests[1]!.assets.audio!.asset_type, 'daast', 'generated audio is inline DAAST');
  const preview = multi.preview as {
    previews: Array<{ renders: Array<{ preview_html: string }> }>;
  };
  t.equal(preview.previews.length, 2);
  t.ok(preview.previews.every((p) => p.renders[0]!.preview_html.startsWith('<!doctype html>')));
  const badBuild: Array<[string, unknown, string]> = [
    [
      'both targets',
      {
        message: 'x',
        target_format_id: fmt('display_300x250'),
        target_format_ids: [fmt('display_300x250')],
      },
      'target_format_id',
    ],
    ['no target', { message: 'x' }, 'target_format_id'],
    ['empty targets', { message: 'x', target_format_ids: [] }, 'target_format_ids'],
    [
      'brand not a domain',
      { brand: { domain: 'not a domain' }, target_format_id: fmt('display_300x250') },
      'brand.domain',
    ],
  ];
  for (const [name, params, field] of badBuild) {
    const e = await h.err('creative', 'build_creative', params, c);
    t.equal(e.code, 'VALIDATION_ERROR', `${name}: code`);
    t.equal(e.field, field, `${name}: field`);
  }
  const unknownTarget = await h.err(
    'creative',
    'build_creative',
    {
      idempotency_key: randomUUID(),
      message: 'x',
      target_format_ids: [fmt('display_300x250'), fmt('nope')],
    },
    c,
  );
  t.equal(unknownTarget.field, 'target_format_ids[1].id');
});
