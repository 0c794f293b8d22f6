/**
 * Creatives at the sales agent: sync_creatives (upsert, assignments, dry_run,
 * delete_missing) and list_creatives, plus the assignment check packages share.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from '../../../shared/json/canonical.js';
import { ASSET_TYPES, resolveFormat, type FormatRow } from '../../creative/formats.js';
import { canonicalFormat } from '../../creative/canonical.js';
import { decodeCursor, pageInfo, PaginationRequestSchema } from '../cursor.js';
import { protocolError, taskError, TaskError } from '../../runtime/errors.js';
import type { TaskRegistry } from '../../runtime/registry.js';
import type { TaskContext } from '../../runtime/types.js';
import { FormatIdSchema, requireIdempotencyKey } from '../../runtime/validation.js';
import { emitAccountEvent } from '../accounts/accounts.js';
import { resolvePendingAssignments } from './assignments.js';
import { applyAssignments, type AppliedAssignment } from './sync-assignments.js';

export const AssetSchema = z.looseObject({
  asset_type: z.enum(ASSET_TYPES),
  url: z.string().max(65536).optional(),
  width: z.number().int().positive().optional(),
  height: z.number().int().positive().optional(),
  duration_ms: z.number().int().positive().optional(),
  content: z.string().max(1_000_000).optional(),
});

const AssetValueSchema = z.union([AssetSchema, z.record(z.string(), z.unknown())]);

/**
 * A creative names its format by the legacy `format_id` or (3.1+, the 3.2 default) by a
 * canonical `format_kind` with an optional `format_option_ref` (core/creative-asset.json:
 * exactly one of the two). A canonical slot may hold several assets (an array).
 */
export const CreativeSchema = z
  .looseObject({
    creative_id: z.string().min(1).max(255),
    name: z.string().min(1).max(500),
    format_id: FormatIdSchema.optional(),
    format_kind: z.string().min(1).max(64).optional(),
    format_option_ref: z.looseObject({ format_option_id: z.string().min(1).max(255) }).optional(),
    assets: z.record(
      z.string(),
      z.union([AssetValueSchema, z.array(AssetValueSchema).min(1).max(100)]),
    ),
  })
  .superRefine((c, ctx) => {
    if ((c.format_id === undefined) === (c.format_kind === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['format_id'],
        message: 'give exactly one of format_id and format_kind',
      });
    }
  });

/**
 * How a creative's format is stored (the `format_id` jsonb column): the legacy format id
 * as is, or the canonical reference `{format_kind, format_option_ref?}`.
 */
export function storedFormatRef(c: {
  format_id?: unknown;
  format_kind?: string;
  format_option_ref?: unknown;
}): unknown {
  if (c.format_id !== undefined) return c.format_id;
  return {
    format_kind: c.format_kind,
    ...(c.format_option_ref !== undefined ? { format_option_ref: c.format_option_ref } : {}),
  };
}

/** A stored format reference as the creative's wire members (`format_id` or `format_kind`). */
export function wireFormatRef(stored: unknown): Record<string, unknown> {
  const ref = stored as { format_kind?: unknown } | null;
  return ref && typeof ref === 'object' && typeof ref.format_kind === 'string'
    ? (ref as Record<string, unknown>)
    : { format_id: stored };
}

/** Tag documents a video/audio slot takes in place of a hosted file (published asset types). */
const TAG_FOR_SLOT: Record<string, string> = { video: 'vast', audio: 'daast' };

/** The manifest's assets against the format: required ones present with the right type. */
export function checkAssets(
  format: FormatRow,
  assets: Record<string, unknown>,
  field: string,
): void {
  for (const req of format.assets_required) {
    const value = assets[req.asset_id] as { asset_type?: string } | unknown[] | undefined;
    // A slot holding several assets (canonical `min`/`max` slots) is checked item by item.
    const items = (Array.isArray(value) ? value : [value]) as Array<
      { asset_type?: string } | undefined
    >;
    for (const [j, asset] of items.entries()) {
      checkAsset(
        format,
        req,
        asset,
        Array.isArray(value) ? `${field}.${req.asset_id}[${j}]` : `${field}.${req.asset_id}`,
      );
    }
  }
}

function checkAsset(
  format: FormatRow,
  req: FormatRow['assets_required'][number],
  asset: { asset_type?: string } | undefined,
  field: string,
): void {
  {
    if (!asset) {
      if (req.required) {
        throw taskError(
          'VALIDATION_ERROR',
          `format ${format.format_id} requires the ${req.asset_id} asset`,
          { field, status: 422 },
        );
      }
      return;
    }
    if (asset.asset_type !== req.asset_type && TAG_FOR_SLOT[req.asset_type] !== asset.asset_type) {
      throw taskError(
        'VALIDATION_ERROR',
        `${req.asset_id} must be a ${req.asset_type} asset for format ${format.format_id}`,
        { field: `${field}.asset_type`, status: 422 },
      );
    }
  }
}

/** Published 3.x: one creative to one package (weight and placements are not modelled). */
const AssignmentItemSchema = z.looseObject({
  creative_id: z.string().min(1).max(255),
  package_id: z.string().min(1).max(255),
  weight: z.number().min(0).max(100).optional(),
  placement_ids: z.array(z.string().min(1)).min(1).max(100).optional(),
});

const SyncCreativesSchema = z
  .looseObject({
    creatives: z.array(CreativeSchema).min(1).max(100),
    // The published array form, or the older creative_id -> package ids map.
    assignments: z
      .union([
        z.array(AssignmentItemSchema).min(1).max(1000),
        z.record(z.string(), z.array(z.string().min(1)).max(100)),
      ])
      .optional(),
    dry_run: z.boolean().optional(),
    delete_missing: z.boolean().optional(),
    idempotency_key: z.string().optional(),
    context: z.unknown().optional(),
    push_notification_config: z.unknown().optional(),
  })
  .refine(
    // The published request names its `account` (required in 3.1.19 and 3.2.0-beta.5) and
    // gives `assignments` as an array; the spec's older form has neither (assignments as a
    // creative_id -> package ids map) and no key. A request without an account or an
    // assignments array cannot be told from the older form: its key is honoured when sent.
    ...requireIdempotencyKey((v) => v.account === undefined && !Array.isArray(v.assignments)),
  );

/**
 * The creative's format, resolved and its assets checked; a TaskError (unknown format,
 * missing or mistyped asset) is returned, not thrown, so it fails only this creative.
 */
export async function checkedFormat(
  ctx: TaskContext,
  c: z.output<typeof CreativeSchema>,
  i: number,
): Promise<FormatRow | TaskError> {
  try {
    const format =
      c.format_kind !== undefined
        ? canonicalFormat(c.format_kind, `creatives[${i}].format_kind`)
        : await resolveFormat(
            ctx.db,
            ctx.schema,
            c.format_id!,
            ctx.settings.urls.creative,
            `creatives[${i}].format_id`,
          );
    checkAssets(format, c.assets, `creatives[${i}].assets`);
    return format;
  } catch (err) {
    if (err instanceof TaskError) return err;
    throw err;
  }
}

type SyncParams = z.output<typeof SyncCreativesSchema>;
type SyncCreative = z.output<typeof CreativeSchema>;
type ResultItem = Record<string, unknown>;

/** What the upsert stage leaves for the later ones. */
interface UpsertOutcome {
  /** Every creative_id of the request (delete_missing keeps these). */
  seen: Set<string>;
  /** One result per creative, in request order. */
  results: ResultItem[];
  /** The creatives this sync created (each gets a creative.status_changed event). */
  created: string[];
}

/**
 * Stage 1: each creative checked against its format and upserted in request order; a
 * duplicate creative_id fails the whole request, a format/asset failure only its item.
 */
async function upsertCreatives(
  ctx: TaskContext,
  principalId: string,
  creatives: SyncCreative[],
): Promise<UpsertOutcome> {
  const seen = new Set<string>();
  const results: ResultItem[] = [];
  const created: string[] = [];
  for (const [i, c] of creatives.entries()) {
    if (seen.has(c.creative_id)) {
      throw taskError('VALIDATION_ERROR', 'creative_id appears twice in this sync', {
        field: `creatives[${i}].creative_id`,
      });
    }
    seen.add(c.creative_id);
    const format = await checkedFormat(ctx, c, i);
    if (format instanceof TaskError) {
      // Per item, as the published result allows: the others are still applied.
      results.push({
        creative_id: c.creative_id,
        action: 'failed',
        errors: [protocolError(format)],
      });
      continue;
    }
    const action = await upsertCreative(ctx, principalId, c, format);
    if (action === 'created') created.push(c.creative_id);
    results.push({ creative_id: c.creative_id, action, status: wireCreativeStatus('active') });
  }
  return { seen, results, created };
}

/** One creative's row: compared with what is stored (locked), written unless unchanged. */
async function upsertCreative(
  ctx: TaskContext,
  principalId: string,
  c: SyncCreative,
  format: FormatRow,
): Promise<'created' | 'updated' | 'unchanged'> {
  const s = ctx.schema;
  const { rows } = await ctx.db.query<{
    name: string;
    format_id: unknown;
    assets: unknown;
    status: string;
  }>(
    `SELECT name, format_id, assets, status FROM ${s}.creatives WHERE principal_id = $1 AND creative_id = $2 FOR UPDATE`,
    [principalId, c.creative_id],
  );
  const before = rows[0];
  let action: 'created' | 'updated' | 'unchanged';
  if (!before) action = 'created';
  else if (
    before.status !== 'archived' &&
    before.name === c.name &&
    canonicalJson(before.format_id) === canonicalJson(storedFormatRef(c)) &&
    canonicalJson(before.assets) === canonicalJson(c.assets)
  ) {
    action = 'unchanged';
  } else action = 'updated';
  if (action !== 'unchanged') {
    await ctx.db.query(
      `INSERT INTO ${s}.creatives (principal_id, creative_id, name, format_id, format_type, assets, status)
       VALUES ($1,$2,$3,$4,$5,$6,'active')
       ON CONFLICT (principal_id, creative_id) DO UPDATE SET name = EXCLUDED.name,
         format_id = EXCLUDED.format_id, format_type = EXCLUDED.format_type, assets = EXCLUDED.assets,
         status = 'active', updated_at = now()`,
      [principalId, c.creative_id, c.name, storedFormatRef(c), format.type, c.assets],
    );
  }
  return action;
}

/**
 * Stage 2: the packages that named a stored creative before it existed get it now; each
 * result of such a creative carries `assigned_to`. Returns creative_id -> package ids.
 */
async function attachPendingAssignments(
  ctx: TaskContext,
  results: ResultItem[],
): Promise<Map<string, string[]>> {
  const resolved = await resolvePendingAssignments(
    ctx,
    results.filter((r) => r.action !== 'failed').map((r) => r.creative_id as string),
  );
  for (const r of results) {
    const packageIds = resolved.get(r.creative_id as string);
    if (packageIds) r.assigned_to = packageIds;
  }
  return resolved;
}

/**
 * Stage 3 (delete_missing): the principal's other live creatives archived and unassigned;
 * a `deleted` result is appended for each.
 */
async function archiveMissing(
  ctx: TaskContext,
  principalId: string,
  seen: Set<string>,
  results: ResultItem[],
): Promise<void> {
  const s = ctx.schema;
  const { rows } = await ctx.db.query<{ creative_id: string }>(
    `UPDATE ${s}.creatives SET status = 'archived', updated_at = now()
      WHERE principal_id = $1 AND status <> 'archived' AND NOT (creative_id = ANY($2))
      RETURNING creative_id`,
    [principalId, [...seen]],
  );
  for (const r of rows) {
    await ctx.db.query(
      `DELETE FROM ${s}.creative_assignments WHERE principal_id = $1 AND creative_id = $2`,
      [principalId, r.creative_id],
    );
    // The published result of a deletion carries no status.
    results.push({ creative_id: r.creative_id, action: 'deleted' });
  }
}

/**
 * Stage 5 (not on dry_run): the account events, created creatives' status changes first,
 * then each assignment change (pending ones resolved, then the request's).
 */
async function emitSyncEvents(
  ctx: TaskContext,
  created: string[],
  resolved: Map<string, string[]>,
  applied: AppliedAssignment[],
): Promise<void> {
  for (const id of created) {
    await emitAccountEvent(ctx, 'creative.status_changed', `creative.${id}.active`, {
      creative_id: id,
      transition: { from: 'processing', to: wireCreativeStatus('active') },
      reason_code: 'approved',
      initiator: 'seller',
    });
  }
  const changes = [
    ...[...resolved].map(([creative_id, package_ids]) => ({ creative_id, package_ids })),
    ...applied,
  ];
  for (const a of changes) {
    const ids = [...a.package_ids].sort();
    const digest = createHash('sha256').update(ids.join(',')).digest('hex').slice(0, 12);
    await emitAccountEvent(
      ctx,
      'creative.assignment_changed',
      `creative.${String(a.creative_id)}.assign.${digest}`,
      {
        creative_id: a.creative_id,
        package_ids: ids,
        initiator: 'buyer',
      },
    );
  }
}

/**
 * sync_creatives as its stages, all under one savepoint so dry_run can roll them back
 * (and emit nothing).
 */
async function syncCreatives(params: SyncParams, ctx: TaskContext) {
  const principalId = ctx.principal!.principal_id;
  const previewOnly = params.dry_run === true;
  await ctx.db.query('SAVEPOINT sync_creatives');
  const { seen, results, created } = await upsertCreatives(ctx, principalId, params.creatives);
  const resolved = await attachPendingAssignments(ctx, results);
  if (params.delete_missing) await archiveMissing(ctx, principalId, seen, results);
  const assignmentResults = await applyAssignments(ctx, principalId, params.assignments);
  if (previewOnly) {
    await ctx.db.query('ROLLBACK TO SAVEPOINT sync_creatives');
  } else {
    await emitSyncEvents(ctx, created, resolved, assignmentResults);
  }
  return {
    status: 'completed' as const,
    body: {
      creatives: results,
      assignments: assignmentResults,
      ...(previewOnly ? { dry_run: true } : {}),
    },
  };
}

/**
 * Creative statuses: ours are `active` and `archived`; the published enum says `approved`
 * for an active creative (a filter may use either word).
 */
export function wireCreativeStatus(status: string): string {
  return status === 'active' ? 'approved' : status;
}

function internalCreativeStatuses(list: string[] | undefined): string[] | null {
  if (!list) return null;
  return [...new Set(list.map((st) => (st === 'approved' ? 'active' : st)))];
}

const ListCreativesSchema = z.looseObject({
  filters: z
    .looseObject({
      /** The published filter name; `status` is the spec's older one. */
      statuses: z.array(z.string().min(1)).optional(),
      status: z.array(z.string().min(1)).optional(),
      format_types: z.array(z.enum(['video', 'display', 'audio', 'dooh'])).optional(),
      creative_ids: z.array(z.string().min(1)).max(500).optional(),
    })
    .optional(),
  pagination: PaginationRequestSchema.optional(),
  /** The spec's older offset paging. */
  limit: z.number().int().min(1).max(500).optional(),
  offset: z.number().int().min(0).optional(),
});

/**
 * Stored assets as the published asset objects: a video or image the buyer sent without
 * its dimensions takes them from the creative's format.
 */
export function wireAssets(
  assets: Record<string, unknown>,
  format: { width: number | null; height: number | null },
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [id, value] of Object.entries(assets ?? {})) {
    const a = value as Record<string, unknown> | null;
    if (
      a &&
      typeof a === 'object' &&
      (a.asset_type === 'video' || a.asset_type === 'image') &&
      (a.width === undefined || a.height === undefined) &&
      format.width !== null &&
      format.height !== null
    ) {
      out[id] = { width: format.width, height: format.height, ...a };
    } else out[id] = value;
  }
  return out;
}

async function listCreatives(params: z.output<typeof ListCreativesSchema>, ctx: TaskContext) {
  const s = ctx.schema;
  const f = params.filters ?? {};
  const limit = params.pagination?.max_results ?? params.limit ?? 50;
  const offset =
    params.pagination?.cursor !== undefined
      ? decodeCursor(params.pagination.cursor)
      : (params.offset ?? 0);
  const args = [
    ctx.principal!.principal_id,
    internalCreativeStatuses(f.statuses ?? f.status),
    f.format_types ?? null,
    f.creative_ids ?? null,
  ];
  const where = `principal_id = $1 AND ($2::text[] IS NULL OR status = ANY($2))
     AND ($3::text[] IS NULL OR format_type = ANY($3)) AND ($4::text[] IS NULL OR creative_id = ANY($4))`;
  const { rows: countRows } = await ctx.db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${s}.creatives WHERE ${where}`,
    args,
  );
  const { rows } = await ctx.db.query(
    `SELECT c.*, f.width AS format_width, f.height AS format_height,
        COALESCE((SELECT array_agg(a.package_id ORDER BY a.package_id) FROM ${s}.creative_assignments a
        WHERE a.principal_id = c.principal_id AND a.creative_id = c.creative_id), '{}') AS package_ids
       FROM ${s}.creatives c LEFT JOIN ${s}.formats f ON f.format_id = c.format_id->>'id'
      WHERE ${where} ORDER BY c.created_at, c.creative_id LIMIT $5 OFFSET $6`,
    [...args, limit, offset],
  );
  const total = Number(countRows[0]?.n ?? 0);
  return {
    creatives: rows.map((r) => {
      const created = (r.created_at as Date).toISOString();
      const updated = (r.updated_at as Date).toISOString();
      return {
        creative_id: r.creative_id,
        name: r.name,
        ...wireFormatRef(r.format_id),
        status: wireCreativeStatus(r.status as string),
        assets: wireAssets(r.assets as Record<string, unknown>, {
          width: r.format_width as number | null,
          height: r.format_height as number | null,
        }),
        assigned_package_ids: r.package_ids,
        created_date: created,
        updated_date: updated,
        // The spec's older names, kept for the clients that read them.
        created_at: created,
        updated_at: updated,
      };
    }),
    query_summary: { total_matching: total, returned: rows.length },
    pagination: pageInfo(offset, rows.length, total),
  };
}

export function registerCreativeTasks(registry: TaskRegistry): void {
  registry.add({
    name: 'sync_creatives',
    description: 'Upload or update creatives and assign them to packages.',
    agent: 'sales',
    schema: SyncCreativesSchema,
    auth: { tier: 'authenticated', permission: { resource: 'creatives', permission: 'write' } },
    expectedDuration: 'minutes to days',
    mode: 'sync',
    mutating: true,
    webhookTaskType: 'sync_creatives',
    errorShape: 'single',
    handle: syncCreatives,
  });
  registry.add({
    name: 'list_creatives',
    description: 'List your creatives with filters and paging.',
    agent: 'sales',
    schema: ListCreativesSchema,
    auth: { tier: 'authenticated', permission: { resource: 'creatives', permission: 'read' } },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    errorShape: 'single',
    handle: async (params, ctx) => ({
      status: 'completed',
      body: await listCreatives(params, ctx),
    }),
  });
}
