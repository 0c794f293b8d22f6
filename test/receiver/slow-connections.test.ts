/**
 * Slow and hostile connections against the sidecar, with short configured bounds: a silent
 * connection, a trickled head and a trickled body are each answered 408 and closed,
 * connections past the limit are closed on arrival when every open one has a request under
 * way, and idle ones make room for others (per address, and near the limit). Outcome checks: each socket must end
 * with the right answer before a generous outer bound (no timing is asserted).
 */
import t, { type Test } from 'tap';
import { connect, type Socket } from 'node:net';
import { createServer } from 'node:http';
import { Sidecar, type SidecarOptions } from '../../receiver/sidecar/server.js';
import { checkingIntervalFor, limitServer } from '../../receiver/server-limits.js';
import { testDatabase } from '../helpers/db.js';
import { startApp } from './support/app.js';
import {
  envelope,
  inlineResolver,
  makeSender,
  MemoryReplayStore,
  profile,
  signed,
  trustFor,
  type SenderKeys,
} from './support/fixtures.js';
import { post } from './support/server.js';

const { pool, schema } = testDatabase(t, 'rslow');
const OUTER_MS = 15_000;
const SECRET = 'hmac-secret-0123456789-ABCDEFGHIJKLMNOP';

let seller: SenderKeys;
t.before(async () => {
  seller = await makeSender('seller-a');
});

async function sidecar(t: Test, over: Partial<SidecarOptions> = {}) {
  const app = await startApp(() => 200);
  const s = await Sidecar.start({
    port: 0,
    trust: trustFor([seller], {
      legacy: [
        { path_prefix: '/legacy', sender: 'seller-h', scheme: 'HMAC-SHA256', secrets: [SECRET] },
      ],
    }),
    profile,
    protocolVersion: '3.2',
    target: { forward: app.url },
    pool,
    schema,
    keys: inlineResolver([seller]),
    replay: new MemoryReplayStore(),
    purgeIntervalMs: 0,
    headersTimeoutMs: 1000,
    bodyTimeoutMs: 1000,
    bodyIdleTimeoutMs: 5000,
    ...over,
  });
  t.teardown(async () => {
    await s.close();
    await app.close();
  });
  return { s, port: Number(new URL(s.url).port) };
}

/** A raw socket that records what it got and whether the server closed it (by the outer bound). */
function open(port: number): { sock: Socket; done: Promise<{ got: string; closed: boolean }> } {
  const sock = connect(port, '127.0.0.1');
  let got = '';
  sock.on('data', (d) => (got += d));
  const done = new Promise<{ got: string; closed: boolean }>((resolve) => {
    const outer = setTimeout(() => {
      sock.destroy();
      resolve({ got, closed: false });
    }, OUTER_MS);
    sock.on('error', () => {});
    sock.on('close', () => {
      clearTimeout(outer);
      resolve({ got, closed: true });
    });
  });
  return { sock, done };
}

/** Resolves null after `ms`: "still open" in a race with a socket's end. */
function idleFor(ms: number): Promise<null> {
  return new Promise((r) => setTimeout(() => r(null), ms));
}

/** Writes the pieces one at a time, `gapMs` apart, until the socket closes. */
function trickle(sock: Socket, pieces: string[], gapMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (i >= pieces.length || sock.destroyed) return clearInterval(timer);
    sock.write(pieces[i++] as string);
  }, gapMs);
  sock.on('close', () => clearInterval(timer));
}

t.test('a silent connection is answered 408 and closed', async (t) => {
  const { port } = await sidecar(t);
  const { done } = open(port);
  const r = await done;
  t.ok(r.closed, 'closed by the server');
  t.match(r.got, /^HTTP\/1\.1 408 /);
});

t.test('a trickled head is answered 408 and closed', async (t) => {
  const { port } = await sidecar(t);
  const { sock, done } = open(port);
  const head = 'POST /w HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Pad: ';
  // One byte every 100 ms: the head would take minutes; each byte arrives well inside any
  // idle timer, so only the head bound can end it.
  trickle(sock, [...head, ...'a'.repeat(10_000)], 100);
  const r = await done;
  t.ok(r.closed, 'closed by the server');
  t.match(r.got, /^HTTP\/1\.1 408 /);
});

t.test('a trickled body meets the body deadline: 408 body_timeout, closed', async (t) => {
  const { port } = await sidecar(t);
  const body = JSON.stringify(envelope({ task_id: 'slow-body' }));
  const sig = signed(`http://127.0.0.1:${port}/w`, body, seller);
  const head = Object.entries({ ...sig.headers, 'content-length': String(body.length) })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const { sock, done } = open(port);
  sock.write(`POST /w HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${head}\r\n`);
  trickle(sock, [...body], 50); // far inside the 5 s idle bound, far past the 1 s deadline
  const r = await done;
  t.ok(r.closed, 'closed by the server');
  t.match(r.got, /^HTTP\/1\.1 408 /);
  t.match(r.got, /body_timeout/);
});

/** A legacy HMAC head whose body never comes: a request under way, never shed. */
function stalledHmacHead(port: number, length = 1000): string {
  return (
    `POST /legacy/x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `X-SVC-Signature: sha256=${'0'.repeat(64)}\r\nX-SVC-Timestamp: ${Math.floor(Date.now() / 1000)}\r\n` +
    `Content-Length: ${length}\r\n\r\nx`
  );
}

t.test('connections over the limit, all with requests under way: closed on arrival', async (t) => {
  const { s, port } = await sidecar(t, {
    maxConnections: 3,
    headersTimeoutMs: 30_000,
    bodyTimeoutMs: 30_000,
    bodyIdleTimeoutMs: 30_000,
  });
  // One after another, each head in before the next connects (so none is ever idle).
  const held: Array<ReturnType<typeof open>> = [];
  for (let i = 0; i < 3; i++) {
    const h = open(port);
    await new Promise((r) => h.sock.once('connect', r));
    h.sock.write(stalledHmacHead(port));
    await new Promise((r) => setTimeout(r, 150));
    held.push(h);
  }
  const extra = open(port);
  extra.sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  const r = await extra.done;
  t.ok(r.closed, 'closed');
  t.equal(r.got, '', 'closed without an answer');
  for (const h of held) h.sock.destroy();
  await Promise.all(held.map((h) => h.done));
  await new Promise((r) => setTimeout(r, 100));
  const body = JSON.stringify(envelope({ task_id: 'after-limit' }));
  const sig = signed(s.url + '/w', body, seller);
  t.equal((await post(s.url + '/w', sig.body, sig.headers)).status, 200, 'serving again');
  const metrics = await (await fetch(s.url + '/metrics')).text();
  t.match(metrics, /^receiver_connections_dropped_total [1-9]/m);
  t.match(metrics, /^receiver_body_bytes_in_flight 0$/m);
});

t.test(
  'idle connections at the limit make room: /healthz from another address answered',
  async (t) => {
    const { s, port } = await sidecar(t, { maxConnections: 8, headersTimeoutMs: 30_000 });
    const held = Array.from({ length: 8 }, () => open(port));
    await Promise.all(held.map((h) => new Promise((r) => h.sock.once('connect', r))));
    await new Promise((r) => setTimeout(r, 100)); // let the server account for them
    const probe = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
    let got = '';
    probe.on('data', (d) => (got += d));
    probe.on('error', () => {});
    probe.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await new Promise((r) => {
      const outer = setTimeout(r, OUTER_MS);
      probe.on('close', () => (clearTimeout(outer), r(null)));
    });
    probe.destroy();
    t.match(got, /^HTTP\/1\.1 200 /, 'answered');
    const closed = (
      await Promise.all(held.map((h) => Promise.race([h.done, idleFor(200)])))
    ).filter((r) => r !== null && r.closed);
    t.ok(closed.length >= 1, 'an idle connection was closed to make room');
    for (const h of held) h.sock.destroy();
    const metrics = await (await fetch(s.url + '/metrics')).text();
    t.match(metrics, /^receiver_connections_shed_total\{reason="near_capacity"\} [1-9]/m);
  },
);

t.test('a per-address cap: one address cannot hold more, its newest still gets in', async (t) => {
  const { s, port } = await sidecar(t, {
    maxConnections: 100,
    maxConnectionsPerAddress: 4,
    headersTimeoutMs: 30_000,
  });
  const held = Array.from({ length: 10 }, () => open(port));
  await Promise.all(held.map((h) => new Promise((r) => h.sock.once('connect', r))));
  // Its oldest idle ones are closed as newer ones arrive: 4 at most stay open.
  const ends = await Promise.all(held.map((h) => Promise.race([h.done, idleFor(1000)])));
  t.equal(ends.filter((r) => r !== null && r.closed).length, 6, 'six closed, four kept');
  t.equal(ends.slice(0, 6).filter((r) => r !== null && r.closed).length, 6, 'the oldest ones');
  const r = await fetch(s.url + '/healthz');
  t.equal(r.status, 200, 'a new connection from the same address is answered');
  for (const h of held) h.sock.destroy();
  const metrics = await (await fetch(s.url + '/metrics')).text();
  t.match(metrics, /^receiver_connections_shed_total\{reason="per_address"\} [1-9]/m);
});

t.test('limitServer: for library servers, before listen, checked', async (t) => {
  const server = createServer((_, res) => res.end('ok'));
  t.throws(() => limitServer(server, { maxConnections: 0 }), RangeError);
  t.throws(() => limitServer(server, { maxConnectionsPerAddress: 0 }), RangeError);
  t.throws(() => limitServer(server, { maxConnectionsPerAddress: 1.5 }), RangeError);
  t.throws(
    () => limitServer(server, { headersTimeoutMs: 5000, requestTimeoutMs: 1000 }),
    RangeError,
  );
  limitServer(server, { headersTimeoutMs: 1000 });
  t.equal(server.headersTimeout, 1000);
  t.equal(server.requestTimeout, 31_000);
  t.equal(server.maxConnections, 1024);
  t.equal(checkingIntervalFor(1000, 31_000), 250);
  t.equal(checkingIntervalFor(60_000, 60_000), 1000);
  t.equal(checkingIntervalFor(100, 100), 50);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  t.throws(() => limitServer(server), /before server.listen/);
  const { port } = server.address() as { port: number };
  const r = await open(port).done;
  t.ok(r.closed, 'a silent connection to the library server is closed');
  t.match(r.got, /^HTTP\/1\.1 408 /);
});

t.test('over the wire: bodies past the budget are 503 + Retry-After and closed', async (t) => {
  // 2 MiB in all, so legacy HMAC bodies (read before their sender is known) get 1 MiB.
  const { port } = await sidecar(t, { bodyBudgetBytes: 2 * 1024 * 1024, bodyTimeoutMs: 10_000 });
  const head = (length: number) =>
    `POST /legacy/x HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `X-SVC-Signature: sha256=${'0'.repeat(64)}\r\nX-SVC-Timestamp: ${Math.floor(Date.now() / 1000)}\r\n` +
    `Content-Length: ${length}\r\n\r\n`;
  const first = open(port);
  first.sock.write(head(600_000) + 'x'.repeat(1000)); // then stalls, holding 600,000 bytes
  // Bounded wait until the sidecar holds it.
  for (let i = 0; i < 100; i++) {
    const m = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    if (/^receiver_body_bytes_in_flight 600000$/m.test(m)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const second = open(port);
  second.sock.write(head(600_000));
  const r = await second.done;
  t.ok(r.closed, 'closed by the server');
  t.match(r.got, /^HTTP\/1\.1 503 /);
  t.match(r.got, /retry-after: 1/i);
  t.match(r.got, /receiver_busy/);
  first.sock.destroy();
  await first.done;
});

t.test(
  'limitServer: a library server keeps room for another address under idle connections',
  async (t) => {
    const server = createServer((_, res) => res.end('ok'));
    limitServer(server, { maxConnections: 16, headersTimeoutMs: 30_000 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.teardown(() => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    });
    const { port } = server.address() as { port: number };
    // Twice the cap from one address, none sending a byte.
    const held = Array.from({ length: 32 }, () => open(port));
    await Promise.all(held.map((h) => new Promise((r) => h.sock.once('connect', r))));
    t.teardown(() => held.forEach((h) => h.sock.destroy()));
    for (let i = 0; i < 5; i++) {
      const got = await new Promise<string>((resolve) => {
        let text = '';
        const probe = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
        probe.on('data', (d) => (text += d));
        probe.on('error', () => {});
        probe.on('close', () => resolve(text));
        probe.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      });
      t.match(got, /^HTTP\/1\.1 200 /, `probe ${i + 1} from 127.0.0.2 answered`);
    }
  },
);
