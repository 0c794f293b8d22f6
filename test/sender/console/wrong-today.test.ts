/**
 * What issue 26 found wrong in the seller console, each against a real outbox, worker and
 * loopback receiver: the Event type filter filters the task's type (not its status); task,
 * principal, media buy and destination take a prefix (`x*`) or contains (`*x*`) pattern;
 * the destination takes `host:port`; a delivery pending after failed attempts wears its
 * own badge; after a Redeliver, "First attempt" stays the first attempt's time and the
 * banner follows the redelivered attempt to its end.
 */
import t from 'tap';
import { ConsoleActions } from '../../../sender/console/actions.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import { listenConsole } from '../../../sender/console/server.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import { payloadMatch } from '../../../sender/console/filters.js';
import { SearchIndexes } from '../../../sender/console/search-index.js';
import { newIdempotencyKey } from '../../../sender/outbox/keys.js';
import type { OutboundEvent } from '../../../sender/outbox/types.js';
import { senderHarness, startReceiver } from '../harness.js';
import { json, signIn } from './helpers.js';

const TOKEN = 'wrong-today-console-token-0123456789';

function event(url: string, extra: Partial<OutboundEvent>): OutboundEvent {
  const idempotencyKey = newIdempotencyKey();
  return {
    target: { url, auth: { mode: 'rfc9421' }, channel: 'task' },
    payload: { idempotency_key: idempotencyKey, status: 'working' },
    idempotencyKey,
    notificationType: 'working',
    ...extra,
  };
}

t.test('seller console: what was wrong', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver(() => ({ status: 410 }));
  t.teardown(() => rx.close());
  const consoleServer = await listenConsole({
    store: new ConsoleStore(h.pool, h.schema),
    actions: new ConsoleActions(h.pool, h.queue, h.schema),
    auth: new ConsoleAuth({ token: TOKEN, operator: 'carol' }),
    liveEveryMs: 100,
  });
  t.teardown(() => consoleServer.close());
  const c = await signIn(consoleServer.url, TOKEN);
  const hook = `${rx.url}/hooks/x?token=secret`;
  const ids = await h.outbox.enqueue([
    event(hook, { taskType: 'create_media_buy', taskId: 'task_abc_1', principalId: 'demo-buyer' }),
    event(hook, { taskType: 'create_media_buy', taskId: 'task_abc_2', principalId: 'demo-two' }),
    event(hook, {
      taskType: 'get_products',
      notificationType: 'completed',
      taskId: 'task_xyz',
      principalId: 'other',
      mediaBuyId: 'mb_spring_1',
    }),
    event(hook, {
      notificationType: 'scheduled',
      principalId: 'other',
      mediaBuyId: 'mb_autumn',
      target: { url: hook, auth: { mode: 'rfc9421' }, channel: 'reporting' },
    }),
  ]);
  const count = async (q: string): Promise<number> => {
    const res = await c.get(`/api/deliveries?${q}`);
    t.equal(res.status, 200, q);
    return (await json(res)).items.length;
  };
  const refused = async (q: string, field: string) => {
    const res = await c.get(`/api/deliveries?${q}`);
    t.equal(res.status, 400, `${q} refused`);
    t.equal((await json(res)).error.field, field, `${q}: names ${field}`);
  };

  t.test('the Event type filter is the task type, not the status', async (t) => {
    t.equal(await count('type=create_media_buy'), 2);
    t.equal(await count('type=get_products'), 1);
    t.equal(await count('type=working'), 0, 'a status is not a type');
    t.equal(await count('type=scheduled'), 1, 'a report keeps its notification type');
    const list = await json(await c.get('/api/deliveries?type=create_media_buy'));
    t.match(list.items[0], { eventType: 'create_media_buy', notificationType: 'working' });
  });

  t.test('prefix and contains', async (t) => {
    t.equal(await count('task=task_abc*'), 2);
    t.equal(await count('task=task_abc'), 0, 'a plain value is exact');
    t.equal(await count('task=*xyz*'), 1);
    // No three letters or digits in a row: no trigram to look up, the list is walked.
    t.equal(await count('task=*c_*'), 2, 'a contains without a trigram');
    t.equal(await count('principal=demo*'), 2);
    t.equal(await count('principal=*two*'), 1);
    t.equal(await count('media_buy=mb_*'), 2);
    t.equal(await count('media_buy=*autumn*'), 1);
    t.equal(await count('task=100%25*'), 0, 'LIKE wildcards are literal');
    t.equal(await count('principal=demo_buyer'), 0, 'an underscore is literal');
    await refused('task=a*b', 'task');
    await refused('principal=**', 'principal');
  });

  t.test('destination: host:port, a URL with a path, a pattern', async (t) => {
    const hostPort = new URL(rx.url).host;
    t.equal(await count(`origin=${encodeURIComponent(hostPort)}`), 4, 'host:port');
    t.equal(await count(`origin=${encodeURIComponent(hostPort.toUpperCase())}`), 4);
    t.equal(await count(`origin=${encodeURIComponent(hook)}`), 4, 'a full URL');
    t.equal(await count(`origin=${encodeURIComponent('http://127.0.0.1*')}`), 4, 'prefix');
    t.equal(await count(`origin=${encodeURIComponent(`*:${new URL(rx.url).port}*`)}`), 4);
    t.equal(await count(`origin=${encodeURIComponent('*nowhere.example*')}`), 0);
    t.equal(await count(`origin=${encodeURIComponent('127.0.0.2:1')}`), 0);
    await refused(`origin=${encodeURIComponent('not an origin')}`, 'origin');
    await refused(`origin=${encodeURIComponent('a*b')}`, 'origin');
    // The stopped-state view reads outbox_delivery's origin: the same answers.
    t.equal(await count(`origin=${encodeURIComponent(hostPort)}&status=pending`), 4);
  });

  t.test('a pending delivery with failed attempts is not "pending"', async (t) => {
    await h.pool.query(
      `UPDATE ${h.schema}.outbox_delivery SET attempts = 6, last_status = 500,
              next_attempt_at = now() + interval '1 hour' WHERE id = $1`,
      [ids[0]],
    );
    const page = await (await c.get('/deliveries')).text();
    const row = (id: string) => new RegExp(`<tr id="d-${id}"[\\s\\S]*?</tr>`).exec(page)?.[0];
    t.match(row(ids[0]!), /class="state retrying"[^>]*>\s*retrying \(6 failed\)/);
    t.match(row(ids[1]!), /class="state pending">pending</, 'never tried: pending');
    t.notMatch(row(ids[0]!), /class="state pending"/);
    const one = await (await c.get(`/deliveries/${ids[0]}`)).text();
    t.match(one, /class="state retrying"/);
  });

  t.test('after a Redeliver: the first attempt, and the banner follows attempt 2', async (t) => {
    h.startWorker();
    const id = ids[2]!;
    await h.waitForState(id, ['stopped']);
    await new Promise((r) => setTimeout(r, 30));
    const res = await c.post(`/deliveries/${id}/redeliver`, { _csrf: c.csrf });
    t.equal(res.status, 302);
    t.equal(res.headers.get('location'), `/deliveries/${id}?redelivered=2`);
    let d = await json(await c.get(`/api/deliveries/${id}`));
    for (
      let i = 0;
      i < 400 &&
      d.attemptList.find((a: { attempt: number; status: string }) => a.attempt === 2)?.status !==
        'failed';
      i++
    ) {
      await new Promise((r) => setTimeout(r, 50));
      d = await json(await c.get(`/api/deliveries/${id}`));
    }
    t.equal(d.attemptList.length, 2);
    t.equal(d.firstAttemptAt, d.attemptList[0].firedAt, 'the first attempt, not the redelivery');
    t.not(d.firstAttemptAt, d.attemptList[1].firedAt);
    const page = await (await c.get(`/deliveries/${id}?redelivered=2`)).text();
    t.notMatch(page, /attempt 2 is on its way/, 'no stale banner');
    t.match(page, /class="flash error"[^>]*>\s*Redelivery: attempt 2 failed\s*\(failed, HTTP 410/);
    const live = await (await c.get(`/deliveries/${id}/live?redelivered=2`)).text();
    t.match(live, /attempt 2 failed/, 'the live fragment carries it too');
    const first = /<dt>First attempt<\/dt>\s*<dd>([^<]*)<\/dd>/.exec(page)?.[1];
    t.equal(first, d.attemptList[0].firedAt.replace('T', ' '));
  });
});

t.test('search inside the payload: a JSON path and a value', async (t) => {
  const h = await senderHarness(t);
  const consoleServer = await listenConsole({
    store: new ConsoleStore(h.pool, h.schema),
    actions: new ConsoleActions(h.pool, h.queue, h.schema),
    auth: new ConsoleAuth({ token: TOKEN, operator: 'carol' }),
  });
  t.teardown(() => consoleServer.close());
  const c = await signIn(consoleServer.url, TOKEN);
  const url = 'http://127.0.0.1:9/hook';
  const withPayload = (payload: Record<string, unknown>): OutboundEvent => {
    const e = event(url, {});
    return { ...e, payload: { ...e.payload, ...payload } };
  };
  const [a, b] = await h.outbox.enqueue([
    withPayload({ result: { media_buy_id: 'mb_42', packages: [{ package_id: 'pk_1' }] } }),
    withPayload({ result: { media_buy_id: 'mb_43', note: 'say "hi"' }, count: 7 }),
  ]);
  const ids = async (q: string) => {
    const res = await c.get(`/api/deliveries?payload=${encodeURIComponent(q)}`);
    t.equal(res.status, 200, q);
    return (await json(res)).items.map((d: { id: string }) => d.id);
  };
  t.same(await ids('result.media_buy_id=mb_42'), [a]);
  t.same(await ids('result.packages.0.package_id=pk_1'), [a], 'an array index');
  t.same(await ids('count=7'), [b], 'a number, as text');
  t.same(await ids('result.note=say "hi"'), [b], 'a value JSON escapes');
  t.same(await ids('result.media_buy_id=mb_4'), [], 'the whole value, not a part');
  t.same(await ids('status=mb_42'), [], 'at that path only');
  // These check the exact answers hold, walked and through the payload index's probes.
  const [k, flag, big, nul, lone] = await h.outbox.enqueue([
    withPayload({ m: { '0': 'x' }, list: ['x'] }),
    withPayload({ flag: true, ratio: 7 }),
    withPayload({ n: '12345678901234567890', e: 100 }),
    // Bodies jsonb refuses (a \u0000 escape, a lone surrogate): stored all the same, indexed
    // as null, and found by nothing inside them.
    withPayload({ text: 'a\u0000b' }),
    withPayload({ text: 'a\ud800b' }),
  ]);
  t.ok(nul && lone, 'bodies jsonb refuses are still enqueued');
  // Without the payload index (the default: a walk), then with it (containment probes).
  for (const indexed of [false, true]) {
    if (indexed) {
      await new SearchIndexes(h.pool, h.schema).enable(['payload'], { name: 't', via: 'cli' });
    }
    t.same(await ids('m.0=x'), [k], 'a digit segment as an object key');
    t.same(await ids('list.0=x'), [k], 'a digit segment as an array index');
    t.same(await ids('list.1=x'), [], 'an array probe matches any element; the position holds');
    t.same(await ids('flag=true'), [flag], 'a boolean, as text');
    t.same(await ids('ratio=7.0'), [], 'compared as text: 7.0 is not 7');
    t.same(await ids('n=12345678901234567890'), [big], 'a string of digits');
    t.same(await ids('e=100'), [big], 'a number');
    t.same(await ids('e=1e2'), [], 'the same number spelled otherwise: not the same text');
    t.same(await ids('text=ab'), [], 'nothing in an unparsable body');
    t.same(await ids('a.0.1.2.3=x'), [], 'four digit segments: no probe, still answered');
  }
  const page = await json(await c.get('/api/deliveries?limit=200'));
  t.ok(
    page.items.some((d: { id: string }) => d.id === lone),
    'an unparsable body lists like any other',
  );
  t.throws(() => payloadMatch('a=\ud800'), /payload: a well-formed/, 'a lone surrogate (CLI)');
  for (const bad of ['=x', 'no-equals', 'a..b=1', 'a.b c=1']) {
    const res = await c.get(`/api/deliveries?payload=${encodeURIComponent(bad)}`);
    t.equal(res.status, 400, `${bad} refused`);
    t.equal((await json(res)).error.field, 'payload');
  }
});
