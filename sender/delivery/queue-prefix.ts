/**
 * The BullMQ prefix of a deployment. Two deployments on one Redis, each with its own
 * database, must never take each other's jobs (a job names an outbox row id, which only
 * means something in its own database), so the default prefix is derived from the
 * database: a random id drawn once and kept in the sender schema, the same for every
 * process of the deployment (`svc start`, `svc worker`, `svc approve`). SVC_QUEUE_PREFIX
 * (or `svc worker --prefix`) overrides it.
 */
import { randomBytes } from 'node:crypto';
import { assertSchemaName, migrate, type Pool } from '../../shared/infra/pg.js';
import { hashTaggedPrefix } from '../../shared/infra/redis.js';

export async function deploymentQueuePrefix(
  pool: Pool,
  schema: string,
  brand: string,
): Promise<string> {
  const s = assertSchemaName(schema);
  // Through migrate(), under its advisory lock: processes starting together (svc start's
  // worker, svc deliveries ...) would otherwise race on the catalog, and one of two
  // concurrent CREATE TABLE IF NOT EXISTS fails with a unique violation in pg_type.
  await migrate(pool, s, [
    {
      id: 'deployment_identity_001',
      sql: (x) => `CREATE TABLE IF NOT EXISTS ${x}.deployment_identity (
         singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
         id text NOT NULL
       )`,
    },
  ]);
  await pool.query(
    `INSERT INTO ${s}.deployment_identity (id) VALUES ($1) ON CONFLICT (singleton) DO NOTHING`,
    [randomBytes(4).toString('hex')],
  );
  const { rows } = await pool.query<{ id: string }>(`SELECT id FROM ${s}.deployment_identity`);
  return hashTaggedPrefix(`${brand}:${rows[0]!.id}`);
}
