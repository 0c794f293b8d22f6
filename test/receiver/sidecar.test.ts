/**
 * The sidecar over real HTTP: every row of the receiver status table (supplement §5.8),
 * forwarding to a local app and enqueueing for a pulling app, health, metrics, hostile
 * input and graceful shutdown.
 */
import t, { type Test } from 'tap';
import { connect } from 'node:net';
import { request } from 'undici';
import { Sidecar, type SidecarOptions } from '../../receiver/sidecar/server.js';
import { testDatabase } from '../helpers/db.js';
import { startApp, type AppHit } from './support/app.js';
import {
  envelope,
  inlineResolver,
  makeSender,
  MemoryReplayStore,
  newKey,
  profile,
  signed,
  trustFor,
  type SenderKeys,
} from './support/fixtures.js';
import { post } from './support/server.js';
import { hmacHeaders } from '../../shared/legacy/hmac.js';

const { pool, schema } = testDatabase(t, 'rside');
const BEARER = 'bearer-token-0123456789-abcdefghijklmnop';
const SECRET = 'hmac-secret-0123456789-ABCDEFGHIJKLMNOP';
const OLD_SECRET = 'old-hmac-secret-9876543210-zyxwvutsrq';

let seller: SenderKeys;
t.before(async () => {
  seller = await makeSender('seller-a');
});

async function sidecar(
  t: Test,
  over: Partial<SidecarOptions> = {},
  app: (hit: AppHit) => Promise<number> | number = () => 200,
) {
  const a = await startApp(app);
  const trust = trustFor([seller], {
    legacy: [
      { path_prefix: '/legacy/bearer', sender: 'seller-b', scheme: 'Bearer', token: BEARER },
      {
        path_prefix: '/legacy/hmac',
        sender: 'seller-h',
        scheme: 'HMAC-SHA256',
        secrets: [SECRET, OLD_SECRET],
      },
    ],
  });
  const s = await Sidecar.start({
    port: 0,
    trust,
    profile,
    protocolVersion: '3.2',
    target: { forward: a.url },
    pool,
    schema,
    keys: inlineResolver([seller]),
    replay: new MemoryReplayStore(),
    purgeIntervalMs: 0,
    ...over,
  });
  t.teardown(async () => {
    await s.close();
    await a.close();
  });
  const deliver = async (
    body: unknown,
    path = '/webhooks/seller-a',
    extra: Record<string, string> = {},
  ) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const sig = signed(s.url + path, text, seller);
    return post(s.url + path, sig.body, { ...sig.headers, ...extra });
  };
  return { s, app: a, deliver };
}

t.test('status table: every 2xx row', async (t) => {
  const { s, app, deliver } = await sidecar(t);
  // accepted, forwarded with sender and key headers, body verbatim
  const e = envelope({ task_id: 'st-1', timestamp: '2026-05-26T10:00:02Z' });
  const res = await deliver(e);
  t.equal(res.status, 200);
  t.equal(app.hits.length, 1);
  t.equal(app.hits[0]?.headers['x-svc-sender'], 'seller-a');
  t.equal(app.hits[0]?.headers['x-svc-idempotency-key'], e.idempotency_key);
  t.equal(app.hits[0]?.headers['content-type'], 'application/json');
  t.equal(app.hits[0]?.body, JSON.stringify(e));
  // completed duplicate: 200, not forwarded again
  t.equal((await deliver(e)).status, 200);
  t.equal(app.hits.length, 1);
  // stale non-terminal: 200, forwarded flagged stale
  const old = await deliver(envelope({ task_id: 'st-1', timestamp: '2026-05-26T10:00:01Z' }));
  t.equal(old.status, 200);
  t.equal(app.hits[1]?.headers['x-svc-stale'], 'true');
  // exact terminal duplicate under another key: 200, not forwarded
  const fin = envelope({ task_id: 'st-2', status: 'completed', result: { media_buy_id: 'mb' } });
  t.equal((await deliver(fin)).status, 200);
  const n = app.hits.length;
  t.equal((await deliver({ ...fin, idempotency_key: newKey() })).status, 200);
  t.equal(app.hits.length, n);
  // recognized A2A {message}: 200, nothing forwarded
  const msg = await deliver({
    message: { messageId: 'm-1', role: 'ROLE_AGENT', parts: [{ text: 'hello' }] },
  });
  t.equal(msg.status, 200);
  t.equal(app.hits.length, n);
  // an A2A 1.0 task is forwarded
  const task = await deliver({
    task: {
      id: 'a2a-task-1',
      contextId: 'ctx-1',
      status: { state: 'TASK_STATE_WORKING', timestamp: '2026-05-26T10:00:00.000Z' },
    },
  });
  t.equal(task.status, 200);
  t.equal(app.hits.at(-1)?.headers['x-svc-format'], 'a2a');
  t.ok(s.url.startsWith('http://127.0.0.1:'));
});

t.test('status table: 401 rows', async (t) => {
  const { s, app, deliver } = await sidecar(t);
  const body = JSON.stringify(envelope());
  const unsigned = await post(s.url + '/webhooks/x', body, { 'content-type': 'application/json' });
  t.equal(unsigned.status, 401);
  t.equal(
    unsigned.headers['www-authenticate'],
    'Signature error="webhook_signature_header_malformed"',
  );
  const mismatch = await deliver(envelope(), '/webhooks/x', { 'x-svc-signature': 'sha256=ab' });
  t.equal(mismatch.headers['www-authenticate'], 'Signature error="webhook_mode_mismatch"');
  // a 9421-signed request on a legacy Bearer route
  const onLegacy = await deliver(envelope(), '/legacy/bearer/hook');
  t.equal(onLegacy.headers['www-authenticate'], 'Signature error="webhook_mode_mismatch"');
  // the Bearer route itself
  const wrong = await post(s.url + '/legacy/bearer/hook', body, {
    'content-type': 'application/json',
    authorization: `Bearer ${BEARER}x`,
  });
  t.equal(wrong.headers['www-authenticate'], 'Signature error="webhook_signature_invalid"');
  const right = await post(s.url + '/legacy/bearer/hook', body, {
    'content-type': 'application/json',
    authorization: `Bearer ${BEARER}`,
  });
  t.equal(right.status, 200);
  t.equal(app.hits.at(-1)?.headers['x-svc-sender'], 'seller-b', 'identity from the registration');
  // truncated signature header
  const sig = signed(s.url + '/webhooks/x', body, seller);
  const cut = await post(s.url + '/webhooks/x', body, {
    ...sig.headers,
    signature: (sig.headers.signature as string).slice(0, 20),
  });
  t.equal(cut.status, 401);
  t.equal(cut.headers['www-authenticate'], 'Signature error="webhook_signature_header_malformed"');
});

t.test('status table: 409, 413, 415, 422, 503', async (t) => {
  let slow: Promise<void> | null = null;
  let release = () => {};
  let failNext = false;
  const { s, app, deliver } = await sidecar(t, {}, async (hit) => {
    if (failNext) {
      failNext = false;
      return 500;
    }
    if (slow && hit.body.includes('st-slow')) await slow;
    return 200;
  });
  const e = envelope({ task_id: 'st-409' });
  t.equal((await deliver(e)).status, 200);
  t.equal((await deliver({ ...e, message: 'changed' })).status, 409);
  const fin = envelope({ task_id: 'st-409t', status: 'completed', result: { a: 1 } });
  t.equal((await deliver(fin)).status, 200);
  t.equal((await deliver({ ...fin, idempotency_key: newKey(), result: { a: 2 } })).status, 409);

  const big = Buffer.alloc(1024 * 1024 + 1, 0x20);
  t.equal((await post(s.url + '/w', big, { 'content-type': 'application/json' })).status, 413);
  t.equal((await post(s.url + '/w', '{}', { 'content-type': 'text/plain' })).status, 415);
  for (const [body, code] of [
    [{ notification_type: 'scheduled' }, 'missing_envelope_fields'],
    [{ ...envelope(), idempotency_key: undefined }, 'missing_idempotency_key'],
    [envelope({ status: 'active' }), 'invalid_envelope_status'],
  ] as const) {
    const r = await deliver(body);
    t.equal(r.status, 422);
    t.equal(r.json.error.code, code);
  }

  // identical delivery in progress
  slow = new Promise<void>((r) => (release = r));
  const se = envelope({ task_id: 'st-slow' });
  const first = deliver(se);
  await new Promise((r) => setTimeout(r, 200));
  const busy = await deliver(se);
  t.equal(busy.status, 503);
  release();
  t.equal((await first).status, 200);
  // publication not durable: the app answered 500
  failNext = true;
  const pe = envelope({ task_id: 'st-500' });
  const r503 = await deliver(pe);
  t.equal(r503.status, 503);
  t.ok(r503.headers['retry-after']);
  t.equal((await deliver(pe)).status, 200, 'the retry goes through');
  t.equal(app.hits.filter((h) => h.body.includes('st-500')).length, 1);
});

t.test('status table: 429 at the per-sender bound', async (t) => {
  const { deliver } = await sidecar(t, { schema: `${schema}_b`, maxKeysPerSender: 2 });
  t.teardown(() => pool.query(`DROP SCHEMA IF EXISTS ${schema}_b CASCADE`));
  const first = envelope({ task_id: 'b1' });
  t.equal((await deliver(first)).status, 200);
  t.equal((await deliver(envelope({ task_id: 'b2' }))).status, 200);
  const over = await deliver(envelope({ task_id: 'b3' }));
  t.equal(over.status, 429);
  t.equal(over.json.error.code, 'dedup_storage_bound');
  t.equal((await deliver(first)).status, 200, 'a stored key is still answered');
});

t.test('health and metrics', async (t) => {
  const { s, deliver } = await sidecar(t);
  const h = await request(s.url + '/healthz');
  t.equal(h.statusCode, 200);
  t.same(await h.body.json(), { status: 'ok' });
  await deliver(envelope());
  await post(s.url + '/w', '{}', { 'content-type': 'application/json' });
  const m = await request(s.url + '/metrics');
  const text = await m.body.text();
  t.match(text, /receiver_webhooks_verified_total 1/);
  t.match(text, /receiver_webhooks_rejected_total\{code="webhook_signature_header_malformed"\} 1/);
  t.match(text, /receiver_publication_seconds_count 1/);
  t.match(text, /receiver_webhooks_responses_total\{status="200"\} 1/);
  t.match(text, /receiver_webhooks_responses_total\{status="401"\} 1/, 'answers by code');
  await deliver(envelope());
  const again = await (await request(s.url + '/metrics')).body.text();
  t.match(again, /receiver_publication_seconds_count 2/, 'publish latency moves with traffic');
  t.match(again, /receiver_webhooks_responses_total\{status="200"\} 2/);
  t.equal((await post(s.url + '/healthz', '{}', {})).status, 405);
});

t.test('queue mode: durable enqueue, HTTP pull with claim and ack', async (t) => {
  const token = 'queue-token-0123456789abcdefghijklmnopq';
  const { s, app, deliver } = await sidecar(t, {
    target: { queue: 'app-events' },
    queueToken: token,
  });
  const e = envelope({ task_id: 'q-1' });
  t.equal((await deliver(e)).status, 200);
  t.equal((await deliver(e)).status, 200, 'duplicate');
  t.equal(app.hits.length, 0, 'nothing forwarded in queue mode');
  t.equal((await post(s.url + '/_queue/claim', '{}', {})).status, 401);
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const claimed = await post(
    s.url + '/_queue/claim',
    JSON.stringify({ max: 5, lease_seconds: 1 }),
    auth,
  );
  t.equal(claimed.status, 200);
  t.equal(claimed.json.items.length, 1);
  const item = claimed.json.items[0];
  t.same(item.envelope, e);
  t.equal(item.sender, 'seller-a');
  t.equal(item.idempotency_key, e.idempotency_key);
  t.equal(item.flags.stale, false);
  t.same((await post(s.url + '/_queue/claim', '{}', auth)).json.items, [], 'leased');
  // lease runs out: the item comes back with a new token; the old token no longer acks
  await new Promise((r) => setTimeout(r, 1100));
  const again = await post(s.url + '/_queue/claim', '{}', auth);
  t.equal(again.json.items[0]?.attempts, 2);
  t.same(
    (
      await post(
        s.url + '/_queue/ack',
        JSON.stringify({ items: [{ id: item.id, token: item.token }] }),
        auth,
      )
    ).json,
    {
      acked: 0,
    },
  );
  const ack = await post(
    s.url + '/_queue/ack',
    JSON.stringify({ items: [{ id: again.json.items[0].id, token: again.json.items[0].token }] }),
    auth,
  );
  t.same(ack.json, { acked: 1 });
  t.equal(await s.queue?.depth(), 0);
  t.equal((await post(s.url + '/_queue/ack', '{"items":5}', auth)).status, 400);
  t.equal((await post(s.url + '/_queue/ack', '{"a":1,"a":2}', auth)).status, 400);
});

t.test('hostile heads: oversized and truncated headers never hang', async (t) => {
  const { s, deliver } = await sidecar(t);
  const huge = await post(s.url + '/w', '{}', {
    'content-type': 'application/json',
    'x-filler': 'a'.repeat(20_000),
  }).catch((err: Error) => ({ status: -1, err }));
  t.equal(huge.status, 431);
  const { port } = new URL(s.url);
  const answer = await new Promise<string>((resolve) => {
    const sock = connect(Number(port), '127.0.0.1', () => {
      sock.write('POST /w HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl');
      sock.end();
    });
    let got = '';
    sock.on('data', (d) => (got += d));
    sock.on('close', () => resolve(got));
    sock.on('error', () => resolve(got));
  });
  t.match(answer, /^(HTTP\/1\.1 400|)/, 'a 400 or a closed socket, never a hang');
  const garbage = await new Promise<string>((resolve) => {
    const sock = connect(Number(port), '127.0.0.1', () => sock.write('\x00\x01 NOT HTTP\r\n\r\n'));
    let got = '';
    sock.on('data', (d) => (got += d));
    sock.on('close', () => resolve(got));
  });
  t.match(garbage, /^HTTP\/1\.1 400/);
  t.equal((await deliver(envelope())).status, 200, 'still serving');
});

t.test('graceful shutdown finishes in-flight requests', async (t) => {
  let release = () => {};
  const gate = new Promise<void>((r) => (release = r));
  const { s, app, deliver } = await sidecar(t, {}, async () => {
    await gate;
    return 200;
  });
  const inflight = deliver(envelope({ task_id: 'gs-1' }));
  await new Promise((r) => setTimeout(r, 200));
  const closing = s.close();
  setTimeout(release, 100);
  const res = await inflight;
  t.equal(res.status, 200);
  await closing;
  t.equal(app.hits.length, 1);
  await t.rejects(request(s.url + '/healthz'));
});

t.test('legacy HMAC route: identity from the registration, mode mismatches, step 14', async (t) => {
  const { s, app, deliver } = await sidecar(t);
  const url = s.url + '/legacy/hmac/hook';
  const hmac = (body: string, secret = SECRET) => ({
    'content-type': 'application/json',
    ...hmacHeaders({ secret, body, profile }),
  });
  const body = JSON.stringify(envelope({ task_id: 'hm-1' }));
  const ok = await post(url, body, hmac(body));
  t.equal(ok.status, 200);
  t.equal(app.hits.at(-1)?.headers['x-svc-sender'], 'seller-h');
  const rotated = JSON.stringify(envelope({ task_id: 'hm-2' }));
  t.equal((await post(url, rotated, hmac(rotated, OLD_SECRET))).status, 200, 'previous secret');
  const wrong = await post(url, body, hmac(body, 'another-secret-0123456789-ABCDEFGHIJ'));
  t.equal(wrong.headers['www-authenticate'], 'Signature error="webhook_signature_invalid"');
  const stale = await post(url, body, {
    'content-type': 'application/json',
    ...hmacHeaders({
      secret: SECRET,
      body,
      profile,
      timestamp: Math.floor(Date.now() / 1000) - 301,
    }),
  });
  t.equal(stale.headers['www-authenticate'], 'Signature error="webhook_signature_window_invalid"');
  const signed9421 = await deliver(envelope(), '/legacy/hmac/hook');
  t.equal(signed9421.headers['www-authenticate'], 'Signature error="webhook_mode_mismatch"');
  const bearer = await post(url, body, {
    'content-type': 'application/json',
    authorization: `Bearer ${BEARER}`,
  });
  t.equal(bearer.headers['www-authenticate'], 'Signature error="webhook_mode_mismatch"');
  const dup =
    '{"idempotency_key":"whk_dup_00000000000001","idempotency_key":"whk_dup_00000000000002"}';
  const bad = await post(url, dup, hmac(dup));
  t.equal(bad.headers['www-authenticate'], 'Signature error="webhook_body_malformed"');
});

t.test('hostile bodies and header bytes: stalled, cut short, non-ASCII signature', async (t) => {
  const { s, deliver } = await sidecar(t, { bodyIdleTimeoutMs: 300 });
  const { port } = new URL(s.url);
  const raw = (head: string, body = '', end = false) =>
    new Promise<string>((resolve) => {
      const sock = connect(Number(port), '127.0.0.1', () => {
        sock.write(head + body);
        if (end) sock.end();
      });
      let got = '';
      sock.setTimeout(5000, () => sock.destroy());
      sock.on('data', (d) => {
        got += d;
        if (/\r\n\r\n/.test(got)) sock.destroy();
      });
      sock.on('close', () => resolve(got));
      sock.on('error', () => resolve(got));
    });
  // unsigned, declares 100 bytes, sends 10, then stalls: refused on its head, not held
  const unsigned = await raw(
    'POST /w HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n',
    '{"a":12345',
  );
  t.match(unsigned, /^HTTP\/1\.1 401/);
  t.match(unsigned, /webhook_signature_header_malformed/);
  // signed, sends 10 bytes of its body, then stalls: answered 400 when the chunks stop
  const body = JSON.stringify(envelope());
  const sig = signed(`http://127.0.0.1:${port}/w`, body, seller);
  const head = Object.entries({ ...sig.headers, 'content-length': String(body.length) })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const stalled = await raw(
    `POST /w HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${head}\r\n`,
    body.slice(0, 10),
  );
  t.match(stalled, /^HTTP\/1\.1 400/);
  t.match(stalled, /body_incomplete/);
  // cut short: the client goes away mid-body; the server stays up
  await raw(
    'POST /w HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n',
    '{"a":',
    true,
  );
  // a signature header carrying raw non-ASCII bytes
  const odd = await raw(
    'POST /w HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n' +
      'Signature-Input: sig1=("@method");keyid="\xff\xfe"\r\nSignature: sig1=:AAAA:\r\n\r\n',
    '{}',
  );
  t.match(odd, /^HTTP\/1\.1 401/);
  t.match(odd, /webhook_signature_header_malformed/);
  t.equal((await deliver(envelope())).status, 200, 'still serving');
});

t.test('200 concurrent identical deliveries to the sidecar: the app gets one', async (t) => {
  const { deliver, app } = await sidecar(t, {}, async () => {
    await new Promise((r) => setTimeout(r, 30));
    return 200;
  });
  const e = envelope({ task_id: 'conc-side' });
  const res = await Promise.all(Array.from({ length: 200 }, () => deliver(e)));
  t.ok(
    res.every((r) => r.status === 200 || r.status === 503),
    'only 200 or 503',
  );
  t.equal(app.hits.length, 1);
  const after = await deliver(e);
  t.equal(after.status, 200);
  t.equal(app.hits.length, 1, 'still one after the in-flight copies are retried');
});
