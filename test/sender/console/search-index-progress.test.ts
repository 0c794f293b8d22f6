/**
 * An enable from the search indexes page shows its progress (issue 26; console
 * search-index-build.ts): the form answers at once, the page then names the partition
 * being built (n of N) with a progress bar and reloads itself, a second enable meanwhile is
 * refused (409 SEARCH_INDEX_BUILDING), and once built the page says so and stops
 * reloading. The build is held at its first partition by a lock a test transaction keeps
 * (CREATE INDEX CONCURRENTLY waits for it), so "while it builds" is a state, not a timing.
 */
import t from 'tap';
import { seedConsoleData } from '../../../bench/console-seed.js';
import { ConsoleActions } from '../../../sender/console/actions.js';
import { listenConsole } from '../../../sender/console/server.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import type { DeliveryQueue } from '../../../sender/delivery/queue.js';
import { migrateSender } from '../../../sender/schema.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import { testDatabase } from '../../helpers/db.js';
import { json, signIn, until } from './helpers.js';

const TOKEN = 'search-index-progress-token-0123456';

interface BuildView {
  items: Array<{ kind: string; state: string }>;
  build: {
    running: boolean;
    by: string;
    step: { kind: string; partition: string; step: string; done: number; of: number } | null;
    error: { code: string } | null;
  } | null;
}

t.test('an enable from the page shows its progress, then its outcome', async (t) => {
  const { pool, schema } = testDatabase(t, 'sidxp');
  await migrateSender(pool, schema);
  await seedConsoleData(pool, schema, { deliveries: 2000, attemptsPer: 1 });
  const server = await listenConsole({
    store: new ConsoleStore(pool, schema),
    actions: new ConsoleActions(pool, null as unknown as DeliveryQueue, schema),
    auth: new ConsoleAuth({ token: TOKEN, operator: 'pat' }),
  });
  t.teardown(() => server.close());
  const api = async (path: string, body?: unknown) =>
    fetch(`${server.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const view = async () => (await json(await api('/api/search-indexes'))) as BuildView;
  const c = await signIn(server.url, TOKEN);
  t.equal((await view()).build, null, 'no build since the console started');
  t.notMatch(await (await c.get('/search-indexes')).text(), /http-equiv="refresh"/);

  // Holds the first partition an enable visits (the legacy one: partitions go by name).
  const holder = await pool.connect();
  t.teardown(() => holder.release());
  await holder.query('BEGIN');
  await holder.query(`LOCK TABLE ${schema}.outbox_event_legacy IN SHARE UPDATE EXCLUSIVE MODE`);

  const posted = await c.post('/search-indexes/enable', { payload: 'on', _csrf: c.csrf });
  t.equal(posted.status, 302, 'the form answers before the build is done');
  t.equal(posted.headers.get('location'), '/search-indexes');
  const during = await until('the build to reach its first partition', async () => {
    const v = await view();
    return v.build?.step?.step === 'building' ? v : null;
  });
  t.match(during.build, {
    running: true,
    by: 'pat',
    step: { kind: 'payload', partition: 'outbox_event_legacy', step: 'building', done: 1 },
    error: null,
  });
  t.ok(during.build!.step!.of > 1, 'the legacy partition and the days');
  t.match(during.items, [{ kind: 'contains' }, { kind: 'payload', state: 'partial' }]);
  const page = await (await c.get('/search-indexes')).text();
  t.match(page, /<meta http-equiv="refresh" content="2"/, 'the page reloads itself meanwhile');
  t.match(page, /id="search-index-build"/);
  t.match(page, /Building \(payload\), started by pat/);
  t.match(page, /payload: outbox_event_legacy building, partition 1 of \d+/);
  t.match(page, /<progress\s+max="\d+"\s+value="0"/);

  const again = await api('/api/search-indexes/enable', { contains: true });
  t.equal(again.status, 409, 'a second enable while one builds');
  t.match((await json(again)).error, { code: 'SEARCH_INDEX_BUILDING', message: /pat/ });
  const form = await c.post('/search-indexes/enable', { payload: 'on', _csrf: c.csrf });
  t.equal(form.status, 409, 'from the form too');
  await form.body?.cancel();

  await holder.query('ROLLBACK');
  const after = await until('the build to finish', async () => {
    const v = await view();
    return v.build?.running === false ? v : null;
  });
  t.match(after.build, { error: null, step: { kind: 'payload', step: 'built' } });
  t.equal(after.build!.step!.done, after.build!.step!.of, 'every partition');
  t.match(after.items, [
    { kind: 'contains', state: 'off' },
    { kind: 'payload', state: 'on' },
  ]);
  const done = await (await c.get('/search-indexes')).text();
  t.notMatch(done, /http-equiv="refresh"/, 'no more reloading');
  t.notMatch(done, /id="search-index-build"/);
  t.match(
    done,
    /class="flash ok"[^>]*>Last enable \(payload, by pat\): built, \d+ partition indexes new/,
  );
  t.match(done, /payload: indexed/);
});

t.test('a build that fails says why on the page', async (t) => {
  const { pool, schema } = testDatabase(t, 'sidxf');
  await migrateSender(pool, schema);
  const server = await listenConsole({
    store: new ConsoleStore(pool, schema),
    actions: new ConsoleActions(pool, null as unknown as DeliveryQueue, schema),
    auth: new ConsoleAuth({ token: TOKEN, operator: 'pat' }),
  });
  t.teardown(() => server.close());
  const c = await signIn(server.url, TOKEN);
  // The body function the payload index is over is gone: its CREATE INDEX fails.
  await pool.query(`DROP FUNCTION ${schema}.console_body_json(bytea) CASCADE`);
  const posted = await c.post('/search-indexes/enable', { payload: 'on', _csrf: c.csrf });
  t.equal(posted.status, 302);
  const page = await until('the failure on the page', async () => {
    const text = await (await c.get('/search-indexes')).text();
    return /class="flash error"/.test(text) ? text : null;
  });
  t.match(
    page,
    /Last enable \(payload, by pat\): not built \(BUILD_FAILED\): [^<]*console_body_json/,
  );
  t.notMatch(page, /http-equiv="refresh"/);
});
