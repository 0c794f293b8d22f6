/** The sender bench's A/B switch for the console's indexes: parsed, and refused when malformed. */
import t from 'tap';
import { consoleIndexesFlag } from '../../../bench/sender.js';
import { CONSOLE_INDEXES } from '../../../sender/console/migrations.js';
import { migrateSender } from '../../../sender/schema.js';
import { testDatabase } from '../../helpers/db.js';

t.test('--console-indexes', async (t) => {
  const saved = process.env.BENCH_CONSOLE_INDEXES;
  t.teardown(() => {
    if (saved === undefined) delete process.env.BENCH_CONSOLE_INDEXES;
    else process.env.BENCH_CONSOLE_INDEXES = saved;
  });
  delete process.env.BENCH_CONSOLE_INDEXES;
  t.same(consoleIndexesFlag(['100', '2']), { on: true, rest: ['100', '2'] }, 'on by default');
  t.same(consoleIndexesFlag(['--console-indexes=off', '100']), { on: false, rest: ['100'] });
  process.env.BENCH_CONSOLE_INDEXES = 'off';
  t.same(consoleIndexesFlag([]), { on: false, rest: [] }, 'from the environment');
  t.same(consoleIndexesFlag(['--console-indexes=on']), { on: true, rest: [] }, 'flag wins');
  t.throws(() => consoleIndexesFlag(['--console-indexes=no']), /must be on or off, not "no"/);
  t.throws(() => consoleIndexesFlag(['--console-indexes=']), /must be on or off/);
});

t.test('CONSOLE_INDEXES names every index the console migrations add', async (t) => {
  const { pool, schema } = testDatabase(t, 'cidx');
  await migrateSender(pool, schema);
  const { rows } = await pool.query(
    `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE '%console%'
        AND tablename IN ('outbox_event', 'outbox_delivery', 'webhook_activity')`,
    [schema],
  );
  t.same(
    rows.map((r) => r.indexname).sort(),
    [...CONSOLE_INDEXES].sort(),
    'the A/B drops them all, and nothing else',
  );
});
