/**
 * Migration 075 where pg_trgm cannot be created (not installed, or no right to create it):
 * the migration still succeeds, says why in a NOTICE, and builds no trigram index (contains
 * searches then walk the list). A database of its own whose role may not create extensions.
 */
import t from 'tap';
import { createPool } from '../../../shared/infra/pg.js';
import { consoleSearchMigrations } from '../../../sender/console/search-migrations.js';
import { DATABASE_URL, uniqueName } from '../../helpers/db.js';

t.test('075 without pg_trgm: a NOTICE, no index, no failure', async (t) => {
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
  const pool = createPool({ connectionString: url.toString(), max: 1 });
  t.teardown(() => pool.end());
  const client = await pool.connect();
  t.teardown(() => client.release());
  // The events table as the migration finds it, owned by a role without CREATE on the
  // database (which a trusted extension needs).
  await client.query(`REVOKE CREATE ON DATABASE ${db} FROM PUBLIC;
    CREATE SCHEMA s AUTHORIZATION ${role};
    CREATE TABLE s.outbox_event (task_id text, principal_id text, media_buy_id text,
      target_url text NOT NULL);
    ALTER TABLE s.outbox_event OWNER TO ${role};
    SET ROLE ${role}`);
  const notices: string[] = [];
  client.on('notice', (n) => notices.push(n.message ?? ''));
  const m = consoleSearchMigrations.find((x) => x.id === '075_console_contains_search')!;
  await client.query(m.sql('s'));
  t.match(notices.join('\n'), /permission denied to create extension "pg_trgm"/);
  t.match(notices.join('\n'), /pg_trgm is not available; contains searches \(\*value\*\) walk/);
  const { rows } = await client.query(
    `SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = 's'`,
  );
  t.equal(rows[0].n, 0, 'no trigram index');
  const ext = await client.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'`);
  t.equal(ext.rows.length, 0, 'nothing created');
});
