import t from 'tap';
import { prepared, withValues } from '../../shared/infra/prepared.js';
import { testDatabase } from '../helpers/db.js';

t.test('names follow the text: same text same name, another text another name', async (t) => {
  const a = prepared('q', 'SELECT $1::int + 1 AS n');
  t.equal(prepared('q', 'SELECT $1::int + 1 AS n').name, a.name);
  t.not(prepared('q', 'SELECT $1::int + 2 AS n').name, a.name);
  t.match(a.name, /^q_[A-Za-z0-9_-]{16}$/);
  t.same(withValues(a, [1]), { name: a.name, text: a.text, values: [1] });
});

t.test('runs as a named statement, repeatedly, on one connection and across a pool', async (t) => {
  const { pool } = testDatabase(t, 'prep');
  const q = prepared('t_prep', 'SELECT $1::int * 2 AS n');
  const client = await pool.connect();
  try {
    for (let i = 1; i <= 7; i++) {
      const { rows } = await client.query<{ n: number }>(withValues(q, [i]));
      t.equal(rows[0]?.n, i * 2);
    }
    const { rows } = await client.query<{ name: string }>(
      'SELECT name FROM pg_prepared_statements WHERE name = $1',
      [q.name],
    );
    t.equal(rows.length, 1, 'prepared once on the connection');
  } finally {
    client.release();
  }
  const many = await Promise.all(
    Array.from({ length: 30 }, (_, i) => pool.query<{ n: number }>(withValues(q, [i]))),
  );
  t.same(
    many.map((r) => r.rows[0]?.n),
    Array.from({ length: 30 }, (_, i) => i * 2),
  );
  await t.rejects(pool.query(withValues(q, ['not a number'])), /invalid input syntax/);
});
