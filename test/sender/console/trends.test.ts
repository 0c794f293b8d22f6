/**
 * Trends (issue 26) against a real outbox, worker and receiver failing one destination:
 * the API's points and failing destinations, a bad range refused; in chromium, each chart
 * (uPlot, served by the console) drew exactly the figures of the table it summarises, and
 * the page works under the CSP with nothing from another origin.
 */
import t from 'tap';
import { ConsoleActions } from '../../../sender/console/actions.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import { listenConsole } from '../../../sender/console/server.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import { newIdempotencyKey } from '../../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../../sender/outbox/types.js';
import { haveChromium, launchBrowser, SCREENSHOTS } from '../../helpers/browser.js';
import { senderHarness, startReceiver } from '../harness.js';
import { json, signIn } from './helpers.js';

const TOKEN = 'trends-console-token-0123456789';

function event(url: string): OutboundEvent {
  const idempotencyKey = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: { idempotency_key: idempotencyKey, status: 'completed' },
    idempotencyKey,
    notificationType: 'completed',
  };
}

t.test('trends', async (t) => {
  const h = await senderHarness(t);
  const good = await startReceiver(() => ({ status: 200 }));
  const bad = await startReceiver(() => ({ status: 410 }));
  t.teardown(() => Promise.all([good.close(), bad.close()]));
  h.startWorker();
  const server = await listenConsole({
    store: new ConsoleStore(h.pool, h.schema),
    actions: new ConsoleActions(h.pool, h.queue, h.schema),
    auth: new ConsoleAuth({ token: TOKEN, operator: 'erin' }),
  });
  t.teardown(() => server.close());
  const ids = await h.outbox.enqueue([
    ...Array.from({ length: 6 }, () => event(good.url)),
    ...Array.from({ length: 3 }, () => event(bad.url)),
  ]);
  for (const id of ids) await h.waitForState(id);
  const c = await signIn(server.url, TOKEN);

  for (const range of ['hour', 'day', 'week']) {
    const tr = await json(await c.get(`/api/trends?range=${range}`));
    const sum = (k: 'succeeded' | 'failed') =>
      tr.points.reduce((s: number, p: Record<string, number>) => s + p[k]!, 0);
    t.equal(sum('succeeded'), 6, `${range}: successes`);
    t.equal(sum('failed'), 3, `${range}: failures`);
    t.match(tr.failing, [{ origin: new URL(bad.url).origin, failed: 3, failureRate: 1 }]);
    t.equal(tr.failing.length, 1, `${range}: only the failing origin`);
  }
  const wrong = await c.get('/api/trends?range=year');
  t.equal(wrong.status, 400);
  t.equal((await json(wrong)).error.field, 'range');
  const page = await (await c.get('/trends?range=hour')).text();
  t.match(page, /<table class="list" id="trend-table">/, 'a table without JavaScript');
  t.match(page, /src="\/static\/uplot\.js"/, 'the library from the console itself');
  const lib = await c.get('/static/uplot.js');
  t.equal(lib.status, 200);
  t.match(await lib.text(), /uPlot/);

  t.test(
    'in chromium: each chart drew its table',
    { skip: !haveChromium() && 'no /usr/bin/chromium' },
    async (t) => {
      const context = await launchBrowser(t);
      const p = await context.newPage();
      const problems: string[] = [];
      const foreign: string[] = [];
      p.on('pageerror', (e) => problems.push(e.message));
      p.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
      p.on('request', (r) => !r.url().startsWith(server.url) && foreign.push(r.url()));
      await p.goto(`${server.url}/login`);
      await p.fill('input[name=token]', TOKEN);
      await p.click('button[type=submit]');
      for (const range of ['hour', 'day']) {
        await p.goto(`${server.url}/trends?range=${range}`);
        await p.waitForSelector('[data-chart="outcomes"][data-drawn]');
        await p.waitForSelector('[data-chart="latency"][data-drawn]');
        t.ok(await p.locator('[data-chart="outcomes"] canvas').count(), 'a canvas drawn');
        const rows = await p.$$eval('#trend-table tbody tr[data-at]', (trs) =>
          trs.map((tr) => [
            tr.getAttribute('data-at'),
            ...[...tr.querySelectorAll('td')].slice(1).map((td) => td.textContent!.trim()),
          ]),
        );
        const drawn = async (kind: string) =>
          JSON.parse(
            (await p.getAttribute(`[data-chart="${kind}"]`, 'data-drawn')) ?? 'null',
          ) as Array<Array<number | null>>;
        const outcomes = await drawn('outcomes');
        const latency = await drawn('latency');
        const num = (v: string) => (v === '-' ? null : Number(v));
        t.same(
          outcomes[0],
          rows.map((r) => Date.parse(r[0]!) / 1000),
          `${range}: x`,
        );
        t.same(
          outcomes[1],
          rows.map((r) => num(r[1]!)),
          `${range}: succeeded as in the table`,
        );
        t.same(
          outcomes[2],
          rows.map((r) => num(r[2]!)),
          `${range}: failed as in the table`,
        );
        t.same(
          latency[1],
          rows.map((r) => num(r[3]!)),
          `${range}: p50 as in the table`,
        );
        t.same(
          latency[2],
          rows.map((r) => num(r[4]!)),
          `${range}: p99 as in the table`,
        );
        await p.screenshot({ path: `${SCREENSHOTS}console-trends-${range}.png`, fullPage: true });
      }
      t.same(problems, [], 'no script error, no CSP violation');
      t.same(foreign, [], 'nothing from another origin');
    },
  );
});
