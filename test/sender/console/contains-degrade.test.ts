/**
 * Enabling the contains index where pg_trgm cannot be created (here: the role may not
 * create extensions in its database; the same answer names a server without the module):
 * a 409 PG_TRGM_UNAVAILABLE naming the cause and what to do, and nothing built, not even
 * the payload index asked for with it. Contains searches go on walking the list. A
 * database of its own whose role has no CREATE on it.
 */
import t from 'tap';
import { createPool } from '../../../shared/infra/pg.js';
import { SearchIndexes } from '../../../sender/console/search-index.js';
import { DATABASE_URL, uniqueName } from '../../helpers/db.js';

t.test('enable contains without pg_trgm: a clear error, nothing built', async (t) => {
  const admin = createPool({ connectionString: DATABASE_URL, max: 1 });
  t.teardown(() => admin.end());
  const db = uniqueName('notrgm');
  const role = uniqueName('plain');
  await admin.query(`CREATE DATABASE ${db}`);
  await admin.query(`CREATE ROLE ${role} LOGIN`);
  t.teardown(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
  });
  const url = new URL(DATABASE_URL);
  url.pathname = `/${db}`;
  const owner = createPool({ connectionString: url.toString(), max: 1 });
  t.teardown(() => owner.end());
  // The events table as the enable finds it, owned by a role without CREATE on the
  // database (which a trusted extension needs).
  await owner.query(`REVOKE CREATE ON DATABASE ${db} FROM PUBLIC;
    CREATE SCHEMA s AUTHORIZATION ${role};
    CREATE TABLE s.outbox_event (task_id text, principal_id text, media_buy_id text,
      target_url text NOT NULL, body bytea, id bigint) PARTITION BY RANGE (id);
    ALTER TABLE s.outbox_event OWNER TO ${role}`);
  url.username = role;
  const pool = createPool({ connectionString: url.toString(), max: 2 });
  t.teardown(() => pool.end());
  const indexes = new SearchIndexes(pool, 's');
  const err = await indexes.enable(['contains', 'payload'], { name: 'ops', via: 'cli' }).then(
    () => null,
    (e: unknown) => e as { status: number; code: string; message: string },
  );
  t.match(err, { status: 409, code: 'PG_TRGM_UNAVAILABLE' });
  t.match(err!.message, new RegExp(`role ${role} may not create it`));
  t.match(err!.message, new RegExp(`GRANT CREATE ON DATABASE ${db} TO ${role}`), 'what to do');
  t.match(err!.message, /nothing was built/);
  const { rows } = await owner.query(
    `SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = 's'`,
  );
  t.equal(rows[0].n, 0, 'no index');
  const ext = await owner.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'`);
  t.equal(ext.rows.length, 0, 'no extension');
  t.match(await indexes.status(), [
    { kind: 'contains', state: 'off', search: 'scan' },
    { kind: 'payload', state: 'off', search: 'scan' },
  ]);
});
