/**
 * Every console list and filter view is an index range read in the list's order (no scan
 * of the outbox, no sort of its rows: at most of keys read from an index alone), with and
 * without a cursor, in custom and generic plans; Destinations reads the attempts window
 * from its index alone.
 */
import t, { type Test } from 'tap';
import type { PoolClient } from '../../../shared/infra/pg.js';
import { seedConsoleData } from '../../../bench/console-seed.js';
import {
  lastHourStatement,
  listStatement,
  type SearchIndexesBuilt,
} from '../../../sender/console/store.js';
import { aggregateSql } from '../../../sender/console/rollup.js';
import type { DeliveryFilter } from '../../../sender/console/filters.js';
import { migrateSender } from '../../../sender/schema.js';
import { SearchIndexes } from '../../../sender/console/search-index.js';
import { testDatabase } from '../../helpers/db.js';
import { withoutEmptyPartitions } from '../../helpers/plans.js';

/**
 * [view, filter, the index it must use, whether it must come out in index order]. Views
 * matching many rows must stream in the list's order (LIMIT stops the read); selective
 * ones (a buy, a task, a key) may sort their few rows.
 */
const VIEWS: Array<[string, DeliveryFilter, RegExp, boolean]> = [
  ['everything', {}, /outbox_console_created/, true],
  ['status', { status: 'stopped' }, /outbox_console_state/, true],
  ['origin', { origin: 'https://buyer-3.example' }, /outbox_console_origin/, true],
  [
    'origin and stopped',
    { origin: 'https://buyer-3.example', status: 'stopped' },
    /outbox_console_failed_origin/,
    false,
  ],
  // Its own rows and the aggregated reports covering it: both indexes.
  [
    'media buy',
    { mediaBuyId: 'mb_17' },
    /outbox_console_buy(_p\d{8}|_legacy)?\b[\s\S]*outbox_console_buys/,
    false,
  ],
  ['media buy (aggregated)', { mediaBuyId: 'mb_30' }, /BitmapOr[\s\S]*outbox_console_buys/, false],
  ['principal', { principalId: 'p_4' }, /outbox_console_principal/, false],
  // Issue 26: a principal's stopped rows join the stopped keys with the principal's (either
  // side's order), where they walked every stopped row and fetched its event.
  [
    'principal and stopped',
    { principalId: 'p_4', status: 'stopped' },
    /outbox_console_state[\s\S]*outbox_console_principal|outbox_console_principal[\s\S]*outbox_console_state/,
    false,
  ],
  ['task', { taskId: 'task_99' }, /outbox_console_task/, false],
  ['event type', { eventType: 'failed' }, /outbox_console_(event_type|created)/, true],
  // Issue 26's patterns: a prefix reads the column's text_pattern_ops index (then sorts its rows).
  ['task prefix', { taskId: 'task_99*' }, /outbox_console_task(_p\d{8}|_legacy)?\b/, false],
  // A prefix matching a fifth of the rows (p_4, p_40...) walks the list's order instead.
  [
    'principal prefix',
    { principalId: 'p_4*' },
    /outbox_console_(principal|created)(_p\d{8}|_legacy)?\b/,
    false,
  ],
  [
    'media buy prefix',
    { mediaBuyId: 'mb_17*' },
    /outbox_console_(buy|created)(_p\d{8}|_legacy)?\b/,
    false,
  ],
  // Contains and payload searches with the operator's search indexes built: below.
  // Either scheme: 1 row in 20, read in the list's order (or along the origin index).
  ['host:port', { origin: 'buyer-3.example' }, /outbox_console_(origin|created)/, false],
  ['idempotency key', { idempotencyKey: 'seed_42' }, /outbox_idempotency_key_key/, false],
  [
    'time range',
    { from: new Date(Date.now() - 5 * 86_400_000), to: new Date(Date.now() - 4 * 86_400_000) },
    /outbox_console_created/,
    true,
  ],
  [
    'status and time range',
    { status: 'delivered', from: new Date(Date.now() - 5 * 86_400_000) },
    /outbox_console_(state|created)/,
    true,
  ],
];

/** A SQL string literal of `v`. */
const sqlString = (v: string) => `'${v.replace(/'/g, "''")}'`;

/**
 * With the operator's search indexes enabled (search-index.ts): a rare contains value reads
 * the trigram index, a rare payload value the payload index, then sort their few rows. A
 * value every body holds walks the list's order at the bench's million rows; at this
 * test's 20,000 the planner, which cannot estimate the `#>>` check, scans: the bench
 * times it. Without the indexes they scan (search-index.test.ts).
 */
const ENABLED_VIEWS: Array<[string, DeliveryFilter, RegExp, boolean]> = [
  ['task contains', { taskId: '*_12345*' }, /outbox_console_contains/, false],
  ['media buy contains', { mediaBuyId: '*b_1234*' }, /outbox_console_contains/, false],
  ['payload, rare', { payload: 'idempotency_key=seed_42' }, /outbox_console_payload/, false],
  // Issue 26: a common value beside a principal reads the principal's index. At the
  // bench's million it walks it in the list's order and stops at the page (it used to read
  // and sort all 2,000 of the principal's bodies); at this test's 20,000 the principal's
  // 40 rows are cheaper read and sorted.
  [
    'payload and principal',
    { payload: 'status=completed', principalId: 'p_4' },
    /outbox_console_principal/,
    false,
  ],
  // A prefix may take the trigram index too.
  [
    'task prefix, enabled',
    { taskId: 'task_99*' },
    /outbox_console_(task|contains)(_p\d{8}|_legacy)?\b/,
    false,
  ],
];

t.test('console views are index-backed', async (t) => {
  const { pool, schema } = testDatabase(t, 'cplan');
  await migrateSender(pool, schema);
  await seedConsoleData(pool, schema, { deliveries: 20_000, attemptsPer: 3 });
  const client = await pool.connect();
  t.teardown(() => client.release());
  await checkViews(t, client, schema, VIEWS, { contains: false, payload: false });
  await new SearchIndexes(pool, schema).enable(['contains', 'payload'], { name: 't', via: 'cli' });
  await client.query(`ANALYZE ${schema}.outbox_event`);
  await checkViews(t, client, schema, ENABLED_VIEWS, { contains: true, payload: true });
  await client.query('RESET plan_cache_mode');
  const window = [
    ['last hour', `EXPLAIN ${lastHourStatement(schema)}`],
    [
      'hourly rollup',
      `EXPLAIN ${aggregateSql(schema).replace('$1', "now() - interval '1 hour'").replace('$2', 'now()')}`,
    ],
  ];
  for (const [name, sql] of window) {
    const { rows } = await client.query(sql!);
    const plan = withoutEmptyPartitions(rows.map((r) => r['QUERY PLAN']).join('\n'));
    t.notMatch(plan, /Seq Scan/, `destinations ${name}: no scan`);
    // Index-only on a large log (the bench's); a small one may take a bitmap of it.
    t.match(plan, /webhook_activity_console_window/, `destinations ${name}: the window index`);
  }
});

/**
 * The first read of table rows under a Sort in `plan` (null if none): a view matching many
 * rows must not read and sort them. Its page's keys may be sorted from an index alone
 * (Index Only Scan: on this test's 20,000 rows a state's 100 keys are cheaper sorted than
 * merged), and only the page's rows read after; at the bench's million the keys stream in
 * order.
 */
function sortedRowReads(plan: string): string | null {
  const lines = plan.split('\n');
  const indent = (l: string) => l.length - l.trimStart().length;
  for (const [i, line] of lines.entries()) {
    if (!/^(->\s+)?(Incremental )?Sort\b/.test(line.trim())) continue;
    for (const below of lines.slice(i + 1)) {
      if (indent(below) <= indent(line)) break;
      if (/Seq Scan|Index Scan|Bitmap Heap Scan/.test(below)) return below.trim();
    }
  }
  return null;
}

/** Each view's plan, with and without a cursor, in the plan modes it runs in. */
async function checkViews(
  t: Test,
  client: PoolClient,
  schema: string,
  views: typeof VIEWS,
  built: SearchIndexesBuilt,
): Promise<void> {
  for (const [name, filter, index, ordered] of views) {
    for (const cursor of [null, { createdUs: String(Date.now() * 1000), id: '10000' }]) {
      const { text, values } = listStatement(schema, filter, cursor, 50, built);
      // The buy filter ORs a GIN lookup whose selectivity a generic plan cannot know (it
      // guesses 0.5 % and walks the created index): the console's statements are unnamed,
      // so PostgreSQL plans each one with its values (a custom plan), the only kind it runs.
      // A LIKE pattern, too: a generic plan cannot know its prefix.
      // The payload's probes likewise.
      const pattern = Object.values(filter).some((v) => typeof v === 'string' && v.includes('*'));
      const modes =
        filter.mediaBuyId || pattern || filter.payload
          ? ['force_custom_plan']
          : ['force_custom_plan', 'force_generic_plan'];
      for (const mode of modes) {
        await client.query(`SET plan_cache_mode = ${mode}`);
        await client.query(`PREPARE v AS ${text}`);
        const params = values.map((v) =>
          v instanceof Date
            ? `'${v.toISOString()}'`
            : Array.isArray(v)
              ? sqlString(`{${v.map((x) => `"${String(x).replace(/["\\]/g, '\\$&')}"`).join(',')}}`)
              : sqlString(String(v)),
        );
        // A view with no parameter (everything) executes without parentheses.
        const args = params.length ? `(${params.join(', ')})` : '';
        const { rows } = await client.query(`EXPLAIN EXECUTE v${args}`);
        await client.query('DEALLOCATE v');
        const plan = withoutEmptyPartitions(rows.map((r) => r['QUERY PLAN']).join('\n'));
        const what = `${name}${cursor ? ', after a cursor' : ''}, ${mode}`;
        t.notMatch(plan, /Seq Scan/, `${what}: no scan`);
        if (ordered) {
          t.equal(sortedRowReads(plan), null, `${what}: no table row read before the page`);
        }
        t.match(plan, index, `${what}: ${index.source}`);
      }
    }
  }
}
