/**
 * PostgreSQL plumbing: one pool per process and the migration runner every component
 * uses for its own schema. A component owns one schema; tests pass a throwaway schema
 * name so parallel test files never see each other's rows.
 */
import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export interface PoolOptions {
  connectionString: string;
  max?: number;
  applicationName?: string;
}

export function createPool(options: PoolOptions): Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'svc',
  });
  keepClientErrorsQuiet(pool);
  return pool;
}

/**
 * A client losing its connection must not crash the process. The pool listens on its idle
 * clients ('error' on the pool; it replaces them), but a checked-out client between two
 * queries (a transaction awaiting other work, a migration, a replay-store session) has no
 * listener of its own, and pg emits the loss as an 'error' event: unhandled, it ended a
 * sidecar during a PostgreSQL restart in the chaos bench. The loss still reaches the code
 * holding the client: its next query fails, and the broken client is not reused.
 */
export function keepClientErrorsQuiet(pool: pg.Pool): void {
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
}

/** Runs `fn` in a transaction on a client of its own: committed if it returns, else rolled back. */
export async function withTransaction<T>(
  pool: Pool,
  fn: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** What the tests and local runs connect to when DATABASE_URL is unset. */
export const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

export interface Migration {
  /** Sortable and unique within the schema, e.g. "001_outbox". */
  id: string;
  /** SQL with `${schema}` already substituted by the caller's function. */
  sql: (schema: string) => string;
}

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

/** Quotes nothing: schema names are checked against a strict pattern instead. */
export function assertSchemaName(schema: string): string {
  if (!IDENT.test(schema)) throw new Error(`invalid schema name "${schema}": use [a-z0-9_]`);
  return schema;
}

/**
 * Applies the migrations not yet recorded in `<schema>.schema_migrations`, in id order,
 * each in its own transaction, under an advisory lock so concurrent starters serialise.
 */
export async function migrate(
  pool: Pool,
  schema: string,
  migrations: Migration[],
): Promise<string[]> {
  assertSchemaName(schema);
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`svc-migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
         id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ id: string }>(
      `SELECT id FROM ${schema}.schema_migrations`,
    );
    const done = new Set(rows.map((r) => r.id));
    for (const m of [...migrations].sort((a, b) => a.id.localeCompare(b.id))) {
      if (done.has(m.id)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql(schema));
        await client.query(`INSERT INTO ${schema}.schema_migrations (id) VALUES ($1)`, [m.id]);
        await client.query('COMMIT');
        applied.push(m.id);
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${schema}/${m.id} failed: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
  } finally {
    await client
      .query('SELECT pg_advisory_unlock(hashtext($1))', [`svc-migrate:${schema}`])
      .catch(() => {});
    client.release();
  }
  return applied;
}

/** Drops a schema and everything in it (tests' cleanup). */
export async function dropSchema(pool: Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS ${assertSchemaName(schema)} CASCADE`);
}
