/**
 * The receiver's own public origins (issue 21 item 5), against `svc receiver` as a process
 * over loopback with real keys, and the library's `createReceiver`: a delivery signed for
 * another receiver of the same sender, sent with that receiver's Host, is refused with
 * `webhook_target_uri_malformed` before any other work; absolute-form request targets (RFC
 * 9112 §3.2.2) verify; a malformed origin list stops the start naming its option; unset, the
 * start-up log says what that permits.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createReceiver } from '../../receiver/embed.js';
import { WebhookReceiver } from '../../receiver/pipeline/receiver.js';
import { nodeListener } from '../../receiver/http.js';
import { parsePublicOrigins, PublicOriginError } from '../../receiver/pipeline/public-origins.js';
import { HandlerPublisher } from '../../receiver/publish/handler.js';
import { sidecarOrigins } from '../../receiver/sidecar/origins-flag.js';
import { createPool } from '../../shared/infra/pg.js';
import { publishedJwk } from '../../shared/signing/keys.js';
import { DATABASE_URL, testDatabase } from '../helpers/db.js';
import { startApp } from './support/app.js';
import {
  envelope,
  inlineResolver,
  makeSender,
  MemoryReplayStore,
  profile,
  signed,
  type SenderKeys,
} from './support/fixtures.js';

const { pool, schema } = testDatabase(t, 'rorig');
const dir = mkdtempSync(join(tmpdir(), 'rorig-'));

function run(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['bin/svc.js', 'receiver', ...args], {
    env: { ...process.env, DATABASE_URL, SVC_RECEIVER_SCHEMA: schema, LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, exited, out: () => out, err: () => err };
}

async function listening(p: ReturnType<typeof run>, ms = 90_000): Promise<string | undefined> {
  const deadline = Date.now() + ms;
  const url = () => /listening on (\S+)/.exec(p.out())?.[1];
  while (!url() && Date.now() < deadline && p.child.exitCode === null) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return url();
}

/** Resolves once the process's output matches `re`, or after `ms` (the asserts then say what is missing). */
async function outputMatching(p: ReturnType<typeof run>, re: RegExp, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!re.test(p.out() + p.err()) && Date.now() < deadline && p.child.exitCode === null) {
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Answer {
  status: number;
  wwwAuthenticate: string | undefined;
}

/** A POST over loopback to `port`, naming `host` in the Host header and `target` as sent. */
function deliver(
  port: number,
  host: string,
  target: string,
  s: { headers: Record<string, string>; body: Buffer },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', path: target, headers: { ...s.headers, host } },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            wwwAuthenticate: res.headers['www-authenticate'] as string | undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(s.body);
  });
}

/** The same over a raw socket, for heads node:http would not write (no Host at all). */
function rawDeliver(port: number, head: string, body: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    let got = '';
    sock.on('data', (d) => (got += d));
    sock.on('error', () => {});
    sock.on('close', () => resolve(got));
    // Connection: close in the head: the server ends the connection after its answer.
    sock.write(Buffer.concat([Buffer.from(head), body]));
  });
}

function trustFile(name: string, seller: SenderKeys): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      senders: [{ id: seller.id, jwks: { keys: [publishedJwk(seller.key, profile)] } }],
    }),
  );
  return path;
}

const REFUSED = 'Signature error="webhook_target_uri_malformed"';

t.test('sidecar: deliveries for another receiver are refused, its own accepted', async (t) => {
  const seller = await makeSender('seller-origins');
  const app = await startApp();
  t.teardown(() => app.close());
  const p = run([
    '--listen',
    '127.0.0.1:0',
    '--trust',
    trustFile('trust-a', seller),
    '--forward',
    app.url,
    '--scheme',
    'https',
    '--public-origins',
    'https://Buyer-A.example:443/, https://hooks.buyer-a.example:8443',
  ]);
  t.teardown(() => p.child.kill('SIGKILL'));
  const base = await listening(p);
  t.ok(base, `started (${p.err().slice(0, 300)})`);
  if (!base) return;
  const port = Number(new URL(base).port);

  // The break: a delivery the sender signed for buyer B, replayed here with B's Host.
  const forB = signed('https://buyer-b.example/hooks', JSON.stringify(envelope()), seller);
  const b = await deliver(port, 'buyer-b.example', '/hooks', forB);
  t.equal(b.status, 401, 'signed for another receiver: refused');
  t.equal(b.wwwAuthenticate, REFUSED);

  // Before any other work: no signature at all, a GET, still the origin's answer.
  const unsigned = await deliver(port, 'buyer-b.example', '/hooks', {
    headers: { 'content-type': 'application/json', signature: 'garbage' },
    body: Buffer.from('{}'),
  });
  t.equal(unsigned.wwwAuthenticate, REFUSED, 'checked before the signature is parsed');

  // Its own origins, in any spelling the canonical form equates.
  const forA = signed('https://buyer-a.example/hooks', JSON.stringify(envelope()), seller);
  t.equal((await deliver(port, 'buyer-a.example', '/hooks', forA)).status, 200, 'own origin');
  const forA2 = signed('https://hooks.buyer-a.example:8443/h', JSON.stringify(envelope()), seller);
  t.equal(
    (await deliver(port, 'HOOKS.buyer-a.example:8443', '/h', forA2)).status,
    200,
    'second origin, host case-folded',
  );

  // Absolute-form targets (RFC 9112 §3.2.2): its own verifies, another's is refused, and a
  // Host that disagrees with the target is refused too.
  const abs = signed('https://buyer-a.example/abs', JSON.stringify(envelope()), seller);
  t.equal(
    (await deliver(port, 'buyer-a.example', 'https://BUYER-A.example:443/abs', abs)).status,
    200,
    'absolute-form, canonicalised',
  );
  const absB = signed('https://buyer-b.example/abs', JSON.stringify(envelope()), seller);
  const absRefused = await deliver(port, 'buyer-b.example', 'https://buyer-b.example/abs', absB);
  t.equal(absRefused.wwwAuthenticate, REFUSED, 'absolute-form for another receiver');
  const absA = signed('https://buyer-a.example/abs2', JSON.stringify(envelope()), seller);
  const mixed = await deliver(port, 'buyer-b.example', 'https://buyer-a.example/abs2', absA);
  t.equal(mixed.wwwAuthenticate, REFUSED, 'absolute-form with a Host naming another');
  const twice = await rawDeliver(
    port,
    'POST /hooks HTTP/1.1\r\nHost: buyer-a.example\r\nHost: buyer-a.example\r\n' +
      'Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n',
    Buffer.from('{}'),
  );
  t.match(twice, /^HTTP\/1\.1 40[01] /, 'Host twice: refused, never accepted');
  t.equal(app.hits.length, 3, 'only the three for its own origins reached the app');
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
});

t.test(
  'sidecar without origins: absolute-form verifies; the log says what is allowed',
  async (t) => {
    const seller = await makeSender('seller-abs');
    const app = await startApp();
    t.teardown(() => app.close());
    const p = run(
      ['--listen', '127.0.0.1:0', '--trust', trustFile('trust-abs', seller), '--forward', app.url],
      { LOG_LEVEL: 'info' },
    );
    t.teardown(() => p.child.kill('SIGKILL'));
    const base = await listening(p);
    t.ok(base, `started (${p.err().slice(0, 300)})`);
    if (!base) return;
    const port = Number(new URL(base).port);
    // The log line and the banner reach the pipe in separate chunks: wait for the line.
    await outputMatching(p, /whatever Host/);
    t.match(p.out() + p.err(), /public_origins_unset/, 'the start-up log names the setting');
    t.match(p.out() + p.err(), /whatever Host/, 'and what its absence permits');
    const url = `http://127.0.0.1:${port}/hooks/abs`;
    const s = signed(url, JSON.stringify(envelope()), seller);
    const r = await deliver(port, `127.0.0.1:${port}`, url, s);
    t.equal(r.status, 200, `absolute-form accepted (${r.wwwAuthenticate})`);
    const health = await rawDeliver(
      port,
      `GET http://127.0.0.1:${port}/healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
      Buffer.alloc(0),
    );
    t.match(health, /^HTTP\/1\.1 200 /, '/healthz in absolute-form');
    p.child.kill('SIGTERM');
    t.equal(await p.exited, 0);
  },
);

t.test('a malformed origin list is refused, naming the option', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['', /^--public-origins: "" is not an origin.*empty/],
    ['http://a.example,', /empty value/],
    ['ftp://a.example', /scheme must be http or https/],
    ['http://a.example/path', /path, query or fragment/],
    ['http://a.example?x=1', /path, query or fragment/],
    ['http://a.example#f', /path, query or fragment/],
    ['a.example', /is not an origin/],
    ['http://user@a.example', /userinfo/],
    ['http://a.example:99999', /bad host or port/],
    ['http://a..example', /bad host or port/],
    ['http://[::1', /bad host or port/],
  ];
  for (const [value, message] of cases) {
    t.throws(() => sidecarOrigins(value, {}, undefined), { name: 'Error', message }, value);
  }
  t.throws(() => sidecarOrigins('https://a.example', {}, undefined), {
    message: /--public-origins: https:\/\/a\.example is not http.*--scheme https/,
  });
  t.throws(() => sidecarOrigins('http://a.example', {}, 'https'), {
    message: /is not https, the scheme this sidecar verifies$/,
  });
  t.throws(
    () => sidecarOrigins(undefined, { SVC_RECEIVER_PUBLIC_ORIGINS: 'http://a.example/x' }, 'http'),
    { message: /^SVC_RECEIVER_PUBLIC_ORIGINS: "http:\/\/a\.example\/x"/ },
  );
  t.equal(sidecarOrigins(undefined, {}, undefined), null, 'unset');
  t.same(sidecarOrigins('http://A.example:80, http://b.example:8080', {}, 'http'), [
    'http://a.example',
    'http://b.example:8080',
  ]);

  // And through the command: exit 2, the message on stderr.
  const seller = await makeSender('seller-badorigin');
  const trust = trustFile('trust-bad', seller);
  const [flag, env] = [
    run(['--trust', trust, '--queue', 'q', '--public-origins=ftp://a.example']),
    run(['--trust', trust, '--queue', 'q'], { SVC_RECEIVER_PUBLIC_ORIGINS: 'http://a.example/x' }),
  ];
  t.equal(await flag.exited, 2);
  t.match(flag.err(), /svc receiver: --public-origins: "ftp:\/\/a\.example" is not an origin/);
  t.equal(await env.exited, 2);
  t.match(env.err(), /svc receiver: SVC_RECEIVER_PUBLIC_ORIGINS: "http:\/\/a\.example\/x"/);
});

t.test('library: createReceiver takes the list; malformed lists throw', async (t) => {
  t.throws(() => parsePublicOrigins([], 'publicOrigins'), PublicOriginError);
  t.throws(() => parsePublicOrigins(['https://x.example/p'], 'publicOrigins'), {
    name: 'PublicOriginError',
    message: /^publicOrigins: /,
  });
  t.same(
    [
      ...parsePublicOrigins(
        ['HTTPS://X.Example:443', 'http://[::1]:80/', 'https://bücher.example'],
        'o',
      ),
    ],
    ['https://x.example', 'http://[::1]', 'https://xn--bcher-kva.example'],
  );
  const seller = await makeSender('seller-lib');
  const trust = trustFile('trust-lib', seller);
  await t.rejects(
    createReceiver({
      trust,
      pool,
      schema,
      publisher: new HandlerPublisher(() => {}),
      publicOrigins: ['nope'],
    }),
    PublicOriginError,
  );
  const events: string[] = [];
  const embedded = await createReceiver({
    trust,
    pool,
    schema,
    publisher: new HandlerPublisher((e) => void events.push(e.taskId ?? '')),
    publicOrigins: ['http://buyer-a.example'],
  });
  t.teardown(() => embedded.close());
  const server = createServer(nodeListener(embedded.receiver));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const { port } = server.address() as AddressInfo;
  const forB = signed(
    'http://buyer-b.example/w',
    JSON.stringify(envelope({ task_id: 'b' })),
    seller,
  );
  const b = await deliver(port, 'buyer-b.example', '/w', forB);
  t.equal(b.status, 401);
  t.equal(b.wwwAuthenticate, REFUSED);
  const forA = signed(
    'http://buyer-a.example/w',
    JSON.stringify(envelope({ task_id: 'a' })),
    seller,
  );
  t.equal((await deliver(port, 'buyer-a.example', '/w', forA)).status, 200);
  const absA = signed(
    'http://buyer-a.example/abs',
    JSON.stringify(envelope({ task_id: 'c' })),
    seller,
  );
  t.equal((await deliver(port, 'buyer-a.example', 'http://buyer-a.example/abs', absA)).status, 200);
  t.same(events, ['a', 'c']);
});

t.test('library: refused before any other work (no key lookup, nonce or database)', async (t) => {
  const seller = await makeSender('seller-first');
  // A database nobody answers at: any round trip would turn the answer into a 503.
  const dead = createPool({ connectionString: 'postgres://postgres@127.0.0.1:1/none' });
  t.teardown(() => dead.end());
  const resolver = inlineResolver([seller]);
  let lookups = 0;
  const replay = new MemoryReplayStore();
  const receiver = new WebhookReceiver({
    pool: dead,
    profile,
    protocolVersion: '3.2',
    keys: { resolve: (kid, o) => (lookups++, resolver.resolve(kid, o)) },
    replay,
    publisher: new HandlerPublisher(() => {}),
    publicOrigins: ['https://buyer-a.example'],
  });
  const url = 'https://buyer-b.example/w';
  const s = signed(url, JSON.stringify(envelope()), seller);
  const r = await receiver.handle({
    method: 'POST',
    url,
    headers: { ...s.headers, host: 'buyer-b.example' },
    body: s.body,
  });
  t.equal(r.status, 401);
  t.equal(r.headers['www-authenticate'], REFUSED);
  t.equal(lookups, 0, 'no key lookup');
  t.equal(replay.seenSet.size, 0, 'no nonce burnt');
  const get = await receiver.handle({
    method: 'GET',
    url,
    headers: { host: 'buyer-b.example' },
    body: Buffer.alloc(0),
  });
  t.equal(get.headers['www-authenticate'], REFUSED, 'before the method gate too');
  const malformedHost = await receiver.handle({
    method: 'POST',
    url: 'https://buyer-a.example/w',
    headers: { ...s.headers, host: 'buyer-a.example:notaport' },
    body: s.body,
  });
  t.equal(malformedHost.headers['www-authenticate'], REFUSED, 'a malformed Host: same code');
  t.throws(
    () =>
      new WebhookReceiver({
        pool: dead,
        profile,
        protocolVersion: '3.2',
        keys: resolver,
        replay,
        publisher: new HandlerPublisher(() => {}),
        publicOrigins: ['https://a.example/path'],
      }),
    { name: 'PublicOriginError', message: /^publicOrigins: / },
  );
});
