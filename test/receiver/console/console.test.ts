/**
 * The sidecar's operator console against a real sidecar: accepted, duplicate and forged
 * deliveries land in the event log (batched) and show up grouped by code and sender; the
 * senders page lists kids and nothing secret; sign-in is required; and, in chromium, a
 * forged delivery appears under its rejection code.
 */
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startReceiverConsole, createEventLog } from '../../../receiver/console/index.js';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { PolledRevocationCheck } from '../../../receiver/revocation/revocation-check.js';
import { Sidecar } from '../../../receiver/sidecar/server.js';
import { haveChromium, launchBrowser, SCREENSHOTS } from '../../helpers/browser.js';
import { testDatabase } from '../../helpers/db.js';
import { json, signIn, until } from '../../sender/console/helpers.js';
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

t.test('receiver console', async (t) => {
  const { pool, schema } = testDatabase(t, 'rcons');
  const seller = await makeSender('seller-a');
  const forger = await makeSender('seller-a');
  const trust = trustFor([seller], {
    legacy: [
      {
        path_prefix: '/legacy',
        sender: 'seller-h',
        scheme: 'HMAC-SHA256',
        secrets: ['hmac-secret-0123456789-ABCDEFGHIJKLMNOP'],
      },
    ],
  });
  const app = await startApp(() => 200);
  const eventLog = await createEventLog({ pool, schema });
  const keys = new TrustedKeyResolver(trust);
  const s = await Sidecar.start({
    port: 0,
    trust,
    profile,
    protocolVersion: '3.2',
    target: { forward: app.url },
    pool,
    schema,
    keys,
    replay: new MemoryReplayStore(),
    purgeIntervalMs: 0,
    observe: eventLog.record,
  });
  // seller-a's revocation list cannot be had (404): stale, never loaded, and shown so.
  const revocation = new PolledRevocationCheck({
    profile,
    keys,
    sources: [{ url: `${app.url}/no-such-revocation-list.json`, senderId: 'seller-a' }],
    allowLoopback: true,
  });
  await revocation.pollNow();
  const dataDir = await mkdtemp(join(tmpdir(), 'rcons-'));
  const operatorConsole = await startReceiverConsole({
    pool,
    schema,
    eventLog,
    metrics: s.metrics,
    queue: s.queue,
    target: `forwarded to ${app.url}`,
    keys,
    revocation,
    dataDir,
    host: '127.0.0.1',
    port: 0,
  });
  t.teardown(async () => {
    await operatorConsole.close();
    await eventLog.close();
    await s.close();
    await app.close();
  });

  const file = join(dataDir, 'credentials.json');
  t.equal((await stat(file)).mode & 0o777, 0o600, 'credentials file 0600');
  const creds = JSON.parse(await readFile(file, 'utf8')).receiver_console;
  t.equal(creds.url, operatorConsole.url);

  const deliver = (sender: typeof seller, body: Record<string, unknown>) => {
    const sig = signed(`${s.url}/webhooks/seller-a`, JSON.stringify(body), sender);
    return post(`${s.url}/webhooks/seller-a`, sig.body, sig.headers);
  };
  const first = envelope({ task_id: 'task_42', status: 'completed' });
  t.equal((await deliver(seller, first)).status, 200);
  t.equal((await deliver(seller, first)).status, 200, 'a duplicate');
  for (let i = 0; i < 3; i++) {
    t.equal((await deliver(forger, envelope())).status, 401, 'forged: unknown key');
  }
  await eventLog.flush();

  const base = operatorConsole.url;
  t.equal((await fetch(`${base}/api/rejections`)).status, 401, 'no anonymous access');
  t.equal((await fetch(`${base}/`, { redirect: 'manual' })).status, 302);
  const c = await signIn(base, creds.token);
  const rej = await json(await c.get('/api/rejections'));
  t.match(rej.items, [
    {
      code: 'webhook_signature_key_unknown',
      sender: `keyid ${forger.key.kid}`,
      httpStatus: 401,
      lastHour: 3,
    },
    { code: 'duplicate', sender: 'seller-a', httpStatus: 200, lastHour: 1 },
  ]);
  t.match(rej.totals.byStatus, [
    { status: '200', count: 2 },
    { status: '401', count: 3 },
  ]);
  const events = await json(await c.get('/api/events?code=published'));
  t.match(events.items, [
    {
      sender: 'seller-a',
      taskId: 'task_42',
      eventStatus: 'completed',
      idempotencyKey: first.idempotency_key,
    },
  ]);
  const senders = await json(await c.get('/api/senders'));
  t.match(senders.items, [{ sender: 'seller-a', kids: [seller.key.kid], jwksUri: null }]);
  t.match(senders.items[0].revocation, [
    {
      url: `${app.url}/no-such-revocation-list.json`,
      sender: 'seller-a',
      lastFetch: null,
      nextUpdate: null,
      stale: true,
    },
  ]);
  const sendersPage = await (await c.get('/senders')).text();
  t.notMatch(sendersPage, /hmac-secret/, 'never a secret');
  t.match(sendersPage, />stale<\/span[\s\S]*no-such-revocation-list\.json[\s\S]*never loaded/);
  t.notMatch(sendersPage, /"d"/, 'never a private key member');
  const overview = await (await c.get('/')).text();
  t.match(overview, /webhook_signature_key_unknown/);
  t.match(overview, /content-security-policy|<h1>Overview<\/h1>/);
  t.equal((await c.post('/logout', {})).status, 403, 'CSRF on every POST');

  // The log stays bounded.
  for (let i = 0; i < 5; i++) {
    eventLog.record({
      at: Date.now(),
      httpStatus: 200,
      code: 'published',
      sender: 'x',
      keyid: null,
      taskId: null,
      eventStatus: null,
      idempotencyKey: null,
    });
  }
  await eventLog.flush();
  const small = await createEventLog({ pool, schema, maxRows: 3 });
  t.ok((await small.prune()) > 0);
  const left = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.console_events`);
  t.ok(left.rows[0].n <= 4);
  await small.close();

  t.test(
    'in chromium: a forged delivery under its code',
    { skip: !haveChromium() && 'no /usr/bin/chromium' },
    async (t) => {
      const context = await launchBrowser(t);
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text());
      });
      await page.goto(`${base}/`);
      t.match(page.url(), /\/login$/);
      await page.fill('input[name=token]', creds.token);
      await page.click('button[type=submit]');
      await page.waitForURL(`${base}/`);
      const forgedAgain = await makeSender('seller-a');
      t.equal((await deliver(forgedAgain, envelope())).status, 401);
      await eventLog.flush();
      await until('the forged delivery in the overview', async () => {
        await page.reload();
        const text = await page.textContent('#rejections');
        return text?.includes(`keyid ${forgedAgain.key.kid}`) ?? false;
      });
      const row = page.locator('#rejections tr', { hasText: forgedAgain.key.kid });
      t.match(await row.textContent(), /webhook_signature_key_unknown/);
      await page.screenshot({ path: `${SCREENSHOTS}receiver-overview.png`, fullPage: true });
      await row.locator('a').click();
      await page.waitForURL(/\/events\?code=webhook_signature_key_unknown/);
      t.match(await page.textContent('#events tbody'), forgedAgain.key.kid);
      await page.screenshot({ path: `${SCREENSHOTS}receiver-events.png`, fullPage: true });
      await page.click('nav a[href="/senders"]');
      t.match(await page.textContent('#senders'), seller.key.kid);
      await page.screenshot({ path: `${SCREENSHOTS}receiver-senders.png`, fullPage: true });
      t.same(problems, []);
    },
  );
});
