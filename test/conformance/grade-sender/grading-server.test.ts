import t from 'tap';
import { createServer } from 'node:net';
import { request } from 'undici';
import { generateSigningKey, publishedJwk } from '../../../shared/signing/keys.js';
import { signWebhook } from '../../../shared/signing/sign.js';
import { GradingServer } from '../../../conformance/grade-sender/grading-server.js';
import { profile, resolverOver } from '../support/receivers.js';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function post(
  url: string,
  body: string | Buffer,
  headers: Record<string, string>,
  method = 'POST',
) {
  const res = await request(url, { method: method as 'POST', headers, body });
  await res.body.dump();
  return res.statusCode;
}

t.test('whatever arrives is recorded and answered, never a crash', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const server = new GradingServer({ profile, keys: resolverOver([publishedJwk(key, profile)]) });
  await server.start();
  t.teardown(() => server.close());
  const url = server.openStep('s1');
  const good = JSON.stringify({ a: 1 });
  const sign = (body: string, u = url) =>
    signWebhook({ method: 'POST', url: u, body }, { key, profile });

  t.equal(await post(url, good, sign(good)), 200, 'a valid delivery');
  t.equal(
    await post(url.replace(/cap_[^/]+$/, 'cap_other'), good, sign(good)),
    404,
    'wrong capture id',
  );
  t.equal(await post(url.replace('/s1/', '/s2/'), good, sign(good)), 404, 'unknown step');
  t.equal(await post(`${url}/extra`, good, sign(good)), 404, 'not a step URL');
  const dup = '{"a":1,"a":2}';
  t.equal(await post(url, dup, sign(dup)), 401, 'duplicate keys');
  const text = 'not json';
  t.equal(await post(url, text, sign(text)), 401, 'not JSON');
  t.equal(await post(url, good, { 'content-type': 'application/json' }), 401, 'unsigned');
  t.equal(await post(url, '', {}, 'GET'), 401, 'GET: recorded, signature missing');
  const big = Buffer.alloc(1024 * 1024 + 10, 'a');
  const status = await post(url, big, { 'content-type': 'application/json' }).catch(() => 413);
  t.equal(status, 413, 'over 1 MB refused');

  const caps = server.captures('s1');
  t.same(
    caps.map((c) => (c.verification.ok ? 'ok' : c.verification.code)),
    [
      'ok',
      'webhook_body_malformed',
      'webhook_body_malformed',
      'webhook_signature_header_malformed',
      'webhook_signature_header_malformed',
    ],
  );
  t.equal(caps[0]?.json && (caps[0].json as { a: number }).a, 1);
  t.equal(caps[2]?.json, null, 'not JSON is kept as null');
});

t.test('--public-url: the sender signs the public URL; the suffix routes the step', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const port = await freePort();
  const server = new GradingServer({
    profile,
    keys: resolverOver([publishedJwk(key, profile)]),
    port,
    publicUrl: `http://localhost:${port}/tunnel/`,
  });
  const base = await server.start();
  t.teardown(() => server.close());
  t.equal(base, `http://localhost:${port}/tunnel`);
  const url = server.openStep('pub');
  t.match(url, new RegExp(`^http://localhost:${port}/tunnel/step/pub/cap_`));
  const body = '{"b":2}';
  const headers = signWebhook({ method: 'POST', url, body }, { key, profile });
  t.equal(await post(url, body, headers), 200);
  const cap = server.captures('pub')[0]!;
  t.ok(cap.verification.ok, JSON.stringify(cap.verification));
  t.equal(cap.url, url);
});

t.test('waitFor gives up at its deadline', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const server = new GradingServer({ profile, keys: resolverOver([publishedJwk(key, profile)]) });
  await server.start();
  t.teardown(() => server.close());
  server.openStep('quiet');
  t.same(await server.waitFor('quiet', (c) => c.length > 0, 200), []);
  t.same(await server.waitFor('never-opened', () => false, 10), []);
});
