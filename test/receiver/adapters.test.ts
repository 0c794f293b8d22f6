/** The Koa middleware in a buyer's app, and the forward publisher's rules. */
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { webhookMiddleware } from '../../receiver/koa.js';
import { WebhookReceiver } from '../../receiver/pipeline/receiver.js';
import { checkForwardUrl, ForwardError, ForwardPublisher } from '../../receiver/publish/forward.js';
import { HandlerPublisher } from '../../receiver/publish/handler.js';
import type { ReceivedEvent } from '../../receiver/publish/types.js';
import { testDatabase } from '../helpers/db.js';
import { startApp } from './support/app.js';
import {
  inlineResolver,
  makeSender,
  MemoryReplayStore,
  profile,
  signed,
} from './support/fixtures.js';
import { post } from './support/server.js';

const { pool, schema } = testDatabase(t, 'radapt');

t.test(
  'Koa: the middleware reads the raw stream on its path, other routes untouched',
  async (t) => {
    const seller = await makeSender('koa-seller');
    const events: ReceivedEvent[] = [];
    const receiver = new WebhookReceiver({
      pool,
      schema,
      profile,
      protocolVersion: '3.2',
      keys: inlineResolver([seller]),
      replay: new MemoryReplayStore(),
      publisher: new HandlerPublisher((e) => void events.push(e)),
    });
    await receiver.migrate();
    const app = new Koa();
    app.use(webhookMiddleware(receiver, { path: '/webhooks' }));
    app.use((ctx) => {
      ctx.body = 'app route';
    });
    const server = createServer(app.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => server.close(() => r())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const body = `{"idempotency_key":"whk_koa_000000000001", "operation_id":"op","task_id":"koa-1","task_type":"create_media_buy","status":"working","timestamp":"2026-05-26T10:00:00Z"}`;
    const s = signed(`${base}/webhooks`, body, seller);
    const res = await post(`${base}/webhooks`, s.body, s.headers);
    t.equal(res.status, 200);
    t.equal(events[0]?.body.toString(), body, 'raw bytes, untouched by Koa');
    t.equal(events[0]?.sender, 'koa-seller');
    // Headers named after Object.prototype members are headers like any other: the one named
    // `__proto__`, sent twice (an array), must not become the headers object's prototype.
    const odd = signed(
      `${base}/webhooks`,
      body.replace('whk_koa_000000000001', 'whk_koa_000000000002'),
      seller,
    );
    const oddRes = await post(`${base}/webhooks`, odd.body, {
      ...odd.headers,
      ['__proto__']: ['a', 'b'],
      constructor: 'c',
      hasownproperty: 'd',
    });
    t.equal(oddRes.status, 200, 'headers named __proto__ / constructor: an ordinary delivery');
    t.equal(events.length, 2);
    const other = await post(`${base}/other`, '{}', { 'content-type': 'application/json' });
    t.equal(other.status, 200);
    t.equal(other.json, 'app route');
    const bad = await post(`${base}/webhooks`, '{}', { 'content-type': 'text/plain' });
    t.equal(bad.status, 415);
    const big = await post(`${base}/webhooks`, Buffer.alloc(1024 * 1024 + 1, 32), {
      'content-type': 'application/json',
    });
    t.equal(big.status, 413);
    const regex = webhookMiddleware(receiver, { path: /^\/hooks\// });
    t.type(regex, 'function');
  },
);

t.test('forward targets: https anywhere, plain http only on loopback', async (t) => {
  t.equal(checkForwardUrl('https://app.example/events').hostname, 'app.example');
  t.ok(checkForwardUrl('http://127.0.0.1:8080/x'));
  t.ok(checkForwardUrl('http://localhost/x'));
  t.ok(checkForwardUrl('http://[::1]:9/x'));
  t.throws(() => checkForwardUrl('http://app.example/events'), ForwardError);
  t.throws(() => checkForwardUrl('http://10.0.0.1/events'), ForwardError);
  t.throws(() => checkForwardUrl('https://user:pw@app.example/'), ForwardError);
  t.throws(() => checkForwardUrl('ftp://127.0.0.1/'), ForwardError);
  t.throws(() => checkForwardUrl('not a url'), ForwardError);
});

t.test('forward: only the app 2xx counts; errors and timeouts reject', async (t) => {
  const event: ReceivedEvent = {
    sender: 's',
    idempotencyKey: 'whk_forward_0000000001',
    notificationId: null,
    taskId: 't',
    operationId: 'op',
    taskType: null,
    status: 'working',
    timestamp: null,
    format: 'mcp',
    payload: {},
    body: Buffer.from('{"a":1}'),
    stale: true,
    reEmission: true,
    terminal: false,
    redelivery: false,
    auth: { mode: 'rfc9421', keyid: 'k' },
  };
  let status = 204;
  let hang = false;
  const app = await startApp(async () => {
    if (hang) await new Promise((r) => setTimeout(r, 2000));
    return status;
  });
  t.teardown(() => app.close());
  const f = new ForwardPublisher({ url: app.url + '?q=1', brand: 'adcp', timeoutMs: 300 });
  t.teardown(() => f.close());
  await f.publish(event);
  t.equal(app.hits[0]?.body, '{"a":1}');
  t.equal(app.hits[0]?.headers['x-adcp-idempotency-key'], 'whk_forward_0000000001');
  t.equal(app.hits[0]?.headers['x-adcp-stale'], 'true');
  t.equal(app.hits[0]?.headers['x-adcp-re-emission'], 'true');
  status = 404;
  await t.rejects(f.publish(event), { name: 'ForwardError', status: 404 });
  status = 200;
  hang = true;
  await t.rejects(f.publish(event), { name: 'ForwardError' });
  const down = new ForwardPublisher({ url: 'http://127.0.0.1:1/x', brand: 'svc', timeoutMs: 300 });
  t.teardown(() => down.close());
  await t.rejects(down.publish(event), { name: 'ForwardError', status: null });
});
