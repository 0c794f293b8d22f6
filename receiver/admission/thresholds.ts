/**
 * The thresholds in force: each one configured (SVC_RECEIVER_ADMISSION_*), or else its
 * shipped default. Shipped defaults are the tuning guide's starting values randomised
 * log-uniformly in [0.5×, 2×] (supplement §2.9: so no two deployments share, or publish, the
 * same values), drawn once per deployment and kept in PostgreSQL so every instance and
 * every restart agrees. A threshold still at its shipped default is what
 * `threshold_tuning_overdue` is about.
 */
import type { Pool } from '../../shared/infra/pg.js';
import { GUIDE_VALUES, THRESHOLD_NAMES, type Thresholds } from './clauses.js';

export type ThresholdName = (typeof THRESHOLD_NAMES)[number];

export interface ThresholdsInForce {
  values: Thresholds;
  /** The thresholds not configured, i.e. at their shipped (randomised) default. */
  atDefault: ThresholdName[];
}

/** guide × 2^u, u uniform in [-1, 1]: log-uniform in [0.5×, 2×]. */
export function randomisedStart(guide: number, random: () => number): number {
  return guide * 2 ** (2 * random() - 1);
}

export async function thresholdsInForce(
  pool: Pool,
  schema: string,
  configured: Partial<Thresholds>,
  random: () => number = Math.random,
): Promise<ThresholdsInForce> {
  const atDefault = THRESHOLD_NAMES.filter((n) => configured[n] === undefined);
  const values: Thresholds = { ...GUIDE_VALUES, ...stripUndefined(configured) };
  if (atDefault.length > 0) {
    // First writer wins: concurrent starters end up with the same draw.
    const { rows } = await pool.query<{ name: string; value: number }>(
      `WITH drawn AS (
         INSERT INTO ${schema}.admission_defaults (name, value)
         SELECT * FROM unnest($1::text[], $2::float8[]) ON CONFLICT (name) DO NOTHING
         RETURNING name, value)
       SELECT name, value FROM drawn
       UNION ALL
       SELECT name, value FROM ${schema}.admission_defaults WHERE name = ANY($1::text[])`,
      [atDefault, atDefault.map((n) => randomisedStart(GUIDE_VALUES[n], random))],
    );
    for (const r of rows) values[r.name as ThresholdName] = Number(r.value);
  }
  return { values, atDefault };
}

function stripUndefined(p: Partial<Thresholds>): Partial<Thresholds> {
  return Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined));
}
