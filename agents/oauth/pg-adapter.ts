/**
 * oidc-provider's storage adapter over PostgreSQL: registered clients, grants, codes and
 * refresh tokens survive a restart (the library's default is in memory). One table,
 * keyed by (namespace, model, id); the namespace keeps each agent's server apart.
 * A newly registered client gets an expiry (`unboundClientTtlSeconds`): binding it or
 * issuing it a token clears that (agents/oauth/bindings.ts); expired rows are swept.
 */
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { assertSchemaName, migrate, type Pool } from '../../shared/infra/pg.js';

export async function migrateOAuthStore(pool: Pool, schema: string): Promise<void> {
  // Through migrate(), under its advisory lock: concurrent starters never race on the catalog.
  await migrate(pool, assertSchemaName(schema), [
    {
      id: 'oauth_store_001',
      sql: (s) => `
        CREATE TABLE IF NOT EXISTS ${s}.oauth_store (
          namespace text NOT NULL,
          model text NOT NULL,
          id text NOT NULL,
          payload jsonb NOT NULL,
          grant_id text,
          user_code text,
          uid text,
          expires_at timestamptz,
          consumed_at timestamptz,
          PRIMARY KEY (namespace, model, id)
        );
        CREATE INDEX IF NOT EXISTS oauth_store_grant ON ${s}.oauth_store (namespace, grant_id);
        CREATE TABLE IF NOT EXISTS ${s}.oauth_keys (
          name text PRIMARY KEY,
          jwk jsonb NOT NULL
        );`,
    },
  ]);
}

/** How long a registered client that is never bound nor used lives (default a day). */
export const DEFAULT_UNBOUND_CLIENT_TTL_SECONDS = 86_400;

// The declared return type keeps the class's private members out of the emitted .d.ts.
export function pgAdapterFactory(
  pool: Pool,
  schema: string,
  namespace: string,
  options: { unboundClientTtlSeconds?: number } = {},
): new (model: string) => Adapter {
  const s = assertSchemaName(schema);
  const clientTtl = options.unboundClientTtlSeconds ?? DEFAULT_UNBOUND_CLIENT_TTL_SECONDS;
  let lastSweep = 0;
  const sweep = async () => {
    if (Date.now() - lastSweep < 60_000) return;
    lastSweep = Date.now();
    await pool.query(
      `DELETE FROM ${s}.oauth_store WHERE namespace = $1 AND expires_at < now() - interval '1 hour'`,
      [namespace],
    );
  };
  return class PgAdapter implements Adapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      if (this.model === 'Client') return this.upsertClient(id, payload);
      await pool.query(
        `INSERT INTO ${s}.oauth_store (namespace, model, id, payload, grant_id, user_code, uid, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (namespace, model, id) DO UPDATE SET payload = EXCLUDED.payload,
           grant_id = EXCLUDED.grant_id, user_code = EXCLUDED.user_code, uid = EXCLUDED.uid,
           expires_at = EXCLUDED.expires_at`,
        [
          namespace,
          this.model,
          id,
          payload,
          payload.grantId ?? null,
          payload.userCode ?? null,
          payload.uid ?? null,
          expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
        ],
      );
    }

    /** A new client expires unless bound or used; an update keeps the row's expiry. */
    private async upsertClient(id: string, payload: AdapterPayload): Promise<void> {
      await sweep();
      await pool.query(
        `INSERT INTO ${s}.oauth_store (namespace, model, id, payload, expires_at)
         VALUES ($1, 'Client', $2, $3, now() + make_interval(secs => $4))
         ON CONFLICT (namespace, model, id) DO UPDATE SET payload = EXCLUDED.payload`,
        [namespace, id, payload, clientTtl],
      );
    }

    private async findBy(column: 'id' | 'user_code' | 'uid', value: string) {
      const { rows } = await pool.query<{ payload: AdapterPayload; consumed_at: Date | null }>(
        `SELECT payload, consumed_at FROM ${s}.oauth_store
          WHERE namespace = $1 AND model = $2 AND ${column} = $3
            AND (expires_at IS NULL OR expires_at > now())`,
        [namespace, this.model, value],
      );
      const row = rows[0];
      if (!row) return undefined;
      return row.consumed_at
        ? { ...row.payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) }
        : row.payload;
    }

    find(id: string) {
      return this.findBy('id', id);
    }
    findByUserCode(userCode: string) {
      return this.findBy('user_code', userCode);
    }
    findByUid(uid: string) {
      return this.findBy('uid', uid);
    }

    async consume(id: string): Promise<void> {
      await pool.query(
        `UPDATE ${s}.oauth_store SET consumed_at = now()
          WHERE namespace = $1 AND model = $2 AND id = $3`,
        [namespace, this.model, id],
      );
    }

    async destroy(id: string): Promise<void> {
      await pool.query(
        `DELETE FROM ${s}.oauth_store WHERE namespace = $1 AND model = $2 AND id = $3`,
        [namespace, this.model, id],
      );
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await pool.query(`DELETE FROM ${s}.oauth_store WHERE namespace = $1 AND grant_id = $2`, [
        namespace,
        grantId,
      ]);
    }
  };
}
