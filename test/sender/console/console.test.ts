/**
 * The seller console over real HTTP against a real outbox, worker and loopback receiver:
 * authentication, filters and pagination, a failing delivery's page (its hostile body shown
 * as text), CSRF, redeliver and recover (audited, attempts carry the operator), live events.
 */
import t from 'tap';
import { ConsoleActions } from '../../../sender/console/actions.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import { listenConsole } from '../../../sender/console/server.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import { newIdempotencyKey } from '../../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../../sender/outbox/types.js';
import { senderHarness, startReceiver } from '../harness.js';
import { testDatabase } from '../../helpers/db.js';
import { json, signIn, until } from './helpers.js';

const TOKEN = 'test-console-token-0123456789';
const REJECTION = JSON.stringify({
  error: '<b>bad</b> "><img src=x onerror=alert(3)>',
  token: 'sekrit-abc123',
  echoed: 'Authorization: Bearer eyJhbGciOiJFUzI1NiJ9.stolen',
});

function event(
  url: string,
  extra: Partial<OutboundEvent> = {},
  payload: Record<string, unknown> = {},
): OutboundEvent {
  const idempotencyKey = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: {
      idempotency_key: idempotencyKey,
      task_id: 'task_1',
      status: 'completed',
      ...payload,
    },
    idempotencyKey,
    notificationType: 'completed',
    principalId: 'p_1',
    mediaBuyId: 'mb_1',
    taskId: 'task_1',
    ...extra,
  };
}

t.test('seller console', async (t) => {
  const h = await senderHarness(t);
  let failing = true;
  // A failing answer carries hostile markup and credentials: the attempt keeps a snippet of
  // it, shown as text, with the credentials masked.
  const rx = await startReceiver(() =>
    failing
      ? { status: 400, body: REJECTION, headers: { 'content-type': 'application/json' } }
      : { status: 200 },
  );
  t.teardown(() => rx.close());
  h.startWorker();
  const store = new ConsoleStore(h.pool, h.schema);
  const actions = new ConsoleActions(h.pool, h.queue, h.schema);
  const consoleServer = await listenConsole({
    store,
    actions,
    auth: new ConsoleAuth({ token: TOKEN, operator: 'alice' }),
    liveEveryMs: 100,
  });
  t.teardown(() => consoleServer.close());
  const base = consoleServer.url;

  const hostile = event(
    rx.url,
    { mediaBuyId: 'mb_hostile' },
    {
      message: '<script>alert(1)</script>',
      note: '"><img src=x onerror=alert(2)>',
    },
  );
  const [hostileId] = await h.outbox.enqueue([hostile]);
  const others = await h.outbox.enqueue([
    event(rx.url),
    event(rx.url),
    event(rx.url, { notificationType: 'failed' }),
  ]);
  for (const id of [hostileId!, ...others]) await h.waitForState(id, ['stopped']);

  t.test('no anonymous access, not even read-only', async (t) => {
    const page = await fetch(`${base}/deliveries`, { redirect: 'manual' });
    t.equal(page.status, 302);
    t.match(page.headers.get('location'), /^\/login\?next=/);
    const api = await fetch(`${base}/api/deliveries`);
    t.equal(api.status, 401);
    t.equal((await json(api)).error.code, 'UNAUTHENTICATED');
    const wrongBearer = await fetch(`${base}/api/deliveries`, {
      headers: { authorization: 'Bearer nope' },
    });
    t.equal(wrongBearer.status, 401);
    const post = await fetch(`${base}/deliveries/${hostileId}/redeliver`, { method: 'POST' });
    t.equal(post.status, 401);
    const bad = await fetch(`${base}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=wrong-token-wrong-token',
    });
    t.equal(bad.status, 401);
    t.match(await bad.text(), /not valid/);
    const login = await fetch(`${base}/login`);
    t.equal(login.status, 200);
    t.match(login.headers.get('content-security-policy'), /script-src 'self'/);
    const css = await fetch(`${base}/static/console.css`);
    t.equal(css.status, 200);
    t.equal((await fetch(`${base}/static/nope.js`)).status, 404);
  });

  const c = await signIn(base, TOKEN);
  t.ok(c.csrf.length > 10, 'pages carry the CSRF token');

  t.test('deliveries: filters and keyset pagination', async (t) => {
    const list = await json(await c.get('/api/deliveries?status=stopped'));
    t.equal(list.items.length, 4);
    t.same(
      list.items.map((d: { id: string }) => d.id),
      [...others].reverse().concat(hostileId!),
      'newest first',
    );
    const byBuy = await json(await c.get('/api/deliveries?media_buy=mb_hostile'));
    t.same(
      byBuy.items.map((d: { id: string }) => d.id),
      [hostileId],
    );
    const byType = await json(await c.get('/api/deliveries?type=failed'));
    t.equal(byType.items.length, 1);
    const byKey = await json(await c.get(`/api/deliveries?key=${hostile.idempotencyKey}`));
    t.same(
      byKey.items.map((d: { id: string }) => d.id),
      [hostileId],
    );
    const origin = new URL(rx.url).origin;
    const byOrigin = await json(
      await c.get(`/api/deliveries?origin=${encodeURIComponent(origin)}&principal=p_1&task=task_1`),
    );
    t.equal(byOrigin.items.length, 4);
    const none = await json(await c.get('/api/deliveries?origin=https://elsewhere.example'));
    t.same(none.items, []);
    const future = await json(await c.get('/api/deliveries?from=2999-01-01T00:00:00Z'));
    t.same(future.items, []);
    const past = await json(await c.get('/api/deliveries?to=2000-01-01T00:00:00Z'));
    t.same(past.items, []);

    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const r = await c.get(`/api/deliveries?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      const p = (await json(r)) as { items: Array<{ id: string }>; next: string | null };
      seen.push(...p.items.map((i) => i.id));
      cursor = p.next;
    }
    t.same(seen, [...others].reverse().concat(hostileId!), 'pages of one cover every row once');

    for (const [q, field] of [
      ['status=bogus', 'status'],
      ['origin=not%20a%20url', 'origin'],
      ['from=yesterday', 'from'],
      ['from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', 'to'],
      ['cursor=AAAA', 'cursor'],
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      [`media_buy=${'x'.repeat(300)}`, 'media_buy'],
    ] as const) {
      const r = await c.get(`/api/deliveries?${q}`);
      t.equal(r.status, 400, q);
      const e = (await json(r)).error;
      t.equal(e.code, 'INVALID_REQUEST', q);
      t.equal(e.field, field, q);
    }
    const pageErr = await c.get('/deliveries?status=bogus');
    t.equal(pageErr.status, 400);
    t.match(await pageErr.text(), /status: one of pending/);
    const html = await (await c.get('/deliveries?status=stopped')).text();
    t.match(html, new RegExp(`href="/deliveries/${hostileId}"`));
  });

  t.test('a delivery: hostile body shown as text, attempts, why it stopped', async (t) => {
    const res = await c.get(`/deliveries/${hostileId}`);
    t.equal(res.status, 200);
    t.match(res.headers.get('content-security-policy'), /default-src 'none'/);
    const page = await res.text();
    t.notMatch(page, /<script>alert/, 'no live script element from the body');
    t.notMatch(page, /<img src=x/, 'no live img element from the body');
    t.match(page, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    t.match(page, /&quot;&gt;&lt;img src=x onerror=alert\(2\)&gt;/);
    t.match(page, /Stopped at/);
    t.match(page, /HTTP 400/);
    const api = await json(await c.get(`/api/deliveries/${hostileId}`));
    t.equal(api.state, 'stopped');
    t.equal(api.attemptList.length, 1);
    t.equal(api.attemptList[0].httpStatus, 400);
    t.equal(JSON.parse(api.body).note, '"><img src=x onerror=alert(2)>');
    t.notOk('auth_secret' in api || 'authSecret' in api, 'no secret in the API');
    const a = api.attemptList[0];
    t.equal(a.keyId, h.key.kid, 'the kid of the key that signed the attempt');
    t.match(a.responseSnippet, /<b>bad<\/b>/, 'the receiver answer, as text in JSON');
    t.notMatch(a.responseSnippet, /sekrit|eyJhbGci|stolen/, 'credentials masked');
    t.match(page, /&lt;b&gt;bad&lt;\/b&gt;/, 'the snippet shown as text');
    t.match(page, /&lt;img src=x onerror=alert\(3\)&gt;/);
    t.notMatch(page, /<img src=x onerror=alert\(3\)/, 'the snippet never becomes markup');
    t.match(page, new RegExp(`<code>${h.key.kid}</code>`));
    t.notMatch(page, /sekrit|eyJhbGci/);
    t.match(page, /<dd class="next-attempt">-<\/dd>/, 'a stopped delivery has no next attempt');
    t.equal((await c.get('/api/deliveries/999999999')).status, 404);
    t.equal((await c.get('/api/deliveries/abc')).status, 404);
    t.equal((await c.get('/deliveries/999999999')).status, 404);
  });

  t.test('actions need the CSRF token and this origin', async (t) => {
    const noToken = await c.post(`/deliveries/${hostileId}/redeliver`, {});
    t.equal(noToken.status, 403);
    t.match(await noToken.text(), /the form is stale/, 'a page answer for a page action');
    const wrongToken = await c.post(`/deliveries/${hostileId}/redeliver`, { _csrf: 'x' });
    t.equal(wrongToken.status, 403);
    const crossSite = await c.post(
      `/deliveries/${hostileId}/redeliver`,
      { _csrf: c.csrf },
      { origin: 'https://evil.example' },
    );
    t.equal(crossSite.status, 403);
    t.equal((await h.outbox.state(hostileId!))?.state, 'stopped', 'nothing happened');
  });

  t.test('redeliver: same key and bytes, new attempt, audited, seen live', async (t) => {
    failing = false;
    const before = rx.received.length;
    const events = await fetch(`${base}/api/events`, { headers: { cookie: c.cookie } });
    t.equal(events.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const reader = events.body!.getReader();
    const res = await c.post(`/deliveries/${hostileId}/redeliver`, { _csrf: c.csrf });
    t.equal(res.status, 302);
    t.equal(res.headers.get('location'), `/deliveries/${hostileId}?redelivered=2`);
    t.equal(await h.waitForState(hostileId!, ['delivered']), 'delivered');
    const sent = rx.received.slice(before);
    t.equal(sent.length, 1);
    t.same(JSON.parse(sent[0]!.body.toString()).idempotency_key, hostile.idempotencyKey);
    t.equal(sent[0]!.body.toString(), JSON.stringify(hostile.payload), 'the frozen bytes');
    t.not(sent[0]!.headers.signature, rx.received[0]!.headers.signature, 'a fresh signature');

    let text = '';
    const decoder = new TextDecoder();
    await until('the live attempt event', async () => {
      const { value } = await reader.read();
      text += decoder.decode(value);
      return new RegExp(`"deliveryId":"${hostileId}","attempt":2,"status":"success"`).test(text);
    });
    await reader.cancel();

    const d = await until('the attempt record', async () => {
      const x = await json(await c.get(`/api/deliveries/${hostileId}`));
      return x.attemptList.length === 2 && x.attemptList[1].status === 'success' ? x : null;
    });
    t.equal(d.attemptList[1].requestedBy, 'alice', 'the attempt carries who asked');
    t.equal(d.attemptList[1].responseSnippet, null, 'an empty answer has no snippet');
    t.equal(d.attemptList[1].keyId, h.key.kid);
    const page = await (await c.get(`/deliveries/${hostileId}?redelivered=2`)).text();
    // The banner follows the redelivered attempt: it has landed.
    t.match(page, /Redelivery: attempt 2 delivered \(HTTP 200\)/);
    const again = await c.post(
      `/deliveries/${others[0]}/redeliver`,
      {},
      { 'x-csrf-token': c.csrf },
    );
    t.equal(again.status, 302, 'the header carries the token too');
    await h.waitForState(others[0]!, ['delivered']);
    const audit = await json(await c.get('/api/audit'));
    t.match(audit.items[1], {
      operator: 'alice',
      via: 'console',
      action: 'redeliver',
      target: hostileId,
    });
  });

  t.test('a pending delivery is not redelivered', async (t) => {
    failing = true;
    const rxSlow = await startReceiver(() => new Promise(() => {}));
    t.teardown(() => rxSlow.close());
    const [id] = await h.outbox.enqueue([event(rxSlow.url)]);
    const r = await fetch(`${base}/api/deliveries/${id}/redeliver`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    t.equal(r.status, 409);
    t.equal((await json(r)).error.code, 'ALREADY_PENDING');
    const missing = await fetch(`${base}/api/deliveries/123456789/redeliver`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    t.equal(missing.status, 404);
  });

  t.test('the live fragment carries the next attempt and the action', async (t) => {
    let calls = 0;
    const rxRetry = await startReceiver(() =>
      ++calls === 1 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 200 },
    );
    t.teardown(() => rxRetry.close());
    const [id] = await h.outbox.enqueue([event(rxRetry.url)]);
    const waiting = await until('a retry scheduled', async () => {
      const f = await (await c.get(`/deliveries/${id}/live`)).text();
      return /Retrying: attempt 2 is due/.test(f) ? f : null;
    });
    const due = /<dd class="next-attempt">([^<]+)<\/dd>/.exec(waiting)?.[1];
    t.match(due, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/, 'the next attempt time');
    t.match(waiting, /already on their way/, 'no redeliver while pending');
    await h.waitForState(id!, ['delivered']);
    const after = await (await c.get(`/deliveries/${id}/live`)).text();
    t.match(after, /<dd class="next-attempt">-<\/dd>/, 'no stale next attempt once delivered');
    t.match(after, new RegExp(`action="/deliveries/${id}/redeliver"`));
    t.match(after, new RegExp(`name="_csrf" value="${c.csrf}"`), 'the form carries the token');
  });

  t.test('recover an origin since a time (API, bearer)', async (t) => {
    const origin = new URL(rx.url).origin;
    const stopped = [others[1]!, others[2]!];
    failing = false;
    const bad = await fetch(`${base}/api/recover`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ origin }),
    });
    t.equal(bad.status, 400);
    t.equal((await json(bad)).error.field, 'since');
    const notJson = await fetch(`${base}/api/recover`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{',
    });
    t.equal(notJson.status, 400);
    const r = await fetch(`${base}/api/recover`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ origin, since: new Date(Date.now() - 3_600_000).toISOString() }),
    });
    t.equal(r.status, 202);
    t.match(await r.json(), { origin, recovered: 2, more: false });
    for (const id of stopped) t.equal(await h.waitForState(id, ['delivered']), 'delivered');
    const audit = await json(await c.get('/api/audit'));
    t.match(audit.items[0], {
      operator: 'alice',
      via: 'api',
      action: 'recover',
      target: origin,
      detail: { recovered: 2 },
    });
    const dest = await json(await c.get('/api/destinations'));
    const mine = dest.items.find((d: { origin: string }) => d.origin === origin);
    t.ok(mine.day.attempts >= 6);
    t.ok(mine.lastError.status === 400);
    const page = await (await c.get('/destinations')).text();
    t.match(page, /<svg\s+class="chart"/);
    t.match(page, /Recover/);
    const form = await c.post('/destinations/recover', { _csrf: c.csrf, origin, since: 'soon' });
    t.equal(form.status, 400);
    const ok = await c.post('/destinations/recover', {
      _csrf: c.csrf,
      origin,
      since: '2000-01-01T00:00:00Z',
    });
    t.equal(ok.headers.get('location'), '/destinations?recovered=0');
    t.match(await (await c.get('/audit')).text(), /recover/);
  });

  t.test('sign out ends the session', async (t) => {
    const r = await c.post('/logout', { _csrf: c.csrf });
    t.equal(r.status, 302);
    t.equal((await c.get('/deliveries')).status, 302);
  });
});

t.test('sign-in is rate limited per address', async (t) => {
  let now = 0;
  const auth = new ConsoleAuth({
    token: TOKEN,
    loginAttempts: 3,
    loginWindowMs: 60_000,
    now: () => now,
  });
  for (let i = 0; i < 3; i++) t.equal(auth.login('a', 'wrong'), null);
  t.ok(auth.retryAfter('a') > 0, 'locked out');
  t.equal(auth.retryAfter('b'), 0, 'another address is not');
  now += 61_000;
  t.equal(auth.retryAfter('a'), 0, 'the window passes');
  t.type(auth.login('a', TOKEN), 'string');
  t.throws(() => new ConsoleAuth({ token: 'short' }), /16 characters/);
});

t.test('over HTTP: the token form answers 429 with Retry-After once locked out', async (t) => {
  const { pool, schema } = testDatabase(t, 'clock');
  const server = await listenConsole({
    store: new ConsoleStore(pool, schema),
    actions: new ConsoleActions(pool, null as never, schema),
    auth: new ConsoleAuth({ token: TOKEN, loginAttempts: 2, loginWindowMs: 60_000 }),
  });
  t.teardown(() => server.close());
  const post = (token: string) =>
    fetch(`${server.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, next: '/audit' }).toString(),
    });
  for (let i = 0; i < 2; i++) {
    const bad = await post('wrong-token-wrong-token');
    t.equal(bad.status, 401);
    t.match(await bad.text(), /name="next" value="\/audit"/, 'the form keeps where to go');
  }
  const limited = await post(TOKEN);
  t.equal(limited.status, 429, 'even the right token, while locked out');
  t.ok(Number(limited.headers.get('retry-after')) > 0);
  const page = await limited.text();
  t.match(page, /role="alert">Too many failed sign-ins: try again in \d+ s\./);
  t.match(page, /name="token"/, 'the token form again');
  t.notOk(limited.headers.get('set-cookie'), 'no session');
});
