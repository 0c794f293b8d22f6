import t, { type Test } from 'tap';
import { Readable, Writable } from 'node:stream';
import { createLogger } from '../../shared/infra/logger.js';
import { createPool } from '../../shared/infra/pg.js';
import { WebhookReceiver, type WebhookReceiverOptions } from '../../receiver/pipeline/receiver.js';
import { HandlerPublisher } from '../../receiver/publish/handler.js';
import type { ReceivedEvent } from '../../receiver/publish/types.js';
import { testDatabase } from '../helpers/db.js';
import {
  envelope,
  inlineResolver,
  makeSender,
  MemoryReplayStore,
  newKey,
  profile,
  signed,
} from './support/fixtures.js';
import { listen, post } from './support/server.js';

const { pool, schema } = testDatabase(t, 'rpipe');

async function setup(
  t: Test,
  over: Partial<WebhookReceiverOptions> & { handler?: (e: ReceivedEvent) => unknown } = {},
) {
  const seller = await makeSender('seller-a');
  const events: ReceivedEvent[] = [];
  const receiver = new WebhookReceiver({
    pool,
    schema,
    profile,
    protocolVersion: '3.2',
    keys: inlineResolver([seller]),
    replay: new MemoryReplayStore(),
    publisher: new HandlerPublisher(async (e) => {
      events.push(e);
      await over.handler?.(e);
    }),
    ...over,
  });
  await receiver.migrate();
  const { url, server } = await listen(receiver);
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const deliver = async (body: unknown, path = '/hooks/a', extra: Record<string, string> = {}) => {
    const text = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const s = signed(url + path, text, seller);
    return post(url + path, s.body, { ...s.headers, ...extra });
  };
  return { seller, events, receiver, url, deliver };
}

t.test('accepted: published once, sender from the key, raw bytes kept', async (t) => {
  const { deliver, events } = await setup(t);
  const body = `{ "idempotency_key": "${newKey()}", "operation_id": "op", "task_id": "t-acc", "task_type": "create_media_buy", "status": "working", "timestamp": "2026-05-26T10:00:00Z", "task_id_hint": 1 }`;
  const res = await deliver(body);
  t.equal(res.status, 200);
  t.equal(events.length, 1);
  t.equal(events[0]?.sender, 'seller-a');
  t.equal(events[0]?.body.toString(), body, 'bytes as received, not re-serialised');
  t.equal(events[0]?.stale, false);
  t.equal(events[0]?.auth.mode, 'rfc9421');
});

t.test('gates run before any crypto', async (t) => {
  const { url, deliver } = await setup(t);
  const get = await post(url + '/x', '', {}, 'GET');
  t.equal(get.status, 405);
  t.equal(get.headers.allow, 'POST');
  const text = await post(url + '/x', '{}', { 'content-type': 'text/plain' });
  t.equal(text.status, 415);
  const none = await post(url + '/x', '{}', {});
  t.equal(none.status, 415);
  const two = await post(url + '/x', '{}', { 'content-type': 'application/json, text/plain' });
  t.equal(two.status, 415, 'multi-valued content-type');
  const twice = await post(url + '/x', '{}', {
    'content-type': ['application/json', 'application/json'],
  });
  t.equal(twice.status, 415, 'content-type sent twice');
  // Parameters are accepted: this one reaches the verifier (and fails there, unsigned).
  const cs = await post(url + '/x', '{}', { 'content-type': 'application/json; charset=utf-8' });
  t.equal(cs.status, 401);
  t.equal(cs.headers['www-authenticate'], 'Signature error="webhook_signature_header_malformed"');
  const ok = await deliver(envelope({ task_id: 't-gates' }), '/x', {
    'content-type': 'application/json',
  });
  t.equal(ok.status, 200);
});

t.test('1 MB + 1 byte: 413, with and without Content-Length', async (t) => {
  const { url, deliver, seller } = await setup(t);
  const big = Buffer.alloc(1024 * 1024 + 1, 0x20);
  // A declared length over the cap is refused before verification, signed or not.
  const a = await post(url + '/x', big, { 'content-type': 'application/json' });
  t.equal(a.status, 413);
  t.equal(a.json.error.code, 'payload_too_large');
  // Chunked (no Content-Length), signed: refused while streaming.
  const { request } = await import('undici');
  const s = signed(url + '/x', big, seller);
  const chunked = (headers: Record<string, string>) => {
    async function* chunks() {
      for (let i = 0; i < 17; i++) yield Buffer.alloc(64 * 1024, 0x20);
    }
    return request(url + '/x', {
      method: 'POST',
      headers,
      body: Readable.from(chunks()),
    }).catch((err: Error) => err);
  };
  const res = await chunked(s.headers);
  if (res instanceof Error) t.match(res.message, /./, 'server cut the upload short');
  else t.equal(res.statusCode, 413);
  // Chunked and unsigned: refused on its head, before a byte of the body is read.
  const unsigned = await chunked({ 'content-type': 'application/json' });
  if (unsigned instanceof Error) t.match(unsigned.message, /./, 'server cut the upload short');
  else t.equal(unsigned.statusCode, 401);
  // Exactly 1 MB is not refused by the gate (padding after the JSON value is whitespace).
  const body = JSON.stringify(envelope({ task_id: 't-1mb' }));
  const padded = body + ' '.repeat(1024 * 1024 - body.length);
  t.equal((await deliver(padded)).status, 200);
});

t.test('no body is read before the head authenticates', async (t) => {
  const { receiver, seller, url, events } = await setup(t);
  // A body stream that records whether anyone read it.
  const stream = (text: string) => {
    let read = false;
    const r = new Readable({
      read() {
        read = true;
        this.push(text);
        this.push(null);
      },
    });
    return { r, wasRead: () => read };
  };
  const body = JSON.stringify(envelope({ task_id: 't-head' }));
  const s = signed(url + '/h', body, seller);
  const cases: Array<[string, Record<string, string>, string]> = [
    ['unsigned', { 'content-type': 'application/json' }, 'webhook_signature_header_malformed'],
    ['wrong path', s.headers, 'webhook_signature_invalid'],
    [
      'unknown key',
      {
        ...s.headers,
        'signature-input': s.headers['signature-input']!.replace(/keyid="[^"]+"/, 'keyid="nope"'),
      },
      'webhook_signature_key_unknown',
    ],
  ];
  for (const [name, headers, code] of cases) {
    const b = stream(body);
    const res = await receiver.handle({
      method: 'POST',
      url: name === 'wrong path' ? url + '/other' : url + '/h',
      headers,
      body: b.r,
    });
    t.equal(res.status, 401, name);
    t.equal(res.headers['www-authenticate'], `Signature error="${code}"`, name);
    t.notOk(b.wasRead(), `${name}: body never read`);
  }
  // A valid head with a wrong body: read, refused at the digest, and the nonce not burnt,
  // so the genuine request with the same signature still goes through.
  const wrong = stream(body.replace('op_1', 'op_2'));
  const bad = await receiver.handle({
    method: 'POST',
    url: url + '/h',
    headers: s.headers,
    body: wrong.r,
  });
  t.ok(wrong.wasRead());
  t.equal(bad.headers['www-authenticate'], 'Signature error="webhook_signature_digest_mismatch"');
  const good = await receiver.handle({
    method: 'POST',
    url: url + '/h',
    headers: s.headers,
    body: stream(body).r,
  });
  t.equal(good.status, 200, 'nonce still unused after the digest failure');
  t.equal(events.length, 1);
  // Replayed with a wrong body: the digest code (step 11 before 12), nothing consumed.
  const replayBad = await receiver.handle({
    method: 'POST',
    url: url + '/h',
    headers: s.headers,
    body: stream(body + ' ').r,
  });
  t.equal(
    replayBad.headers['www-authenticate'],
    'Signature error="webhook_signature_digest_mismatch"',
  );
  const replay = await receiver.handle({
    method: 'POST',
    url: url + '/h',
    headers: s.headers,
    body: stream(body).r,
  });
  t.equal(replay.headers['www-authenticate'], 'Signature error="webhook_signature_replayed"');
  t.equal(receiver.bodyBudget.inFlight, 0, 'every byte given back');
});

t.test(
  'legacy routes: Bearer and the HMAC headers checked before the body, the MAC after',
  async (t) => {
    const SECRET = 'hmac-secret-0123456789-ABCDEFGHIJKLMNOP';
    const TOKEN = 'bearer-token-0123456789-abcdefghijklmnop';
    const { receiver, url, events } = await setup(t, {
      route: (path) =>
        path.startsWith('/hmac')
          ? {
              mode: 'hmac',
              registration: {
                path_prefix: '/hmac',
                sender: 'seller-h',
                scheme: 'HMAC-SHA256',
                secrets: [SECRET],
              },
            }
          : {
              mode: 'bearer',
              registration: {
                path_prefix: '/bearer',
                sender: 'seller-b',
                scheme: 'Bearer',
                token: TOKEN,
              },
            },
    });
    const body = JSON.stringify(envelope({ task_id: 't-legacy' }));
    const tracked = (text: string) => {
      let read = false;
      const r = new Readable({
        read() {
          read = true;
          this.push(text);
          this.push(null);
        },
      });
      return { r, wasRead: () => read };
    };
    const call = (path: string, headers: Record<string, string>, b: Readable) =>
      receiver.handle({
        method: 'POST',
        url: url + path,
        headers: { 'content-type': 'application/json', ...headers },
        body: b,
      });
    const ts = String(Math.floor(Date.now() / 1000));
    for (const [name, path, headers, code] of [
      ['bearer, wrong token', '/bearer', { authorization: 'Bearer nope' }, null],
      ['hmac, no headers', '/hmac', {}, 'webhook_signature_header_malformed'],
      [
        'hmac, stale timestamp',
        '/hmac',
        { 'x-svc-signature': `sha256=${'0'.repeat(64)}`, 'x-svc-timestamp': '1000' },
        'webhook_signature_window_invalid',
      ],
      [
        'hmac, malformed signature',
        '/hmac',
        { 'x-svc-signature': 'sha256=00', 'x-svc-timestamp': ts },
        'webhook_signature_header_malformed',
      ],
    ] as const) {
      const b = tracked(body);
      const res = await call(path, headers, b.r);
      t.equal(res.status, 401, name);
      if (code) t.equal(res.headers['www-authenticate'], `Signature error="${code}"`, name);
      t.notOk(b.wasRead(), `${name}: body never read`);
    }
    // A well-formed HMAC head needs the body: read, then the MAC decides.
    const forged = tracked(body);
    const bad = await call(
      '/hmac',
      { 'x-svc-signature': `sha256=${'0'.repeat(64)}`, 'x-svc-timestamp': ts },
      forged.r,
    );
    t.ok(forged.wasRead());
    t.equal(bad.headers['www-authenticate'], 'Signature error="webhook_signature_invalid"');
    const { hmacHeaders } = await import('../../shared/legacy/hmac.js');
    const good = await call(
      '/hmac',
      Object.fromEntries(
        Object.entries(hmacHeaders({ secret: SECRET, body, profile })).map(([k, v]) => [
          k.toLowerCase(),
          v,
        ]),
      ),
      tracked(body).r,
    );
    t.equal(good.status, 200);
    const bearer = await call(
      '/bearer',
      { authorization: `Bearer ${TOKEN}` },
      tracked(JSON.stringify(envelope({ task_id: 't-bearer' }))).r,
    );
    t.equal(bearer.status, 200);
    t.same(
      events.map((e) => [e.sender, e.auth.mode]),
      [
        ['seller-h', 'hmac'],
        ['seller-b', 'bearer'],
      ],
    );
  },
);

t.test(
  'bodies read before their sender is known (HMAC) get their own share of the budget',
  async (t) => {
    const SECRET = 'hmac-secret-0123456789-ABCDEFGHIJKLMNOP';
    const hmacRoute = {
      mode: 'hmac' as const,
      registration: {
        path_prefix: '/hmac',
        sender: 'seller-h',
        scheme: 'HMAC-SHA256' as const,
        secrets: [SECRET],
      },
    };
    const { receiver, seller, url } = await setup(t, {
      maxBodyBytes: 1000,
      bodyBudgetBytes: 4000,
      route: (path) => (path.startsWith('/hmac') ? hmacRoute : { mode: 'rfc9421' }),
    });
    t.equal(
      receiver.unauthenticatedBodyBudget.limitBytes,
      1000,
      'a quarter, at least maxBodyBytes',
    );
    t.throws(
      () =>
        new WebhookReceiver({
          ...(receiver as unknown as { o: WebhookReceiverOptions }).o,
          maxBodyBytes: 1000,
          bodyBudgetBytes: 4000,
          unauthenticatedBodyBudgetBytes: 5000,
        }),
      RangeError,
    );
    const ts = String(Math.floor(Date.now() / 1000));
    const forged = {
      'content-type': 'application/json',
      'x-svc-signature': `sha256=${'0'.repeat(64)}`,
      'x-svc-timestamp': ts,
    };
    const held = new Readable({ read() {} });
    const first = receiver.handle({
      method: 'POST',
      url: url + '/hmac/x',
      headers: { ...forged, 'content-length': '900' },
      body: held,
    });
    for (let i = 0; i < 200 && receiver.bodyBudget.inFlight === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    t.equal(receiver.unauthenticatedBodyBudget.inFlight, 900);
    const second = await receiver.handle({
      method: 'POST',
      url: url + '/hmac/x',
      headers: { ...forged, 'content-length': '200' },
      body: Readable.from([Buffer.alloc(200, 0x20)]),
    });
    t.equal(second.status, 503, 'the HMAC share is full');
    const body = JSON.stringify(envelope({ task_id: 't-share' }));
    const s = signed(url + '/h', body + ' '.repeat(900 - body.length), seller);
    const signedRes = await receiver.handle({
      method: 'POST',
      url: url + '/h',
      headers: { ...s.headers, 'content-length': '900' },
      body: Readable.from([s.body]),
    });
    t.equal(signedRes.status, 200, 'an authenticated sender still has the rest of the budget');
    held.push(Buffer.alloc(900, 0x20));
    held.push(null);
    t.equal((await first).status, 401, 'the forged MAC, once its body is read');
    t.equal(receiver.bodyBudget.inFlight, 0);
  },
);

t.test(
  'body budget: a body that would exceed it is 503 + Retry-After, before it is read',
  async (t) => {
    const { receiver, seller, url, events } = await setup(t, {
      maxBodyBytes: 1000,
      bodyBudgetBytes: 1500,
    });
    t.throws(
      () =>
        new WebhookReceiver({
          ...(receiver as unknown as { o: WebhookReceiverOptions }).o,
          bodyBudgetBytes: 999,
        }),
      RangeError,
    );
    const body = JSON.stringify(envelope({ task_id: 't-budget' }));
    const pad = (n: number) => body + ' '.repeat(n - body.length);
    // Holds 900 bytes of the budget: declared, then stalled.
    const held = new Readable({ read() {} });
    const s1 = signed(url + '/b', pad(900), seller);
    const first = receiver.handle({
      method: 'POST',
      url: url + '/b',
      headers: { ...s1.headers, 'content-length': '900' },
      body: held,
    });
    // Bounded wait until its head verified and its declared length was taken.
    for (let i = 0; i < 200 && receiver.bodyBudget.inFlight === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    t.equal(receiver.bodyBudget.inFlight, 900);
    // Declared 700 more: over 1500, refused before reading.
    const s2 = signed(url + '/b', pad(700), seller);
    let read2 = false;
    const second = await receiver.handle({
      method: 'POST',
      url: url + '/b',
      headers: { ...s2.headers, 'content-length': '700' },
      body: new Readable({
        read() {
          read2 = true;
          this.push(null);
        },
      }),
    });
    t.equal(second.status, 503);
    t.equal(second.headers['retry-after'], '1');
    t.equal(second.headers.connection, 'close');
    t.equal(JSON.parse(second.body).error.code, 'receiver_busy');
    t.notOk(read2, 'refused body never read');
    // Chunked (no length) crosses the budget mid-stream: same answer.
    const s3 = signed(url + '/b', pad(700), seller);
    const third = await receiver.handle({
      method: 'POST',
      url: url + '/b',
      headers: s3.headers,
      body: Readable.from([s3.body.subarray(0, 500), s3.body.subarray(500)]),
    });
    t.equal(third.status, 503);
    // The held one completes; everything is given back and a delivery fits again.
    held.push(s1.body);
    held.push(null);
    t.equal((await first).status, 200);
    t.equal(receiver.bodyBudget.inFlight, 0);
    const s4 = signed(url + '/b', JSON.stringify(envelope({ task_id: 't-budget-2' })), seller);
    const fourth = await receiver.handle({
      method: 'POST',
      url: url + '/b',
      headers: s4.headers,
      body: Readable.from([s4.body]),
    });
    t.equal(fourth.status, 200);
    t.equal(events.length, 2);
  },
);

t.test('a trickled body meets its total deadline: 408, connection closed', async (t) => {
  const { receiver, seller, url } = await setup(t, { bodyTimeoutMs: 300, bodyIdleTimeoutMs: 5000 });
  const body = JSON.stringify(envelope({ task_id: 't-trickle' }));
  const s = signed(url + '/t', body, seller);
  let i = 0;
  const trickle = new Readable({ read() {} });
  const timer = setInterval(() => {
    if (i < s.body.length) trickle.push(s.body.subarray(i, ++i));
  }, 20);
  t.teardown(() => clearInterval(timer));
  const res = await receiver.handle({
    method: 'POST',
    url: url + '/t',
    headers: s.headers,
    body: trickle,
  });
  t.equal(res.status, 408);
  t.equal(JSON.parse(res.body).error.code, 'body_timeout');
  t.equal(res.headers.connection, 'close');
  t.equal(receiver.bodyBudget.inFlight, 0);
});

t.test('verification failures: 401 and only Signature error="<code>"', async (t) => {
  const { url, seller, events } = await setup(t);
  const body = JSON.stringify(envelope());
  const s = signed(url + '/h', body, seller);
  const tampered = await post(url + '/h', body.replace('op_1', 'op_2'), s.headers);
  t.equal(tampered.status, 401);
  t.equal(
    tampered.headers['www-authenticate'],
    'Signature error="webhook_signature_digest_mismatch"',
  );
  const wrongPath = await post(url + '/other', body, s.headers);
  t.equal(wrongPath.headers['www-authenticate'], 'Signature error="webhook_signature_invalid"');
  const hmac = await post(url + '/h', body, {
    'content-type': 'application/json',
    'x-svc-signature': 'sha256=00',
    'x-svc-timestamp': '1',
  });
  t.equal(hmac.headers['www-authenticate'], 'Signature error="webhook_mode_mismatch"');
  const bearer = await post(url + '/h', body, {
    'content-type': 'application/json',
    authorization: 'Bearer abcdefabcdefabcdefabcdefabcdefabcdef',
  });
  t.equal(bearer.headers['www-authenticate'], 'Signature error="webhook_mode_mismatch"');
  const replay = await post(url + '/h', body, s.headers);
  t.equal(replay.status, 200);
  const again = await post(url + '/h', body, s.headers);
  t.equal(again.headers['www-authenticate'], 'Signature error="webhook_signature_replayed"');
  t.equal(events.length, 1);
});

t.test('step 14: duplicate keys are webhook_body_malformed, logged without the body', async (t) => {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'info',
    destination: new Writable({
      write(chunk, _e, cb) {
        lines.push(String(chunk));
        cb();
      },
    }),
  });
  const { deliver, events } = await setup(t, { logger });
  const secret = 'SECRET-PAYLOAD-VALUE';
  const body = `{"idempotency_key":"${newKey()}","status":"working","status":"completed","evil\\u0007name":1,"evil\\u0007name":2,"x":"${secret}"}`;
  const res = await deliver(body);
  t.equal(res.status, 401);
  t.equal(res.headers['www-authenticate'], 'Signature error="webhook_body_malformed"');
  t.equal(events.length, 0);
  const line = lines.find((l) => l.includes('webhook_body_malformed'));
  t.ok(line, 'rejection logged');
  const rec = JSON.parse(line as string);
  t.same(rec.duplicate_keys, ['status', 'evil<sanitized:4>']);
  t.equal(rec.bytes, Buffer.byteLength(body));
  t.ok(rec.keyid && rec.nonce);
  t.notOk(lines.join('').includes(secret), 'no body in any log line');
});

t.test('hostile bodies: invalid UTF-8, deep JSON, not JSON: the specific code', async (t) => {
  const { deliver } = await setup(t);
  const bad = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
  const utf = await deliver(bad);
  t.equal(utf.status, 401);
  t.equal(utf.headers['www-authenticate'], 'Signature error="webhook_body_malformed"');
  const deep = await deliver('['.repeat(5000) + ']'.repeat(5000));
  t.equal(deep.headers['www-authenticate'], 'Signature error="webhook_body_malformed"');
  const notJson = await deliver('{"a":');
  t.equal(notJson.headers['www-authenticate'], 'Signature error="webhook_body_malformed"');
});

t.test('envelope errors: 422 with the envelope error id', async (t) => {
  const { deliver, events } = await setup(t);
  const bare = await deliver({ notification_type: 'scheduled', reporting_period: {} });
  t.equal(bare.status, 422);
  t.equal(bare.json.error.code, 'missing_envelope_fields');
  t.same([...bare.json.error.fields].sort(), [
    'idempotency_key',
    'operation_id',
    'status',
    'task_id',
    'task_type',
    'timestamp',
  ]);
  const { idempotency_key: _, ...noKey } = envelope();
  t.equal((await deliver(noKey)).json.error.code, 'missing_idempotency_key');
  t.equal(
    (await deliver(envelope({ status: 'active' }))).json.error.code,
    'invalid_envelope_status',
  );
  t.equal((await deliver([1, 2])).json.error.code, 'invalid_envelope');
  // Valid JSON no PostgreSQL text can hold: refused naming the member, not a 503 for ever.
  const nul = await deliver(envelope({ task_id: 't-\u0000', operation_id: 'op\u0000' }));
  t.equal(nul.status, 422);
  t.equal(nul.json.error.code, 'invalid_envelope');
  t.same([...nul.json.error.fields].sort(), ['operation_id', 'task_id']);
  t.equal(events.length, 0);
  const inResult = await deliver(
    envelope({ task_id: 't-nul-result', result: { note: 'a\u0000b' } }),
  );
  t.equal(inResult.status, 200, "a U+0000 elsewhere in the payload is the app's to read");
  t.equal(events.length, 1);
  const terminal = await deliver(
    envelope({ task_id: 't-nul-done', status: 'completed', result: { note: 'a\u0000b' } }),
  );
  t.equal(terminal.status, 200, 'and in a terminal one, whose record the store keeps');
  t.equal(events.length, 2);
});

t.test('3.2 duplicates: done 200 no republish, changed payload 409, in flight 503', async (t) => {
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  const { deliver, events } = await setup(t, {
    handler: (e) => (e.taskId === 't-slow' ? gate : undefined),
  });
  const e1 = envelope({ task_id: 't-dup' });
  t.equal((await deliver(e1)).status, 200);
  const dup = await deliver({ ...e1 });
  t.equal(dup.status, 200);
  t.equal(dup.json.status, 'duplicate');
  const changed = await deliver({ ...e1, message: 'changed' });
  t.equal(changed.status, 409);
  t.equal(changed.json.error.code, 'idempotency_conflict');
  t.equal(events.filter((e) => e.taskId === 't-dup').length, 1);

  const slow = envelope({ task_id: 't-slow' });
  const first = deliver(slow);
  await new Promise((r) => setTimeout(r, 200));
  const inFlight = await deliver(slow);
  t.equal(inFlight.status, 503);
  t.ok(inFlight.headers['retry-after']);
  release();
  t.equal((await first).status, 200);
  t.equal((await deliver(slow)).status, 200);
  t.equal(events.filter((e) => e.taskId === 't-slow').length, 1);
});

t.test('3.1 duplicates: every completed duplicate is 200, first copy wins', async (t) => {
  const { deliver, events } = await setup(t, { protocolVersion: '3.1', schema: `${schema}_31` });
  t.teardown(() => pool.query(`DROP SCHEMA IF EXISTS ${schema}_31 CASCADE`));
  const e1 = envelope({ task_id: 't-31' });
  t.equal((await deliver(e1)).status, 200);
  const changed = await deliver({ ...e1, timestamp: '2026-05-26T10:00:05Z' });
  t.equal(changed.status, 200);
  t.equal(events.length, 1);
  t.equal(events[0]?.timestamp, e1.timestamp);
});

t.test('publisher failure: 503, the retry publishes exactly once', async (t) => {
  let fail = true;
  const { deliver, events } = await setup(t, {
    handler: () => {
      if (fail) throw new Error('app down');
    },
  });
  const e = envelope({ task_id: 't-fail' });
  const res = await deliver(e);
  t.equal(res.status, 503);
  t.equal(res.json.error.code, 'publication_failed');
  fail = false;
  t.equal((await deliver(e)).status, 200);
  t.equal((await deliver(e)).json.status, 'duplicate');
  // the failed attempt reached the handler once, the successful one once
  t.equal(events.filter((x) => x.taskId === 't-fail').length, 2);
});

t.test('ordering: a stale status is 200 and published flagged stale', async (t) => {
  const { deliver, events } = await setup(t);
  t.equal(
    (await deliver(envelope({ task_id: 't-ord', timestamp: '2026-05-26T10:00:02Z' }))).status,
    200,
  );
  const old = await deliver(envelope({ task_id: 't-ord', timestamp: '2026-05-26T10:00:01Z' }));
  t.equal(old.status, 200);
  t.equal(old.json.status, 'stale');
  const got = events.filter((e) => e.taskId === 't-ord');
  t.same(
    got.map((e) => e.stale),
    [false, true],
  );
});

t.test('terminal convergence over HTTP: duplicate, conflict 409, poll first', async (t) => {
  const { deliver, events, receiver } = await setup(t);
  const done = envelope({
    task_id: 't-term',
    status: 'completed',
    result: { media_buy_id: 'mb1' },
  });
  t.equal((await deliver(done)).status, 200);
  const sameOtherKey = await deliver({ ...done, idempotency_key: newKey(), message: 'again' });
  t.equal(sameOtherKey.status, 200);
  t.equal(sameOtherKey.json.status, 'duplicate');
  const conflict = await deliver({ ...done, idempotency_key: newKey(), status: 'failed' });
  t.equal(conflict.status, 409);
  t.equal(conflict.json.error.code, 'terminal_conflict');
  const late = await deliver(envelope({ task_id: 't-term', timestamp: '2099-01-01T00:00:00Z' }));
  t.equal(late.json.status, 'stale');
  t.same(
    events.filter((e) => e.taskId === 't-term').map((e) => [e.status, e.terminal, e.stale]),
    [
      ['completed', true, false],
      ['working', false, true],
    ],
  );

  // The buyer's poller saw the terminal first; the webhook then converges on it.
  t.equal(
    await receiver.convergence.observeTerminal({
      sender: 'seller-a',
      taskId: 't-poll',
      taskType: 'create_media_buy',
      status: 'completed',
      value: { media_buy_id: 'mb2' },
      source: 'poll',
    }),
    'won',
  );
  const hook = envelope({
    task_id: 't-poll',
    status: 'completed',
    result: { media_buy_id: 'mb2' },
  });
  const r = await deliver(hook);
  t.equal(r.status, 200);
  t.equal(r.json.status, 'duplicate');
  t.equal(events.filter((e) => e.taskId === 't-poll').length, 0, 'not republished');
  const other = await deliver({
    ...hook,
    idempotency_key: newKey(),
    result: { media_buy_id: 'x' },
  });
  t.equal(other.status, 409);
  // a retry of the conflicting key stays 409
  t.equal(
    (await deliver({ ...hook, idempotency_key: newKey(), result: { media_buy_id: 'x' } })).status,
    409,
  );
});

t.test('notification_id re-emission is surfaced as a flag', async (t) => {
  const { deliver, events } = await setup(t);
  const a = envelope({ task_id: 't-re1', notification_id: 'mb_1.impairment.7' });
  const b = envelope({ task_id: 't-re2', notification_id: 'mb_1.impairment.7' });
  await deliver(a);
  await deliver(b);
  t.same(
    events.filter((e) => e.notificationId === 'mb_1.impairment.7').map((e) => e.reEmission),
    [false, true],
  );
});

t.test('200 concurrent identical deliveries: exactly one publication', async (t) => {
  const { deliver, events } = await setup(t, {
    handler: () => new Promise((r) => setTimeout(r, 50)),
  });
  const e = envelope({ task_id: 't-conc' });
  const results = await Promise.all(Array.from({ length: 200 }, () => deliver(e)));
  t.equal(events.filter((x) => x.taskId === 't-conc').length, 1);
  t.ok(
    results.every((r) => r.status === 200 || r.status === 503),
    'only 200 or 503',
  );
  t.ok(results.some((r) => r.status === 200));
});

t.test('database down: 503 with Retry-After, never 500', async (t) => {
  const seller = await makeSender('seller-down');
  const dead = createPool({ connectionString: 'postgres://postgres@127.0.0.1:1/none' });
  t.teardown(() => dead.end());
  const receiver = new WebhookReceiver({
    pool: dead,
    schema,
    profile,
    protocolVersion: '3.2',
    keys: inlineResolver([seller]),
    replay: new MemoryReplayStore(),
    publisher: new HandlerPublisher(() => {}),
  });
  const { url, server } = await listen(receiver);
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const body = JSON.stringify(envelope());
  const s = signed(url + '/h', body, seller);
  const res = await post(url + '/h', body, s.headers);
  t.equal(res.status, 503);
  t.equal(res.headers['retry-after'], '5');
});

t.test(
  'step 13 runs beside the claim: same nonce twice at once, malformed body burns it',
  async (t) => {
    const { PgReplayStore } = await import('../../receiver/replay/pg-replay-store.js');
    const replay = new PgReplayStore(pool, { schema });
    await replay.migrate();
    const { url, seller, events } = await setup(t, { replay });
    const body = JSON.stringify(envelope({ task_id: 't-nonce' }));
    const s = signed(url + '/n', body, seller);
    const both = await Promise.all([
      post(url + '/n', body, s.headers),
      post(url + '/n', body, s.headers),
    ]);
    t.equal(both.filter((r) => r.status === 401).length, 1, 'exactly one of the two is refused');
    t.ok(both.every((r) => [200, 401, 503].includes(r.status)));
    t.equal(
      both.find((r) => r.status === 401)?.headers['www-authenticate'],
      'Signature error="webhook_signature_replayed"',
    );
    t.ok(events.filter((e) => e.taskId === 't-nonce').length <= 1, 'never two publications');
    // whatever the first answer was (200, or 503 when the loser held the claim), a fresh
    // signature goes through exactly once
    const again = signed(url + '/n', body, seller);
    t.equal((await post(url + '/n', body, again.headers)).status, 200);
    t.equal(events.filter((e) => e.taskId === 't-nonce').length, 1);

    const bad = '{"a":1,"a":2}';
    const sb = signed(url + '/n', bad, seller);
    t.equal(
      (await post(url + '/n', bad, sb.headers)).headers['www-authenticate'],
      'Signature error="webhook_body_malformed"',
    );
    t.equal(
      (await post(url + '/n', bad, sb.headers)).headers['www-authenticate'],
      'Signature error="webhook_signature_replayed"',
      'the malformed body burned its nonce',
    );
    const env422 = JSON.stringify({ notification_type: 'x' });
    const se = signed(url + '/n', env422, seller);
    t.equal((await post(url + '/n', env422, se.headers)).status, 422);
    t.equal((await post(url + '/n', env422, se.headers)).status, 401);
  },
);

t.test('100 concurrent distinct deliveries over 10 tasks: each published once', async (t) => {
  const { deliver, events } = await setup(t);
  const list = Array.from({ length: 100 }, (_, i) =>
    envelope({
      task_id: `t-many-${i % 10}`,
      timestamp: new Date(Date.UTC(2026, 4, 26, 10, 0, i)).toISOString(),
    }),
  );
  const res = await Promise.all(list.map((e) => deliver(e)));
  t.ok(res.every((r) => r.status === 200));
  const mine = events.filter((e) => e.taskId?.startsWith('t-many-'));
  t.equal(mine.length, 100);
  t.equal(new Set(mine.map((e) => e.idempotencyKey)).size, 100);
  const again = await Promise.all(list.map((e) => deliver(e)));
  t.ok(again.every((r) => r.status === 200 && r.json.status === 'duplicate'));
});

t.test('refused before the body is read: answered at once, connection closed', async (t) => {
  const { url } = await setup(t);
  const big = Buffer.alloc(2 * 1024 * 1024, 0x20);
  const put = await post(url + '/x', big, { 'content-type': 'application/json' }, 'PUT').catch(
    (err: Error) => ({ status: -1, headers: {} as Record<string, unknown>, err }),
  );
  if (put.status !== -1) {
    t.equal(put.status, 405);
    t.equal(put.headers.connection, 'close');
  } else t.pass('server closed the upload');
  const text = await post(url + '/x', big, { 'content-type': 'text/plain' }).catch(
    (err: Error) => ({ status: -1, headers: {} as Record<string, unknown>, err }),
  );
  t.ok(text.status === 415 || text.status === -1);
  t.equal((await post(url + '/x', '', {}, 'GET')).status, 405, 'still serving');
});

t.test('delivery reports and impairments are not task results: no 409, no stale', async (t) => {
  const { deliver, events } = await setup(t);
  const buyTask = `t-buy-${newKey()}`;
  // The buy's own create result settles first.
  const created = envelope({
    task_id: buyTask,
    task_type: 'create_media_buy',
    status: 'completed',
    result: { media_buy_id: 'mb-1', packages: [] },
  });
  t.equal((await deliver(created)).status, 200);
  const report = (seq: number, at: string) =>
    envelope({
      task_id: buyTask,
      task_type: 'media_buy_delivery',
      status: 'completed',
      timestamp: at,
      result: {
        notification_type: 'scheduled',
        sequence_number: seq,
        reporting_period: { start: '2026-05-26T00:00:00Z', end: '2026-05-26T01:00:00Z' },
        currency: 'USD',
        media_buy_deliveries: [],
      },
    });
  t.equal((await deliver(report(1, '2026-05-26T01:05:00Z'))).status, 200, 'first report');
  t.equal((await deliver(report(2, '2026-05-26T02:05:00Z'))).status, 200, 'second report');
  t.equal(
    (await deliver(report(3, '2026-05-26T00:30:00Z'))).status,
    200,
    'a report arriving out of order',
  );
  const impairment = envelope({
    task_id: buyTask,
    task_type: 'create_media_buy',
    status: 'completed',
    notification_id: 'imp-1',
    result: { notification_type: 'impairment', impairment_id: 'imp-1', health: 'impaired' },
  });
  t.equal((await deliver(impairment)).status, 200, 'an impairment under the buy task id');
  const again = { ...impairment, idempotency_key: newKey() };
  t.equal((await deliver(again)).status, 200, 'its re-emission');

  t.equal(events.length, 6, 'every one published');
  t.same(
    events.slice(1).map((e) => [e.stale, e.terminal]),
    Array.from({ length: 5 }, () => [false, false]),
    'none stale, none read as the terminal result',
  );
  t.same(
    events.slice(4).map((e) => e.reEmission),
    [false, true],
    'the impairment re-emission is surfaced',
  );
  // The task's own convergence still holds: a different create result is a conflict.
  const other = envelope({
    task_id: buyTask,
    task_type: 'create_media_buy',
    status: 'failed',
  });
  t.equal((await deliver(other)).status, 409);
});
