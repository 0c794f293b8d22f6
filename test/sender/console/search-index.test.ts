/**
 * The operator's search indexes (sender/console/search-index.ts): off after migrating;
 * enabled on an outbox whose day partitions hold rows, every partition's index named as a
 * day's and attached, a contains and a payload search then read them (EXPLAIN) with the
 * same answers as the scan; a day created later has them; disable drops them and the
 * searches scan again with the same answers. The CLI, the JSON API and the page (CSRF),
 * the audit, malformed input, an enable cut short, and two at once.
 */
import { PassThrough } from 'node:stream';
import { CommanderError } from 'commander';
import t from 'tap';
import { seedConsoleData } from '../../../bench/console-seed.js';
import { buildProgram } from '../../../cli/main.js';
import { ConsoleActions } from '../../../sender/console/actions.js';
import { ConsoleInputError, type DeliveryFilter } from '../../../sender/console/filters.js';
import { SearchIndexes, searchIndexKinds } from '../../../sender/console/search-index.js';
import { searchIndexCommand } from '../../../sender/console/search-index-cli.js';
import { listenConsole } from '../../../sender/console/server.js';
import { ConsoleStore, listStatement } from '../../../sender/console/store.js';
import { DAY_MS, maintainPartitions, suffixOf } from '../../../sender/outbox/partitions.js';
import { migrateSender } from '../../../sender/schema.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import type { DeliveryQueue } from '../../../sender/delivery/queue.js';
import { testDatabase } from '../../helpers/db.js';
import { withoutEmptyPartitions } from '../../helpers/plans.js';
import { json, signIn, until } from './helpers.js';

const TOKEN = 'search-index-token-0123456789abcdef';
const WHO = { name: 'olga', via: 'cli' as const };

/** [search, filter, the index it reads once enabled]. */
const SEARCHES: Array<[string, DeliveryFilter, RegExp]> = [
  ['task contains', { taskId: '*_12345*' }, /outbox_console_contains/],
  ['media buy contains', { mediaBuyId: '*b_1234*' }, /outbox_console_contains/],
  ['payload, rare', { payload: 'idempotency_key=seed_42' }, /outbox_console_payload/],
];

function capture() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (c) => (text += c));
  return { stream, text: () => text };
}

t.test('search indexes: off by default, enable, disable', async (t) => {
  const { pool, schema } = testDatabase(t, 'sidx');
  await migrateSender(pool, schema);
  const indexes = new SearchIndexes(pool, schema);
  const store = new ConsoleStore(pool, schema);
  const names = async () =>
    (
      await pool.query(
        `SELECT indexname FROM pg_indexes WHERE schemaname = $1
            AND indexname LIKE ANY (ARRAY['outbox_console_contains%', 'outbox_console_payload%'])`,
        [schema],
      )
    ).rows.map((r) => r.indexname as string);
  t.same(await names(), [], 'migrating builds neither');
  const off = await indexes.status();
  t.match(off, [
    { kind: 'contains', state: 'off', search: 'scan' },
    { kind: 'payload', state: 'off', search: 'scan' },
  ]);

  await seedConsoleData(pool, schema, { deliveries: 20_000, attemptsPer: 1 });
  const plan = async (f: DeliveryFilter, built: { contains: boolean; payload: boolean }) => {
    const { text, values } = listStatement(schema, f, null, 50, built);
    const { rows } = await pool.query(`EXPLAIN ${text}`, values);
    return withoutEmptyPartitions(rows.map((r) => r['QUERY PLAN']).join('\n'));
  };
  const answers = async () =>
    Promise.all(
      SEARCHES.map(async ([, f]) => (await store.list(f, null, 50)).items.map((d) => d.id)),
    );
  const before = await answers();
  t.ok(
    before.every((ids) => ids.length > 0),
    'each search finds rows',
  );
  for (const [name, f, index] of SEARCHES) {
    t.notMatch(await plan(f, { contains: false, payload: false }), index, `${name}: no index yet`);
  }

  const progress = capture();
  const on = await searchIndexCommand(indexes, 'enable', {}, WHO, progress.stream).then(() =>
    indexes.status(),
  );
  t.match(on, [
    { kind: 'contains', state: 'on', search: 'index' },
    { kind: 'payload', state: 'on', search: 'index' },
  ]);
  const parts = on[0]!.partitions;
  // The legacy partition and the days created ahead; the rows are all in today's (their
  // ids carry the day they were written).
  t.ok(parts.of >= 5 && parts.indexed === parts.of, `every partition (${parts.of}) indexed`);
  t.match(progress.text(), /contains: outbox_event_p\d{8} built \(\d of \d+, about 20,000 rows\)/);
  t.match(progress.text(), /payload\s+on\s+outbox_console_payload\s+\d+ of \d+ partitions/);
  for (const n of await names()) {
    t.match(n, /^outbox_console_(contains|payload)(_p\d{8}|_legacy)?$/, `${n}: named as a day's`);
  }
  for (const [name, f, index] of SEARCHES) {
    const p = await plan(f, { contains: true, payload: true });
    t.match(p, index, `${name}: reads ${index.source}`);
    t.notMatch(p, /Seq Scan/, `${name}: no scan`);
  }
  t.same(await answers(), before, 'the same answers through the indexes');

  // console_body_json runs in no parallel worker (its exception block is a subtransaction,
  // which a worker cannot start): a payload search whose plan would go parallel answers.
  const par = await pool.connect();
  try {
    await par.query(`SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
      SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
      SET enable_indexscan = off; SET enable_bitmapscan = off`);
    const q = listStatement(schema, { payload: 'status=completed' }, null, 50, {
      contains: true,
      payload: true,
    });
    t.equal(
      (await par.query(q.text, q.values)).rows.length,
      51,
      'a payload search, no parallel error',
    );
  } finally {
    par.release();
  }

  // Idempotent: nothing built the second time.
  const again = await indexes.enable(['contains', 'payload'], WHO);
  t.same(again.changed, { contains: 0, payload: 0 });

  // A day created after enable (the days ahead of a later clock) has both, named.
  const later = Math.floor(Date.now() / DAY_MS) + 10;
  await maintainPartitions(pool, schema, { now: new Date(later * DAY_MS) });
  const fresh = await names();
  for (const idx of ['outbox_console_contains', 'outbox_console_payload']) {
    t.ok(fresh.includes(`${idx}_${suffixOf(later)}`), `${idx} on a new day`);
  }
  t.match(await indexes.status(), [{ state: 'on' }, { state: 'on' }]);

  const dropped = await indexes.disable(['contains'], WHO);
  t.same(dropped.changed, { contains: true });
  t.match(dropped.status, [{ state: 'off' }, { state: 'on' }], 'only the one named');
  await indexes.disable(['contains', 'payload'], WHO);
  t.same(await names(), [], "every partition's index dropped with its parent");
  t.same(await answers(), before, 'the same answers scanning again');
  const audit = await pool.query(
    `SELECT action, target, detail FROM ${schema}.console_audit WHERE operator = 'olga' ORDER BY id`,
  );
  t.match(audit.rows, [
    { action: 'search_index_enable', target: 'contains,payload', detail: { built: {} } },
    { action: 'search_index_enable', detail: { built: { contains: 0, payload: 0 } } },
    { action: 'search_index_disable', target: 'contains', detail: { dropped: { contains: true } } },
    { action: 'search_index_disable', detail: { dropped: { contains: false, payload: true } } },
  ]);
  t.equal(audit.rows[0].detail.built.contains, parts.of, 'the audit counts the partitions built');

  t.test(
    'an enable cut short is partial (searches scan) and finished by enabling again',
    async (t) => {
      await pool.query(
        `CREATE INDEX outbox_console_payload ON ONLY ${schema}.outbox_event
         USING gin (${schema}.console_body_json(body) jsonb_path_ops)`,
      );
      const p = (await indexes.status())[1]!;
      t.match(p, { state: 'partial', search: 'scan', partitions: { indexed: 0 } });
      const out = capture();
      await searchIndexCommand(indexes, 'status', {}, WHO, out.stream);
      t.match(out.text(), /payload\s+partial .*partly built: enable again to finish/);
      // Two partitions as a cut-short enable leaves them: one's index built but not yet
      // attached (attached now, not built again), one's invalid (a CONCURRENTLY build that
      // failed: dropped and built again).
      const days = (
        await pool.query(
          `SELECT c.relname FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
            WHERE h.inhparent = $1::regclass AND c.relname LIKE 'outbox\\_event\\_p%' ORDER BY 1`,
          [`${schema}.outbox_event`],
        )
      ).rows.map((r) => r.relname as string);
      const [built, broken] = days.map((d) => `outbox_console_payload_${d.slice(13)}`);
      for (const [i, name] of [built!, broken!].entries()) {
        await pool.query(`CREATE INDEX ${name} ON ${schema}.${days[i]}
          USING gin (${schema}.console_body_json(body) jsonb_path_ops)`);
      }
      await pool.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, [
        `${schema}.${broken}`,
      ]);
      const oid = async (n: string) =>
        (await pool.query(`SELECT $1::regclass::oid AS o`, [`${schema}.${n}`])).rows[0].o;
      const builtOid = await oid(built!);
      const brokenOid = await oid(broken!);
      await indexes.enable(['payload'], WHO);
      t.match((await indexes.status())[1], { state: 'on' });
      t.equal(await oid(built!), builtOid, 'the built one attached as it was');
      t.not(await oid(broken!), brokenOid, 'the invalid one built again');
      const off = capture();
      await searchIndexCommand(indexes, 'disable', { payload: true, json: true }, WHO, off.stream);
      t.match(JSON.parse(off.text()), { action: 'disable', changed: { payload: true } });
    },
  );

  t.test('one at a time: a second caller is told', async (t) => {
    const other = await pool.connect();
    t.teardown(() => other.release());
    await other.query('SELECT pg_advisory_lock(hashtext($1))', [`svc-search-index:${schema}`]);
    await t.rejects(indexes.enable(['payload'], WHO), { code: 'SEARCH_INDEX_BUSY', status: 409 });
    await other.query('SELECT pg_advisory_unlock(hashtext($1))', [`svc-search-index:${schema}`]);
  });

  t.test('malformed input names the option', async (t) => {
    t.same(searchIndexKinds({}), ['contains', 'payload'], 'neither: both');
    t.same(searchIndexKinds({ payload: 'on' }), ['payload'], 'a ticked checkbox');
    t.throws(() => searchIndexKinds({ contains: 'yes' }), ConsoleInputError);
    t.throws(() => searchIndexKinds({ payload: 1 }), /payload: true or false/);
    for (const [args, what] of [
      [['enable', '--contain'], /unknown option '--contain'/],
      [
        ['enabel'],
        /'enabel' is invalid for argument 'action'. Allowed choices are status, enable, disable/,
      ],
      [['status', '--payload=yes'], /unknown option '--payload=yes'/],
    ] as const) {
      const program = buildProgram();
      program.exitOverride();
      program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
      const cmd = program.commands
        .find((c) => c.name() === 'deliveries')!
        .commands.find((c) => c.name() === 'search-index')!;
      cmd.configureOutput({ writeErr: () => {}, writeOut: () => {} });
      const err = await program
        .parseAsync(['deliveries', 'search-index', ...args], { from: 'user' })
        .then(
          () => null,
          (e: unknown) => e,
        );
      t.type(err, CommanderError);
      t.equal((err as CommanderError).exitCode, 2, `${args.join(' ')}: exit 2`);
      t.match((err as Error).message, what);
    }
    const help = buildProgram()
      .commands.find((c) => c.name() === 'deliveries')!
      .commands.find((c) => c.name() === 'search-index')!;
    let text = '';
    help.configureOutput({ writeOut: (s) => (text += s) });
    help.outputHelp();
    t.match(text, /--contains[\s\S]*\+20-28 µs of PostgreSQL CPU per event/, '--help: the cost');
  });

  t.test('the console: the page, CSRF, the JSON API', async (t) => {
    const server = await listenConsole({
      store,
      actions: new ConsoleActions(pool, null as unknown as DeliveryQueue, schema),
      auth: new ConsoleAuth({ token: TOKEN, operator: 'pat' }),
    });
    t.teardown(() => server.close());
    const api = (path: string, body?: unknown) =>
      fetch(`${server.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const c = await signIn(server.url, TOKEN);
    const page = await (await c.get('/search-indexes')).text();
    t.match(page, /id="search-index-status"[^>]*>\s*contains: scans; payload: scans/);
    t.match(page, /action="\/search-indexes\/enable"/);
    const list = await (await c.get('/deliveries')).text();
    t.match(list, /href="\/search-indexes"/, 'the deliveries page links to it');
    const refused = await c.post('/search-indexes/enable', { payload: 'on' });
    t.equal(refused.status, 403, 'without the CSRF token');
    t.match((await indexes.status())[1], { state: 'off' }, 'nothing built');
    const ok = await c.post('/search-indexes/enable', { payload: 'on', _csrf: c.csrf });
    t.equal(ok.status, 302);
    // The page's enable runs in the background; the page shows it (search-index-progress.test.ts).
    t.match(ok.headers.get('location'), /^\/search-indexes$/);
    await until('the enable to finish', async () => {
      const r = (await json(await api('/api/search-indexes'))) as { build: { running: boolean } };
      return !r.build.running;
    });
    const after = await (await c.get('/search-indexes')).text();
    t.match(after, /payload: indexed/);
    t.match(after, /Last enable \(payload, by pat\): built/);
    // Nobody without the operator's credentials may build or drop an index.
    for (const headers of <Array<Record<string, string>>>[
      { 'content-type': 'application/json' },
      { authorization: 'Bearer not-the-operator-token-000', 'content-type': 'application/json' },
    ]) {
      const anon = await fetch(`${server.url}/api/search-indexes/enable`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ contains: true }),
      });
      t.equal(anon.status, 401, `refused: ${headers.authorization ?? 'no credentials'}`);
      await anon.body?.cancel();
    }
    t.match((await indexes.status())[0], { state: 'off' }, 'nothing built for them');
    const bad = await api('/api/search-indexes/enable', { contains: 'yes' });
    t.equal(bad.status, 400);
    t.match((await json(bad)).error, { code: 'INVALID_REQUEST', message: /contains/ });
    const gone = await api('/api/search-indexes/disable', { payload: true });
    t.equal(gone.status, 200);
    t.match(await json(gone), { action: 'disable', changed: { payload: true } });
    t.match(await json(await api('/api/search-indexes')), {
      items: [
        { kind: 'contains', state: 'off' },
        { kind: 'payload', state: 'off' },
      ],
    });
    const audit = await pool.query(
      `SELECT operator, via, action FROM ${schema}.console_audit WHERE operator = 'pat' ORDER BY id`,
    );
    t.match(audit.rows, [
      { via: 'console', action: 'search_index_enable' },
      { via: 'api', action: 'search_index_disable' },
    ]);
  });
});
