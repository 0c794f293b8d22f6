/**
 * Issue 26's destination actions, through the JSON API, the console's forms and the CLI
 * functions, against a real outbox, worker and loopback receiver: pause (deliveries wait,
 * none attempted) and resume (they go), a test event, and the bulk redeliver's preview,
 * bounded runs and resumption; each audited and CSRF-protected; bad input a 400 naming
 * the field.
 */
import { PassThrough } from 'node:stream';
import t from 'tap';
import { ConsoleActions } from '../../../sender/console/actions.js';
import { destinationCommand, recoverCommand } from '../../../sender/console/cli.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import { listenConsole } from '../../../sender/console/server.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import { newIdempotencyKey } from '../../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../../sender/outbox/types.js';
import { senderHarness, startReceiver } from '../harness.js';
import { json, signIn, until } from './helpers.js';

const TOKEN = 'destination-actions-token-0123456789';

function event(url: string): OutboundEvent {
  const idempotencyKey = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: { idempotency_key: idempotencyKey, status: 'completed' },
    idempotencyKey,
    notificationType: 'completed',
    taskType: 'create_media_buy',
  };
}

function capture() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (c) => (text += c));
  return { stream, text: () => text };
}

t.test('destination actions', async (t) => {
  const h = await senderHarness(t);
  let status = 200;
  const rx = await startReceiver(() => ({ status }));
  t.teardown(() => rx.close());
  // A paused job asks again only after 10 minutes: the resume below is seen at once only
  // because it promotes the waiting jobs (issue 26, "resume latency").
  h.startWorker({ pausedRefreshMs: 50, pausedRecheckMs: 600_000 });
  const actions = new ConsoleActions(h.pool, h.queue, h.schema);
  const server = await listenConsole({
    store: new ConsoleStore(h.pool, h.schema),
    actions,
    auth: new ConsoleAuth({ token: TOKEN, operator: 'dana' }),
  });
  t.teardown(() => server.close());
  const base = server.url;
  const api = (path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const origin = new URL(rx.url).origin;
  const hostPort = new URL(rx.url).host;
  const [warm] = await h.outbox.enqueue([event(rx.url)]);
  await h.waitForState(warm!, ['delivered']);

  t.test('pause: deliveries wait, none is attempted; resume: they go', async (t) => {
    const paused = await api('/api/destinations/pause', { origin: hostPort });
    t.equal(paused.status, 200);
    t.match(await json(paused), { paused: true, pending: 0 });
    const again = await api('/api/destinations/pause', { origin });
    t.equal(again.status, 409);
    t.equal((await json(again)).error.code, 'ALREADY_PAUSED');
    const before = rx.received.length;
    const ids = await h.outbox.enqueue([event(rx.url), event(rx.url), event(rx.url)]);
    // Several of the worker's rechecks pass: nothing goes, nothing is counted.
    await new Promise((r) => setTimeout(r, 1500));
    t.equal(rx.received.length, before, 'the receiver got nothing');
    const rows = await h.pool.query(
      `SELECT state, attempts FROM ${h.schema}.outbox_delivery WHERE id = ANY($1::bigint[])`,
      [ids],
    );
    t.same(
      rows.rows.map((r) => [r.state, r.attempts]),
      ids.map(() => ['pending', 0]),
      'pending, no attempt counted',
    );
    const dest = (await json(await api('/api/destinations'))).items.find(
      (d: { origin: string }) => d.origin === origin,
    );
    t.match(dest, { backlog: 3, paused: { operator: 'dana' } });
    const resumed = await api('/api/destinations/resume', { origin: hostPort });
    t.equal(resumed.status, 200);
    t.match(await json(resumed), { paused: false, pending: 3 });
    for (const id of ids) t.equal(await h.waitForState(id, ['delivered']), 'delivered');
    const notPaused = await api('/api/destinations/resume', { origin });
    t.equal(notPaused.status, 409);
    t.equal((await json(notPaused)).error.code, 'NOT_PAUSED');
  });

  t.test('a test event goes through the outbox to the destination', async (t) => {
    const res = await api('/api/destinations/test', { origin });
    t.equal(res.status, 202);
    const r = await json(res);
    t.equal(await h.waitForState(r.id, ['delivered']), 'delivered');
    const got = rx.received.find((x) => x.body.toString().includes(r.idempotencyKey));
    t.match(JSON.parse(got!.body.toString()), { notification_type: 'console_test' });
    t.ok(got!.headers.signature, 'signed like any delivery');
    const unknown = await api('/api/destinations/test', { origin: 'https://nobody.example' });
    t.equal(unknown.status, 404);
    t.equal((await json(unknown)).error.code, 'NO_DESTINATION');
  });

  t.test('bulk redeliver: preview, bounded runs, resumed', async (t) => {
    status = 410;
    const since = new Date(Date.now() - 60_000).toISOString();
    const ids = await h.outbox.enqueue(Array.from({ length: 5 }, () => event(rx.url)));
    for (const id of ids) await h.waitForState(id, ['stopped']);
    const preview = await api(
      `/api/recover/preview?origin=${encodeURIComponent(origin)}&since=${since}`,
    );
    t.equal(preview.status, 200);
    t.match(await json(preview), { count: 5, perCall: 10_000 });
    status = 200;
    // A run bounded at 2 leaves 3, and says so; the preview counts what is left.
    const first = await actions.recover(origin, new Date(since), { name: 'dana', via: 'api' }, 2);
    t.match(first, { recovered: 2, more: true });
    t.match(await actions.recoverPreview(hostPort, new Date(since)), { count: 3 });
    const dry = capture();
    await recoverCommand(actions, hostPort, since, dry.stream, { dryRun: true });
    t.match(dry.text(), /3 stopped or expired deliveries .* would be sent again/);
    const all = capture();
    await recoverCommand(actions, hostPort, since, all.stream, { all: true });
    t.match(all.text(), /3 stopped or expired deliveries .* sent again\n$/);
    for (const id of ids) t.equal(await h.waitForState(id, ['delivered']), 'delivered');
    t.match(await actions.recoverPreview(origin, new Date(since)), { count: 0 });
  });

  t.test('a recover in chunks: each its own transaction, one audit row, batch jobs', async (t) => {
    status = 410;
    const since = new Date(Date.now() - 1000);
    const ids = await h.outbox.enqueue(Array.from({ length: 5 }, () => event(rx.url)));
    for (const id of ids) await h.waitForState(id, ['stopped']);
    status = 200;
    const chunked = new ConsoleActions(h.pool, h.queue, h.schema, undefined, { recoverChunk: 2 });
    const r = await chunked.recover(origin, since, { name: 'erin', via: 'cli' }, 10);
    t.match(r, { recovered: 5, more: false }, 'three chunks of at most 2 took all 5');
    for (const id of ids) t.equal(await h.waitForState(id, ['delivered']), 'delivered');
    const audit = await h.pool.query(
      `SELECT detail FROM ${h.schema}.console_audit WHERE operator = 'erin' AND action = 'recover'`,
    );
    t.equal(audit.rows.length, 1, 'one audit row for the call');
    t.match(audit.rows[0].detail, { recovered: 5 }, 'brought up to date by each chunk');
  });

  t.test('the console: CSRF on every action, the confirmation page counts', async (t) => {
    const c = await signIn(base, TOKEN);
    for (const path of ['/destinations/pause', '/destinations/test', '/destinations/recover']) {
      const res = await c.post(path, { origin, since: new Date().toISOString() });
      t.equal(res.status, 403, `${path} without the CSRF token`);
    }
    const cross = await c.post(
      '/destinations/pause',
      { origin, _csrf: c.csrf },
      { origin: 'https://evil.example' },
    );
    t.equal(cross.status, 403, 'from another origin');
    t.equal((await json(await api('/api/destinations'))).items[0].paused, null, 'not paused');
    const page = await (
      await c.get(`/destinations/recover?origin=${encodeURIComponent(origin)}&since=2020-01-01Z`)
    ).text();
    t.match(page, /<strong>0<\/strong> stopped or expired deliveries/);
    const ok = await c.post('/destinations/pause', { origin, _csrf: c.csrf });
    t.equal(ok.status, 302);
    t.match(ok.headers.get('location'), /done=pause/);
    const out = capture();
    await destinationCommand(actions, 'resume', origin, out.stream);
    t.match(out.text(), /resumed; 0 deliveries pending/);
  });

  t.test('bad input: a 400 naming the field', async (t) => {
    for (const [path, body, field] of [
      ['/api/destinations/pause', {}, 'origin'],
      ['/api/destinations/pause', { origin: '*buyer*' }, 'origin'],
      ['/api/destinations/test', { origin: 'not an origin' }, 'origin'],
      ['/api/destinations/resume', { origin: 42 }, 'origin'],
    ] as const) {
      const res = await api(path, body);
      t.equal(res.status, 400, `${path} ${JSON.stringify(body)}`);
      t.equal((await json(res)).error.field, field);
    }
    const noSince = await api(`/api/recover/preview?origin=${encodeURIComponent(origin)}`);
    t.equal(noSince.status, 400);
    t.equal((await json(noSince)).error.field, 'since');
  });

  t.test('every action audited', async (t) => {
    const audit = await until('the audit', async () => {
      const a = (await json(await api('/api/audit?limit=50'))).items as Array<{
        action: string;
        operator: string;
      }>;
      return a.length >= 7 ? a : null;
    });
    const actionsSeen = new Set(audit.map((a) => a.action));
    for (const a of ['pause', 'resume', 'test_event', 'recover']) t.ok(actionsSeen.has(a), a);
  });
});
