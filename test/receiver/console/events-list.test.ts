/**
 * The sidecar console's Events list (issue 26): newest first in numeric id order (9, 10 ...
 * not "9" > "10"), its `before` cursor lining pages up with no gap and no repeat; and, in
 * chromium at 1366 px, the table of long keys and kids not wider than the window.
 */
import t from 'tap';
import { createEventLog } from '../../../receiver/console/index.js';
import { listenReceiverConsole } from '../../../receiver/console/server.js';
import { ReceiverConsoleStore } from '../../../receiver/console/store.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import { haveChromium, launchBrowser, SCREENSHOTS } from '../../helpers/browser.js';
import { testDatabase } from '../../helpers/db.js';
import { json, signIn } from '../../sender/console/helpers.js';

const TOKEN = 'receiver-events-token-0123456789';

t.test('sidecar events: newest first, pages line up', async (t) => {
  const { pool, schema } = testDatabase(t, 'revl');
  const log = await createEventLog({ pool, schema });
  t.teardown(() => log.close());
  const total = 150;
  for (let i = 0; i < total; i++) {
    log.record({
      at: Date.now(),
      httpStatus: i % 3 === 0 ? 401 : 200,
      code: i % 3 === 0 ? 'webhook_signature_key_unknown' : 'published',
      sender: i % 3 === 0 ? null : 'seller-with-a-rather-long-name-for-wrapping.example',
      keyid: `kid-${'x'.repeat(60)}-${i}`,
      taskId: `task_${i}_${'t'.repeat(40)}`,
      eventStatus: 'completed',
      idempotencyKey: `${'k'.repeat(60)}-${String(i).padStart(4, '0')}`,
    });
  }
  await log.flush();
  const server = await listenReceiverConsole({
    store: new ReceiverConsoleStore(pool, schema),
    auth: new ConsoleAuth({ token: TOKEN, operator: 'op' }),
    senders: () => [],
    totals: async () => ({ byStatus: [], queueBacklog: null, target: 'forwarded' }),
    host: '127.0.0.1',
    port: 0,
  });
  t.teardown(() => server.close());
  const c = await signIn(server.url, TOKEN);

  const first = (await json(await c.get('/api/events'))).items as Array<{ id: string }>;
  t.equal(first.length, 100);
  const ids = first.map((e) => Number(e.id));
  t.same(
    ids,
    [...ids].sort((a, b) => b - a),
    'numeric order, newest first',
  );
  const max = await pool.query(`SELECT max(id)::int AS m FROM ${schema}.console_events`);
  t.equal(ids[0], max.rows[0].m, 'the newest event first');
  const second = (await json(await c.get(`/api/events?before=${first.at(-1)!.id}`)))
    .items as Array<{
    id: string;
  }>;
  t.equal(second.length, total - 100, 'the second page holds the rest');
  const all = [...first, ...second].map((e) => Number(e.id));
  t.equal(new Set(all).size, total, 'no repeat across pages');
  t.ok(Number(second[0]!.id) === ids.at(-1)! - 1, 'no gap between pages');
  const answers = await json(await c.get('/api/answers'));
  t.same(answers.codes, ['published', 'webhook_signature_key_unknown']);
  const sum = (code: string) =>
    answers.points.reduce((n: number, p: Record<string, number>) => n + (p[code] ?? 0), 0);
  t.equal(sum('published'), 100, 'answers by code: accepted');
  t.equal(sum('webhook_signature_key_unknown'), 50, 'answers by code: refused');
  const page = await (await c.get('/events')).text();
  t.match(page, new RegExp(`href="/events\\?before=${first.at(-1)!.id}"`), 'older link');

  t.test(
    'in chromium at 1366 px: the Events table fits the window',
    { skip: !haveChromium() && 'no /usr/bin/chromium' },
    async (t) => {
      const context = await launchBrowser(t);
      const p = await context.newPage();
      await p.setViewportSize({ width: 1366, height: 768 });
      await p.goto(`${server.url}/login`);
      await p.fill('input[name=token]', TOKEN);
      await p.click('button[type=submit]');
      await p.goto(`${server.url}/events`);
      // A string: the test's tsconfig has no DOM types.
      const sizes = (await p.evaluate(`({
        table: document.getElementById('events').scrollWidth,
        page: document.documentElement.scrollWidth,
        window: document.documentElement.clientWidth,
      })`)) as { table: number; page: number; window: number };
      await p.screenshot({ path: `${SCREENSHOTS}receiver-events-1366.png` });
      // The Overview's chart drew its table's figures.
      await p.goto(`${server.url}/`);
      await p.waitForSelector('[data-chart="answers"][data-drawn]');
      const drawn = JSON.parse(
        (await p.getAttribute('[data-chart="answers"]', 'data-drawn')) ?? 'null',
      ) as number[][];
      const rows = await p.$$eval('#answers tbody tr[data-at]', (trs) =>
        trs.map((tr) => [
          tr.getAttribute('data-at'),
          ...[...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent!.trim()),
        ]),
      );
      t.same(
        drawn[0],
        rows.map((r) => Date.parse(r[0]!) / 1000),
        'hours',
      );
      t.same(
        drawn[1],
        rows.map((r) => Number(r[1])),
        'published as in the table',
      );
      t.same(
        drawn[2],
        rows.map((r) => Number(r[2])),
        'refused as in the table',
      );
      await p.screenshot({ path: `${SCREENSHOTS}receiver-overview-chart.png`, fullPage: true });
      t.ok(sizes.page <= sizes.window, `page ${sizes.page} <= window ${sizes.window}`);
      t.ok(sizes.table <= sizes.window, `table ${sizes.table} <= window ${sizes.window}`);
    },
  );
});
