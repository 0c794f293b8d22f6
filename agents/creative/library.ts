/**
 * The creative agent's creative library (published `has_creative_library`): sync_creatives
 * stores a buyer's creatives, checked against our formats, and list_creatives reads them
 * back with the published filters and cursor pagination. The library is the creative
 * agent's own (table `creative_library`), apart from the creatives a sales agent holds for
 * its buys; a creative agent has no packages, so it takes no assignments.
 */
import { z } from 'zod';
import { canonicalJson } from '../../shared/json/canonical.js';
import {
  CreativeSchema,
  checkedFormat,
  storedFormatRef,
  wireAssets,
  wireFormatRef,
} from '../sales/creatives/creatives.js';
import { decodeCursor, pageInfo, PaginationRequestSchema } from '../sales/cursor.js';
import { protocolError, taskError, TaskError } from '../runtime/errors.js';
import type { TaskRegistry } from '../runtime/registry.js';
import type { TaskContext } from '../runtime/types.js';
import { FormatIdSchema, RequiredIdempotencyKeySchema } from '../runtime/validation.js';
import { FORMAT_TYPES, type FormatRow } from './formats.js';

/** The published asset-content-type enum (3.2.0-beta.5, a superset of 3.1.19's). */
const ASSET_CONTENT_TYPES = [
  'image',
  'video',
  'audio',
  'text',
  'markdown',
  'html',
  'css',
  'javascript',
  'zip',
  'vast',
  'daast',
  'url',
  'webhook',
  'brief',
  'catalog',
  'published_post',
] as const;

/** Library creatives need no review here: a stored creative is `approved` at once. */
const STORED = 'approved';

const SyncLibrarySchema = z.looseObject({
  creatives: z.array(CreativeSchema).min(1).max(100),
  /** Published, but a creative agent has no packages to assign to (refused by name). */
  assignments: z.unknown().optional(),
  dry_run: z.boolean().optional(),
  delete_missing: z.boolean().optional(),
  // The spec gives the creative agent no sync_creatives: only the published form exists.
  idempotency_key: RequiredIdempotencyKeySchema,
  account: z.looseObject({}).optional(),
  context: z.unknown().optional(),
});

/** The published creative-status enum (the library's and the test controller's). */
export const CREATIVE_STATUSES = [
  'processing',
  'pending_review',
  'approved',
  'suspended',
  'rejected',
  'archived',
] as const;

const ListLibrarySchema = z.looseObject({
  filters: z
    .looseObject({
      statuses: z.array(z.enum(CREATIVE_STATUSES)).min(1).optional(),
      creative_ids: z.array(z.string().min(1)).min(1).max(500).optional(),
      format_ids: z.array(FormatIdSchema).min(1).max(100).optional(),
      name_contains: z.string().min(1).max(200).optional(),
      /** The spec's older filter by format type. */
      format_types: z.array(z.enum(FORMAT_TYPES)).optional(),
      /** 3.2: an asset type directly in the top-level `assets` map (asset-content-type.json). */
      asset_types: z.array(z.enum(ASSET_CONTENT_TYPES)).min(1).max(16).optional(),
    })
    .optional(),
  pagination: PaginationRequestSchema.optional(),
  account: z.looseObject({}).optional(),
});

/** Stores one creative; its published action (created, updated, unchanged). */
async function storeCreative(
  ctx: TaskContext,
  c: z.output<typeof CreativeSchema>,
  format: FormatRow,
): Promise<string> {
  const s = ctx.schema;
  const principalId = ctx.principal!.principal_id;
  const { rows } = await ctx.db.query<{
    name: string;
    format_id: unknown;
    assets: unknown;
    status: string;
  }>(
    `SELECT name, format_id, assets, status FROM ${s}.creative_library
      WHERE principal_id = $1 AND creative_id = $2 FOR UPDATE`,
    [principalId, c.creative_id],
  );
  const before = rows[0];
  if (
    before &&
    before.status === STORED &&
    before.name === c.name &&
    canonicalJson(before.format_id) === canonicalJson(storedFormatRef(c)) &&
    canonicalJson(before.assets) === canonicalJson(c.assets)
  ) {
    return 'unchanged';
  }
  await ctx.db.query(
    `INSERT INTO ${s}.creative_library (principal_id, creative_id, name, format_id, format_type, assets, status)
     VALUES ($1,$2,$3,$4,$5,$6,$7)
     ON CONFLICT (principal_id, creative_id) DO UPDATE SET name = EXCLUDED.name,
       format_id = EXCLUDED.format_id, format_type = EXCLUDED.format_type,
       assets = EXCLUDED.assets, status = EXCLUDED.status, updated_at = now()`,
    [principalId, c.creative_id, c.name, storedFormatRef(c), format.type, c.assets, STORED],
  );
  return before ? 'updated' : 'created';
}

async function syncLibrary(params: z.output<typeof SyncLibrarySchema>, ctx: TaskContext) {
  if (params.assignments !== undefined) {
    throw taskError(
      'INVALID_REQUEST',
      'a creative agent has no packages: assign creatives with the sales agent',
      { field: 'assignments' },
    );
  }
  const seen = new Set<string>();
  for (const [i, c] of params.creatives.entries()) {
    if (seen.has(c.creative_id)) {
      throw taskError('VALIDATION_ERROR', 'creative_id appears twice in this sync', {
        field: `creatives[${i}].creative_id`,
      });
    }
    seen.add(c.creative_id);
  }
  const previewOnly = params.dry_run === true;
  await ctx.db.query('SAVEPOINT sync_library');
  const results: Array<Record<string, unknown>> = [];
  for (const [i, c] of params.creatives.entries()) {
    const format = await checkedFormat(ctx, c, i);
    if (format instanceof TaskError) {
      // Per item, as the published result allows: the others are still stored.
      results.push({
        creative_id: c.creative_id,
        action: 'failed',
        errors: [protocolError(format)],
      });
      continue;
    }
    const action = await storeCreative(ctx, c, format);
    results.push({ creative_id: c.creative_id, action, status: STORED });
  }
  if (params.delete_missing) {
    const { rows } = await ctx.db.query<{ creative_id: string }>(
      `UPDATE ${ctx.schema}.creative_library SET status = 'archived', updated_at = now()
        WHERE principal_id = $1 AND status <> 'archived' AND NOT (creative_id = ANY($2))
        RETURNING creative_id`,
      [ctx.principal!.principal_id, [...seen]],
    );
    for (const r of rows) results.push({ creative_id: r.creative_id, action: 'deleted' });
  }
  if (previewOnly) await ctx.db.query('ROLLBACK TO SAVEPOINT sync_library');
  return { creatives: results, ...(previewOnly ? { dry_run: true } : {}) };
}

async function listLibrary(params: z.output<typeof ListLibrarySchema>, ctx: TaskContext) {
  const s = ctx.schema;
  const f = params.filters ?? {};
  const limit = params.pagination?.max_results ?? 50;
  const offset = decodeCursor(params.pagination?.cursor);
  // A format id is its agent and id (ours, or another agent's a seeded fixture names);
  // agent URLs compare as formats.ts sameAgentUrl does: no case, no trailing slash.
  const norm = (u: string) => u.replace(/\/+$/, '').toLowerCase();
  const formatKeys = f.format_ids?.map((id) => `${norm(id.agent_url)} ${id.id}`);
  const args = [
    ctx.principal!.principal_id,
    f.statuses ?? null,
    f.creative_ids ?? null,
    formatKeys ?? null,
    f.name_contains ? `%${f.name_contains.replace(/[\\%_]/g, (m) => `\\${m}`)}%` : null,
    f.format_types ?? null,
    f.asset_types ?? null,
  ];
  // asset_types: an object directly in the top-level assets map carries one of the types
  // (not array-valued slots, not nested assets such as cards[].media).
  const where = `c.principal_id = $1 AND ($2::text[] IS NULL OR c.status = ANY($2))
     AND ($3::text[] IS NULL OR c.creative_id = ANY($3))
     AND ($4::text[] IS NULL
       OR rtrim(lower(c.format_id->>'agent_url'), '/') || ' ' || (c.format_id->>'id') = ANY($4))
     AND ($5::text IS NULL OR c.name ILIKE $5)
     AND ($6::text[] IS NULL OR c.format_type = ANY($6))
     AND ($7::text[] IS NULL OR EXISTS (SELECT 1 FROM jsonb_each(c.assets) a
           WHERE jsonb_typeof(a.value) = 'object' AND a.value->>'asset_type' = ANY($7)))`;
  const { rows: countRows } = await ctx.db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${s}.creative_library c WHERE ${where}`,
    args,
  );
  const { rows } = await ctx.db.query<Record<string, unknown>>(
    `SELECT c.*, f.width AS format_width, f.height AS format_height
       FROM ${s}.creative_library c LEFT JOIN ${s}.formats f ON f.format_id = c.format_id->>'id'
      WHERE ${where} ORDER BY c.created_at, c.creative_id LIMIT $8 OFFSET $9`,
    [...args, limit, offset],
  );
  const total = Number(countRows[0]?.n ?? 0);
  return {
    creatives: rows.map((r) => ({
      creative_id: r.creative_id,
      name: r.name,
      ...wireFormatRef(r.format_id),
      status: r.status,
      // A video or image stored without its dimensions takes them from the format.
      assets: wireAssets(r.assets as Record<string, unknown>, {
        width: r.format_width as number | null,
        height: r.format_height as number | null,
      }),
      created_date: (r.created_at as Date).toISOString(),
      updated_date: (r.updated_at as Date).toISOString(),
    })),
    query_summary: { total_matching: total, returned: rows.length },
    pagination: pageInfo(offset, rows.length, total),
  };
}

/**
 * The manifest of a creative in the caller's library (build_creative / preview_creative
 * `creative_id`); CREATIVE_NOT_FOUND naming `field` when it has none by that id.
 */
export async function libraryManifest(
  ctx: TaskContext,
  creativeId: string,
  field: string,
): Promise<{ format_id: unknown; assets: Record<string, unknown> }> {
  const { rows } = await ctx.db.query<{ format_id: unknown; assets: Record<string, unknown> }>(
    `SELECT format_id, assets FROM ${ctx.schema}.creative_library
      WHERE principal_id = $1 AND creative_id = $2 AND status <> 'archived'`,
    [ctx.principal?.principal_id ?? '', creativeId],
  );
  const row = rows[0];
  if (!row) {
    throw taskError(
      'CREATIVE_NOT_FOUND',
      `no creative ${creativeId.slice(0, 80)} in your library`,
      {
        field,
      },
    );
  }
  return { format_id: row.format_id, assets: row.assets };
}

export function registerCreativeLibraryTasks(registry: TaskRegistry): void {
  registry.add({
    name: 'sync_creatives',
    description: "Store or update creatives in this creative agent's library.",
    agent: 'creative',
    schema: SyncLibrarySchema,
    auth: { tier: 'authenticated', permission: { resource: 'creatives', permission: 'write' } },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: true,
    webhookTaskType: 'sync_creatives',
    errorShape: 'single',
    handle: async (params, ctx) => ({ status: 'completed', body: await syncLibrary(params, ctx) }),
  });
  registry.add({
    name: 'list_creatives',
    description: "List the creatives in this creative agent's library, with filters and paging.",
    agent: 'creative',
    schema: ListLibrarySchema,
    auth: { tier: 'authenticated', permission: { resource: 'creatives', permission: 'read' } },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    errorShape: 'single',
    handle: async (params, ctx) => ({ status: 'completed', body: await listLibrary(params, ctx) }),
  });
}
