import t from 'tap';
import {
  assertSchemaName,
  createPool,
  LOCAL_DATABASE_URL,
  migrate,
  withTransaction,
} from '../../shared/infra/pg.js';
import { testDatabase } from '../helpers/db.js';

t.test('migrations apply once, in order, and record themselves', async (t) => {
  const { pool, schema } = testDatabase(t);
  const migrations = [
    { id: '002_b', sql: (s: string) => `ALTER TABLE ${s}.a ADD COLUMN b int` },
    { id: '001_a', sql: (s: string) => `CREATE TABLE ${s}.a (id int)` },
  ];
  t.same(await migrate(pool, schema, migrations), ['001_a', '002_b']);
  t.same(await migrate(pool, schema, migrations), [], 'second run applies nothing');
  const { rows } = await pool.query(
    `SELECT column_name FROM information_schema.columns WHERE table_schema=$1 AND table_name='a' ORDER BY 1`,
    [schema],
  );
  t.same(
    rows.map((r) => r.column_name),
    ['b', 'id'],
  );
});

t.test('concurrent migrators serialise on the advisory lock', async (t) => {
  const { pool, schema } = testDatabase(t);
  const migrations = [{ id: '001', sql: (s: string) => `CREATE TABLE ${s}.x (id int)` }];
  const results = await Promise.all([1, 2, 3].map(() => migrate(pool, schema, migrations)));
  t.equal(results.flat().length, 1, 'exactly one runner applied the migration');
});

t.test('a failing migration rolls back and names itself', async (t) => {
  const { pool, schema } = testDatabase(t);
  await t.rejects(
    migrate(pool, schema, [{ id: '001_bad', sql: () => 'SELECT * FROM nowhere_at_all' }]),
    /migration .*001_bad failed/,
  );
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.schema_migrations`);
  t.equal(rows[0].n, 0);
});

t.test('schema names are checked', async (t) => {
  t.throws(() => assertSchemaName('x; DROP TABLE y'), /invalid schema name/);
  t.equal(assertSchemaName('receiver'), 'receiver');
});

t.test('withTransaction commits what returns and rolls back what throws', async (t) => {
  const { pool, schema } = testDatabase(t);
  await pool.query(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.x (v int)`);
  t.equal(
    await withTransaction(pool, async (c) => {
      await c.query(`INSERT INTO ${schema}.x VALUES (1)`);
      return 'done';
    }),
    'done',
  );
  await t.rejects(
    withTransaction(pool, async (c) => {
      await c.query(`INSERT INTO ${schema}.x VALUES (2)`);
      throw new Error('boom');
    }),
    /boom/,
  );
  const { rows } = await pool.query<{ v: number }>(`SELECT v FROM ${schema}.x`);
  t.same(rows, [{ v: 1 }], 'the failed one left nothing');
  t.equal(pool.idleCount + pool.waitingCount, pool.totalCount, 'clients released');
});

t.test(
  'a checked-out client whose backend dies between queries does not crash the process',
  async (t) => {
    const pool = createPool({ connectionString: LOCAL_DATABASE_URL, max: 2 });
    t.teardown(() => pool.end());
    const admin = createPool({ connectionString: LOCAL_DATABASE_URL, max: 1 });
    t.teardown(() => admin.end());
    const uncaught: Error[] = [];
    const onUncaught = (err: Error) => void uncaught.push(err);
    // tap has its own handler; ours records what would otherwise have ended the process.
    process.prependListener('uncaughtException', onUncaught);
    t.teardown(() => void process.off('uncaughtException', onUncaught));
    const client = await pool.connect();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    // The client is held (as inside a transaction awaiting other work) when its backend ends.
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    await new Promise((r) => setTimeout(r, 200));
    t.same(uncaught, [], 'no unhandled client error event');
    await t.rejects(client.query('SELECT 1'), 'the holder learns of it on its next query');
    client.release(true);
    const again = await pool.query<{ one: number }>('SELECT 1 AS one');
    t.equal(again.rows[0]!.one, 1, 'the pool goes on with a new connection');
  },
);
