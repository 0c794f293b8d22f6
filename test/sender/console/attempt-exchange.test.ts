/**
 * An attempt in full (issue 26): a real worker sends to loopback receivers; the console's
 * JSON API, its delivery page and `svc deliveries show` each give the request headers as
 * sent (signature headers included, a bearer token masked), the response's status,
 * headers (hostile ones shown as text, cookies masked) and first bytes, and the timing.
 * Headers past the bounds are cut; an attempt with no response has none.
 */
import { createServer } from 'node:net';
import { PassThrough } from 'node:stream';
import t from 'tap';
import { ConsoleActions } from '../../../sender/console/actions.js';
import { showDelivery } from '../../../sender/console/cli.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import { listenConsole } from '../../../sender/console/server.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import {
  attemptExchange,
  MAX_HEADERS,
  MAX_VALUE_CHARS,
  recordHeaders,
} from '../../../sender/delivery/exchange.js';
import { newIdempotencyKey } from '../../../sender/outbox/keys.js';
import type { DeliveryAuth, OutboundEvent } from '../../../sender/outbox/types.js';
import { senderHarness, startReceiver } from '../harness.js';
import { json, signIn } from './helpers.js';

const TOKEN = 'test-console-token-exchange-0123';
const BEARER = 'bearer-token-of-this-delivery-xyz';

function event(url: string, auth: DeliveryAuth): OutboundEvent {
  const idempotencyKey = newIdempotencyKey();
  return {
    target: { url, auth, channel: 'task' },
    payload: { idempotency_key: idempotencyKey, task_id: 'task_x', status: 'completed' },
    idempotencyKey,
    notificationType: 'completed',
    taskId: 'task_x',
  };
}

t.test('headers are bounded and credentials masked when recorded', async (t) => {
  const many: Record<string, string> = {};
  for (let i = 0; i < MAX_HEADERS + 5; i++) many[`x-h${i}`] = 'v';
  const cut = recordHeaders(many, []);
  t.equal(Object.keys(cut.headers).length, MAX_HEADERS, 'at most MAX_HEADERS kept');
  t.equal(cut.truncated, true);
  const long = recordHeaders({ 'x-long': 'a'.repeat(MAX_VALUE_CHARS * 3) }, []);
  t.equal(long.headers['x-long']!.length, MAX_VALUE_CHARS + 1, 'a long value cut, marked …');
  const raw = recordHeaders(
    {
      Authorization: `Bearer ${BEARER}`,
      'Set-Cookie': ['sid=abc; HttpOnly', 'other=def'],
      'X-Api-Key': 'k-123456',
      'X-Echo': `you sent ${BEARER}`,
      'X-Ctl': 'a\r\nInjected: yes\u0000',
      'WWW-Authenticate': 'Signature error="webhook_signature_invalid"',
      Absent: undefined,
    },
    [BEARER],
  );
  t.same(raw.headers, {
    authorization: 'Bearer [redacted]',
    'set-cookie': '[redacted]',
    'x-api-key': '[redacted]',
    'x-echo': 'you sent [redacted]',
    'x-ctl': 'a  Injected: yes ',
    'www-authenticate': 'Signature error="webhook_signature_invalid"',
  });
  const none = attemptExchange({ 'content-type': 'application/json' }, null, { totalMs: 3 }, []);
  t.equal(none.response, null, 'no response: none recorded');
  t.same(none.timing, { totalMs: 3 });
});

t.test('an attempt in full through the console, its API and the CLI', async (t) => {
  const h = await senderHarness(t);
  const rx = await startReceiver(() => ({
    status: 503,
    body: '{"error":"busy <b>now</b>"}',
    headers: {
      'content-type': 'application/json',
      'x-hostile': '"><script>alert(1)</script>',
      'set-cookie': 'session=super-secret-cookie',
      'retry-after': '0',
    },
  }));
  t.teardown(() => rx.close());
  // A port nothing listens on: connection refused, no response.
  const hole = createServer();
  await new Promise<void>((r) => hole.listen(0, '127.0.0.1', r));
  const deadPort = (hole.address() as { port: number }).port;
  await new Promise<void>((r) => hole.close(() => r()));
  h.startWorker();

  const [signed] = await h.outbox.enqueue([event(rx.url, { mode: 'rfc9421' })]);
  const [bearer] = await h.outbox.enqueue([event(rx.url, { mode: 'bearer', token: BEARER })]);
  const [refused] = await h.outbox.enqueue([
    event(`http://127.0.0.1:${deadPort}/hook`, { mode: 'rfc9421' }),
  ]);
  const store = new ConsoleStore(h.pool, h.schema);
  const firstAttempt = async (id: string) => {
    for (let i = 0; i < 400; i++) {
      const d = await store.get(id);
      const a = d?.attemptList.find((x) => x.exchange);
      if (a) return a;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no recorded attempt of ${id}`);
  };

  const consoleServer = await listenConsole({
    store,
    actions: new ConsoleActions(h.pool, h.queue, h.schema),
    auth: new ConsoleAuth({ token: TOKEN, operator: 'alice' }),
  });
  t.teardown(() => consoleServer.close());
  const c = await signIn(consoleServer.url, TOKEN);

  t.test('RFC 9421: signature headers, the response, timing', async (t) => {
    await firstAttempt(signed!);
    const api = await json(await c.get(`/api/deliveries/${signed}`));
    const a = api.attemptList.find((x: { exchange: unknown }) => x.exchange);
    const req = a.exchange.request.headers;
    t.match(req['signature-input'], /^sig1=\(/, 'Signature-Input');
    t.match(req.signature, /^sig1=:[A-Za-z0-9+/=_-]+:$/, 'the signature, whole');
    t.match(req['content-digest'], /^sha-256=:/, 'Content-Digest');
    t.ok(
      rx.received.some((r) => r.headers.signature === req.signature),
      'the very signature the receiver got',
    );
    t.equal(a.httpStatus, 503);
    const res = a.exchange.response.headers;
    t.equal(res['x-hostile'], '"><script>alert(1)</script>', 'stored as the receiver sent it');
    t.equal(res['set-cookie'], '[redacted]', 'a cookie is never stored');
    t.equal(res['content-type'], 'application/json');
    const tm = a.exchange.timing;
    t.type(tm.ttfbMs, 'number', 'time to first byte');
    t.type(tm.totalMs, 'number');
    t.ok(tm.totalMs >= tm.ttfbMs, 'the total includes the wait for the first byte');
    t.ok(tm.reused === true || typeof tm.connectMs === 'number', 'connect timed or reused');
    t.match(a.responseSnippet, /busy <b>now<\/b>/);

    const page = await (await c.get(`/deliveries/${signed}`)).text();
    t.match(page, /Attempts in full/);
    t.match(page, /<details class="exchange" id="attempt-1">/);
    t.match(page, /first byte [\d.]+ ms/);
    t.match(page, /&quot;&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt;/, 'a hostile header as text');
    t.notMatch(page, /<script>alert/, 'never markup');
    t.notMatch(page, /super-secret-cookie/);
    t.match(page, /signature-input/);

    const out = new PassThrough();
    let text = '';
    out.on('data', (b: Buffer) => (text += b.toString()));
    t.equal(await showDelivery(store, signed!, false, out), true);
    t.match(text, /timing {3}.*first byte [\d.]+ ms/);
    t.match(text, /request headers:\n(?:.*\n)*? {7}signature: "sig1=:/);
    t.match(text, / {7}x-hostile: "\\"><script>alert\(1\)<\/script>"/, 'JSON-quoted, inert');
  });

  t.test('Bearer: the token masked in the request headers', async (t) => {
    const a = await firstAttempt(bearer!);
    t.equal(a.exchange!.request.headers.authorization, 'Bearer [redacted]');
    const api = await (await c.get(`/api/deliveries/${bearer}`)).text();
    t.notMatch(api, new RegExp(BEARER), 'the token is nowhere in the API');
  });

  t.test('connection refused: no response, the time it took', async (t) => {
    const a = await firstAttempt(refused!);
    t.equal(a.exchange!.response, null);
    t.equal(a.status, 'connection_error');
    t.type(a.exchange!.timing.totalMs, 'number');
    t.match(a.exchange!.request.headers.signature, /^sig1=:/, 'what was sent is still shown');
    const page = await (await c.get(`/deliveries/${refused}`)).text();
    t.match(page, /No response: /);
  });
});
