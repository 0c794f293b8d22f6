/**
 * sync_creatives' assignment stage (service spec, sync_creatives `assignments`): either
 * request form (the published array, the older creative_id -> package ids map) as one
 * entry per creative, checked against the principal's creatives and packages and stored.
 */
import { taskError } from '../../runtime/errors.js';
import type { TaskContext } from '../../runtime/types.js';

/** The request's `assignments` in either form (SyncCreativesSchema's output). */
export type RequestAssignments =
  Array<{ creative_id: string; package_id: string }> | Record<string, string[]> | undefined;

interface CreativeAssignment {
  creativeId: string;
  packageIds: string[];
  /** Where the creative is named (CREATIVE_NOT_FOUND) and each package (PACKAGE_NOT_FOUND). */
  field: string;
  packageFields: string[];
}

/** Either request form as one entry per creative, in first-mention order. */
function assignmentsOf(assignments: RequestAssignments): CreativeAssignment[] {
  if (assignments === undefined) return [];
  if (!Array.isArray(assignments)) {
    return Object.entries(assignments).map(([creativeId, packageIds]) => ({
      creativeId,
      packageIds,
      field: `assignments.${creativeId}`,
      packageFields: packageIds.map((_, j) => `assignments.${creativeId}[${j}]`),
    }));
  }
  const byCreative = new Map<string, CreativeAssignment>();
  for (const [i, a] of assignments.entries()) {
    let entry = byCreative.get(a.creative_id);
    if (!entry) {
      entry = {
        creativeId: a.creative_id,
        packageIds: [],
        field: `assignments[${i}].creative_id`,
        packageFields: [],
      };
      byCreative.set(a.creative_id, entry);
    }
    if (entry.packageIds.includes(a.package_id)) continue;
    entry.packageIds.push(a.package_id);
    entry.packageFields.push(`assignments[${i}].package_id`);
  }
  return [...byCreative.values()];
}

/** An assignment as applied: the result item and the assignment_changed event's subject. */
export interface AppliedAssignment {
  creative_id: string;
  package_ids: string[];
}

/**
 * Stage 4: the request's assignments, per creative in first-mention order; an unknown or
 * archived creative (CREATIVE_NOT_FOUND) or another principal's package
 * (PACKAGE_NOT_FOUND) fails the whole request.
 */
export async function applyAssignments(
  ctx: TaskContext,
  principalId: string,
  assignments: RequestAssignments,
): Promise<AppliedAssignment[]> {
  const s = ctx.schema;
  const applied: AppliedAssignment[] = [];
  for (const { creativeId, packageIds, field, packageFields } of assignmentsOf(assignments)) {
    const { rowCount } = await ctx.db.query(
      `SELECT 1 FROM ${s}.creatives WHERE principal_id = $1 AND creative_id = $2 AND status <> 'archived'`,
      [principalId, creativeId],
    );
    if (!rowCount)
      throw taskError('CREATIVE_NOT_FOUND', `no creative ${creativeId.slice(0, 80)}`, { field });
    const { rows: pkgs } = await ctx.db.query<{ package_id: string }>(
      `SELECT p.package_id FROM ${s}.packages p JOIN ${s}.media_buys b USING (media_buy_id)
        WHERE b.principal_id = $1 AND p.package_id = ANY($2)`,
      [principalId, packageIds],
    );
    const owned = new Set(pkgs.map((p) => p.package_id));
    const bad = packageIds.findIndex((id) => !owned.has(id));
    if (bad >= 0) {
      throw taskError('PACKAGE_NOT_FOUND', `no package ${packageIds[bad]!.slice(0, 80)}`, {
        field: packageFields[bad],
      });
    }
    await ctx.db.query(
      `INSERT INTO ${s}.creative_assignments (principal_id, creative_id, package_id)
       SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING`,
      [principalId, creativeId, packageIds],
    );
    applied.push({ creative_id: creativeId, package_ids: packageIds });
  }
  return applied;
}
