/**
 * Test plumbing for the real PostgreSQL and Redis: a pool per test file and a throwaway
 * schema (or key prefix) so files running in parallel never share state.
 */
import { randomBytes } from 'node:crypto';
import { createPool, dropSchema, LOCAL_DATABASE_URL, type Pool } from '../../shared/infra/pg.js';

export const DATABASE_URL = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A pool and a fresh schema name, both cleaned up when the test ends. */
export function testDatabase(t: Teardown, prefix = 't'): { pool: Pool; schema: string } {
  const pool = createPool({ connectionString: DATABASE_URL, max: 20 });
  const schema = uniqueName(prefix);
  t.teardown(async () => {
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  });
  return { pool, schema };
}
