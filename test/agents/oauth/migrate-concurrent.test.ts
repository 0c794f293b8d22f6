/** The OAuth tables are created once however many processes start together. */
import t from 'tap';
import { migrateOAuthBindings } from '../../../agents/oauth/bindings.js';
import { migrateOAuthStore } from '../../../agents/oauth/pg-adapter.js';
import { testDatabase } from '../../helpers/db.js';

t.test('concurrent starters on a fresh schema: none fails, the tables exist once', async (t) => {
  const { pool, schema } = testDatabase(t, 'oamc');
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      await migrateOAuthStore(pool, schema);
      await migrateOAuthBindings(pool, schema);
    }),
  );
  const { rows } = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_tables WHERE schemaname = $1
      AND tablename IN ('oauth_store', 'oauth_keys', 'oauth_client_bindings', 'oauth_binding_audit')`,
    [schema],
  );
  t.equal(Number(rows[0]!.n), 4);
  // An existing deployment (tables made before they were migrations) is taken as it is.
  await pool.query(`DELETE FROM ${schema}.schema_migrations`);
  await migrateOAuthStore(pool, schema);
  await migrateOAuthBindings(pool, schema);
  t.pass('re-run over existing tables');
});
