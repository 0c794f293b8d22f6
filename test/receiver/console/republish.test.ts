/**
 * The sidecar's publish outcomes and Re-publish (issue 26), against a real sidecar that
 * forwards to a loopback app: an accepted event's outcome is listed (published, or failed
 * with the app's answer while the sender is told 503); Re-publish hands it to the app
 * again with the same idempotency key and the redelivery flag, from the JSON API, the
 * page's form (CSRF-checked) and the CLI alike, each audited; malformed input is a 400
 * naming its field; an unknown event 404; a body too large to keep 409 BODY_NOT_KEPT. In
 * chromium, the Re-publish button does it and the page says so.
 */
import { PassThrough } from 'node:stream';
import t from 'tap';
import { consoleTarget, listPublished, republish } from '../../../receiver/console/cli.js';
import {
  createEventLog,
  createPublishedLog,
  startReceiverConsole,
} from '../../../receiver/console/index.js';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { Sidecar } from '../../../receiver/sidecar/server.js';
import type { Publisher } from '../../../receiver/publish/types.js';
import { haveChromium, launchBrowser, SCREENSHOTS } from '../../helpers/browser.js';
import { testDatabase } from '../../helpers/db.js';
import { json, signIn } from '../../sender/console/helpers.js';
import { startApp } from '../support/app.js';
import {
  envelope,
  makeSender,
  MemoryReplayStore,
  profile,
  signed,
  trustFor,
} from '../support/fixtures.js';
import { post } from '../support/server.js';

const TOKEN = 'receiver-console-token-republish';

t.test('sidecar: publish outcomes and Re-publish', async (t) => {
  const { pool, schema } = testDatabase(t, 'rrepub');
  const seller = await makeSender('seller-a');
  const trust = trustFor([seller]);
  let appStatus = 200;
  const app = await startApp(() => appStatus);
  const eventLog = await createEventLog({ pool, schema });
  // Small bound on kept bodies, so one test event is over it.
  const published = await createPublishedLog({ pool, schema, maxBodyBytes: 2000 });
  const s = await Sidecar.start({
    port: 0,
    trust,
    profile,
    protocolVersion: '3.2',
    target: { forward: app.url },
    pool,
    schema,
    keys: new TrustedKeyResolver(trust),
    replay: new MemoryReplayStore(),
    purgeIntervalMs: 0,
    observe: eventLog.record,
    wrapPublisher: (p: Publisher) => published.wrap(p),
  });
  const operatorConsole = await startReceiverConsole({
    pool,
    schema,
    eventLog,
    published,
    metrics: s.metrics,
    queue: s.queue,
    target: `forwarded to ${app.url}`,
    keys: null,
    dataDir: '/nonexistent',
    token: TOKEN,
    host: '127.0.0.1',
    port: 0,
  });
  t.teardown(async () => {
    await operatorConsole.close();
    await published.close();
    await eventLog.close();
    await s.close();
    await app.close();
  });
  const deliver = (body: Record<string, unknown>) => {
    const sig = signed(`${s.url}/webhooks/seller-a`, JSON.stringify(body), seller);
    return post(`${s.url}/webhooks/seller-a`, sig.body, sig.headers);
  };
  const base = operatorConsole.url;
  const bearer = { authorization: `Bearer ${TOKEN}` };
  const api = (path: string, method = 'GET') =>
    fetch(`${base}${path}`, { method, headers: bearer });

  const ok = envelope({ task_id: 'task_ok', status: 'completed' });
  t.equal((await deliver(ok)).status, 200, 'accepted and published');
  appStatus = 500;
  const down = envelope({ task_id: 'task_down', status: 'completed' });
  t.equal((await deliver(down)).status, 503, 'the app failed: the sender is told to retry');
  appStatus = 200;
  const big = envelope({ task_id: 'task_big', status: 'completed', note: 'x'.repeat(3000) });
  t.equal((await deliver(big)).status, 200);
  await published.flush();

  const listed = await json(await api('/api/published'));
  const byKey = new Map(listed.items.map((r: { idempotencyKey: string }) => [r.idempotencyKey, r]));
  t.match(byKey.get(ok.idempotency_key), {
    sender: 'seller-a',
    taskId: 'task_ok',
    outcome: 'published',
    publishes: 1,
    bodyKept: true,
  });
  t.match(byKey.get(down.idempotency_key), { outcome: 'failed', error: /500/, bodyKept: true });
  t.match(byKey.get(big.idempotency_key), { outcome: 'published', bodyKept: false });
  const failedOnly = await json(await api('/api/published?outcome=failed'));
  t.same(
    failedOnly.items.map((r: { idempotencyKey: string }) => r.idempotencyKey),
    [down.idempotency_key],
  );

  t.test('Re-publish through the JSON API: same key, flagged as a redelivery', async (t) => {
    const row = byKey.get(down.idempotency_key) as { id: string };
    const before = app.hits.length;
    const res = await api(`/api/published/${row.id}/republish`, 'POST');
    t.equal(res.status, 200);
    t.match(await json(res), {
      id: row.id,
      idempotencyKey: down.idempotency_key,
      outcome: 'published',
    });
    const hit = app.hits[before]!;
    t.equal(hit.headers['x-svc-idempotency-key'], down.idempotency_key, 'the same key');
    t.equal(hit.headers['x-svc-redelivery'], 'true', 'flagged as a redelivery');
    t.match(hit.body, /task_down/, 'the kept body');
    const after = await json(await api(`/api/published?key=${down.idempotency_key}`));
    t.match(after.items[0], { outcome: 'published', publishes: 2, republishedBy: 'operator' });
    const audit = await json(await api('/api/audit'));
    t.match(audit.items[0], {
      operator: 'operator',
      via: 'api',
      action: 'republish',
      target: `seller-a ${down.idempotency_key}`,
      detail: { id: row.id, outcome: 'published' },
    });
  });

  t.test('a failed re-publish is recorded, audited and answered 502', async (t) => {
    const row = byKey.get(ok.idempotency_key) as { id: string };
    appStatus = 503;
    const res = await api(`/api/published/${row.id}/republish`, 'POST');
    appStatus = 200;
    t.equal(res.status, 502);
    t.match(await json(res), { outcome: 'failed', error: /503/ });
    const after = await json(await api(`/api/published?key=${ok.idempotency_key}`));
    t.match(after.items[0], { outcome: 'failed' });
    t.match((await json(await api('/api/audit'))).items[0], { detail: { outcome: 'failed' } });
  });

  t.test('refusals: malformed input, unknown event, body not kept, no CSRF', async (t) => {
    for (const [q, field] of [
      ['outcome=bogus', 'outcome'],
      ['before=abc', 'before'],
      [`sender=${'s'.repeat(301)}`, 'sender'],
    ] as const) {
      const r = await api(`/api/published?${q}`);
      t.equal(r.status, 400, q);
      t.match((await json(r)).error, { code: 'INVALID_REQUEST', field }, q);
    }
    for (const id of ['abc', '99999999']) {
      const r = await api(`/api/published/${id}/republish`, 'POST');
      t.equal(r.status, 404, id);
      t.equal((await json(r)).error.code, 'NOT_FOUND');
    }
    const bigRow = byKey.get(big.idempotency_key) as { id: string };
    const r = await api(`/api/published/${bigRow.id}/republish`, 'POST');
    t.equal(r.status, 409);
    t.equal((await json(r)).error.code, 'BODY_NOT_KEPT');
    t.equal((await fetch(`${base}/api/published`)).status, 401, 'no anonymous access');
    const c = await signIn(base, TOKEN);
    const row = byKey.get(ok.idempotency_key) as { id: string };
    const noCsrf = await c.post(`/published/${row.id}/republish`, {});
    t.equal(noCsrf.status, 403, 'a form without the CSRF token is refused');
    const page = await (await c.get('/published')).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
    const viaForm = await c.post(`/published/${row.id}/republish`, { _csrf: csrf });
    t.equal(viaForm.status, 302);
    t.match(viaForm.headers.get('location'), /republished=\d+&outcome=published/);
    t.match((await json(await api('/api/audit'))).items[0], { via: 'console' });
  });

  t.test('the CLI: list and republish through the console API', async (t) => {
    const target = { url: base, token: TOKEN };
    const out = new PassThrough();
    let text = '';
    out.on('data', (b: Buffer) => (text += b.toString()));
    t.equal(await listPublished(target, { key: String(down.idempotency_key) }, false, out), 0);
    t.match(text, new RegExp(`published +seller-a +${String(down.idempotency_key)}`));
    const row = byKey.get(down.idempotency_key) as { id: string };
    t.equal(await republish(target, row.id, out), 0);
    t.match(text, /re-published to the app/);
    t.match((await json(await api('/api/audit'))).items[0], { via: 'cli', action: 'republish' });
  });

  t.test('the CLI: a console URL that is not one, or no console there, said plainly', async (t) => {
    await t.rejects(consoleTarget({ console: 'not-a-url' }), {
      code: 'INVALID_REQUEST',
      field: 'console',
      message: /an http\(s\) URL of the sidecar's console/,
    });
    await t.rejects(consoleTarget({ console: 'ftp://127.0.0.1/' }), {
      code: 'INVALID_REQUEST',
      field: 'console',
    });
    const nobody = { url: 'http://127.0.0.1:1', token: TOKEN };
    await t.rejects(listPublished(nobody, {}, false, new PassThrough()), {
      code: 'CONSOLE_UNREACHABLE',
      message: /does not answer.*svc receiver --console-listen/,
    });
    // Something that answers, but not the console: the app behind the sidecar.
    await t.rejects(republish({ url: app.url, token: TOKEN }, '1', new PassThrough()), {
      code: 'CONSOLE_UNREACHABLE',
      message: /answered HTTP \d+ with no JSON/,
    });
  });

  t.test(
    'in chromium: Re-publish from the Published page',
    { skip: !haveChromium() && 'no /usr/bin/chromium' },
    async (t) => {
      const context = await launchBrowser(t);
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text());
      });
      await page.goto(`${base}/login`);
      await page.fill('input[name=token]', TOKEN);
      await page.click('button[type=submit]');
      await page.goto(`${base}/published`);
      const row = byKey.get(ok.idempotency_key) as { id: string };
      const before = app.hits.length;
      await page.click(`#published-${row.id} button`);
      await page.waitForURL(/\/published\?republished=/);
      t.match(await page.textContent('.flash'), new RegExp(`Event ${row.id} re-published`));
      t.equal(app.hits.length, before + 1, 'the app got it once more');
      t.match(await page.textContent(`#published-${row.id}`), /published/);
      await page.screenshot({ path: `${SCREENSHOTS}receiver-published.png`, fullPage: true });
      await page.goto(`${base}/audit`);
      t.match(await page.textContent('#audit'), /republish/);
      t.same(problems, [], 'no script error, no CSP violation');
    },
  );
});
