/**
 * Sandbox state, read by the tasks and written by the test controller (agents/testing/):
 * which principals are test buyers (`principals.sandbox`), and the fixtures the test
 * controller seeded for them, per account (`sandbox_fixtures`). A sandbox
 * principal's accounts are its sandbox accounts; a production principal has none, so
 * nothing seeded or forced can ever reach production data.
 */
import type { Pool, PoolClient } from '../../shared/infra/pg.js';
import type { AgentKind } from '../auth/principal.js';
import { DEMO_PRINCIPALS } from '../seed.js';

type Db = Pick<Pool | PoolClient, 'query'>;

export async function isSandboxPrincipal(
  db: Db,
  schema: string,
  agent: AgentKind,
  principalId: string,
): Promise<boolean> {
  const { rows } = await db.query<{ sandbox: boolean }>(
    `SELECT sandbox FROM ${schema}.principals WHERE agent = $1 AND principal_id = $2`,
    [agent, principalId],
  );
  return rows[0]?.sandbox === true;
}

/** `svc start` with the controller on: the seeded demo principals are test buyers. */
export async function markDemoPrincipalsSandbox(pool: Pool, schema: string): Promise<void> {
  await pool.query(`UPDATE ${schema}.principals SET sandbox = true WHERE principal_id = ANY($1)`, [
    [...new Set(DEMO_PRINCIPALS.map((p) => p.principal_id))],
  ]);
}

/** The account a request names, as the key its fixtures are kept under. */
export function accountKey(account: unknown): string | null {
  if (!account || typeof account !== 'object') return null;
  const a = account as { account_id?: unknown; brand?: { domain?: unknown }; operator?: unknown };
  if (typeof a.account_id === 'string' && a.account_id !== '') return `id:${a.account_id}`;
  if (a.brand && typeof a.brand.domain === 'string') {
    return `brand:${a.brand.domain.toLowerCase()}|${typeof a.operator === 'string' ? a.operator.toLowerCase() : ''}`;
  }
  return null;
}

export async function putFixture(
  db: Db,
  schema: string,
  key: { agent: AgentKind; principalId: string; account: string; kind: string; id: string },
  data: Record<string, unknown>,
): Promise<void> {
  await db.query(
    `INSERT INTO ${schema}.sandbox_fixtures (agent, principal_id, account_key, kind, fixture_id, data)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (agent, principal_id, account_key, kind, fixture_id)
     DO UPDATE SET data = EXCLUDED.data, created_at = now()`,
    [key.agent, key.principalId, key.account, key.kind, key.id, JSON.stringify(data)],
  );
}

/** Fixtures seeded for the principal's whole test session rather than one account. */
export const SESSION = '*';

/**
 * The fixtures of one kind seeded for this principal's account, or null when the caller is
 * not a sandbox principal, names no account, or nothing was seeded there.
 */
export async function sandboxFixtures(
  db: Db,
  schema: string,
  agent: AgentKind,
  principalId: string | undefined,
  account: unknown,
  kind: string,
): Promise<Array<{ id: string; data: Record<string, unknown> }> | null> {
  const key = account === SESSION ? SESSION : accountKey(account);
  if (!principalId || !key) return null;
  const { rows } = await db.query<{ fixture_id: string; data: Record<string, unknown> }>(
    `SELECT f.fixture_id, f.data FROM ${schema}.sandbox_fixtures f
       JOIN ${schema}.principals p ON p.agent = f.agent AND p.principal_id = f.principal_id
      WHERE f.agent = $1 AND f.principal_id = $2 AND f.account_key = $3 AND f.kind = $4
        AND p.sandbox
      ORDER BY f.fixture_id`,
    [agent, principalId, key, kind],
  );
  return rows.length > 0 ? rows.map((r) => ({ id: r.fixture_id, data: r.data })) : null;
}

/** The fixture kind of force_create_media_buy_arm's directive (one per principal). */
export const CREATE_ARM_KIND = 'create_media_buy_arm';

/** A forced create answer: submitted under the harness's task id, or input-required. */
export type ForcedCreateArm =
  | { arm: 'submitted'; task_id: string; message?: string }
  | { arm: 'input-required'; message?: string };

/** The arm forced for this principal's next create, taken (it applies once); null if none. */
export async function takeForcedCreateArm(
  db: Db,
  schema: string,
  principalId: string,
): Promise<ForcedCreateArm | null> {
  const { rows } = await db.query<{ data: ForcedCreateArm }>(
    `DELETE FROM ${schema}.sandbox_fixtures
      WHERE agent = 'sales' AND principal_id = $1 AND account_key = $2 AND kind = $3
      RETURNING data`,
    [principalId, SESSION, CREATE_ARM_KIND],
  );
  return rows[0]?.data ?? null;
}

/** The fixture kind of force_get_products_arm's directive (one per principal). */
export const GET_PRODUCTS_ARM_KIND = 'get_products_arm';
/** force_get_signals_arm's (the signal agent's; submitted only, as published). */
export const GET_SIGNALS_ARM_KIND = 'get_signals_arm';

/**
 * A forced get_products answer: submitted under the harness's task id, or the 3.2
 * business rejection (GetProductsRejected: a reason and optional suggestions).
 */
export type ForcedGetProductsArm =
  | { arm: 'submitted'; task_id: string; message?: string }
  | { arm: 'rejected'; reason: string; suggestions?: string[] };

/**
 * The arm forced for this principal's next brief-mode get_products, taken (it applies
 * once) when `canServe` accepts it; null when none is waiting or it cannot be served (it
 * then stays for the next request that can take it).
 */
export async function takeForcedGetProductsArm(
  db: Db,
  schema: string,
  principalId: string,
  canServe: (arm: ForcedGetProductsArm) => boolean,
  agent: 'sales' | 'signals' = 'sales',
): Promise<ForcedGetProductsArm | null> {
  const kind = agent === 'sales' ? GET_PRODUCTS_ARM_KIND : GET_SIGNALS_ARM_KIND;
  const { rows } = await db.query<{ data: ForcedGetProductsArm }>(
    `SELECT f.data FROM ${schema}.sandbox_fixtures f
       JOIN ${schema}.principals p ON p.agent = f.agent AND p.principal_id = f.principal_id
      WHERE f.agent = $4 AND f.principal_id = $1 AND f.account_key = $2 AND f.kind = $3
        AND p.sandbox`,
    [principalId, SESSION, kind, agent],
  );
  const waiting = rows[0]?.data;
  if (!waiting || !canServe(waiting)) return null;
  // Taken by one request only: a concurrent one that lost the DELETE answers normally.
  const { rowCount } = await db.query(
    `DELETE FROM ${schema}.sandbox_fixtures
      WHERE agent = $5 AND principal_id = $1 AND account_key = $2 AND kind = $3
        AND data = $4::jsonb`,
    [principalId, SESSION, kind, JSON.stringify(waiting), agent],
  );
  return rowCount ? waiting : null;
}
