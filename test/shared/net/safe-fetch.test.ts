import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import {
  SafeFetchError,
  createGuardedDispatcher,
  safeFetch,
  toSafeFetchError,
} from '../../../shared/net/safe-fetch.js';
import type { LookupFunction, SafeFetchOptions } from '../../../shared/net/safe-fetch.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

interface TestServer {
  port: number;
  connections: number;
  requests: { url: string; host: string | undefined }[];
}

/** A real HTTP server on a loopback address, port 0, closed at the end of the test. */
async function httpServer(t: Tap, handler: Handler, host = '127.0.0.1'): Promise<TestServer> {
  const state: TestServer = { port: 0, connections: 0, requests: [] };
  const server = http.createServer((req, res) => {
    state.requests.push({ url: req.url ?? '', host: req.headers.host });
    handler(req, res);
  });
  server.on('connection', () => state.connections++);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  state.port = (server.address() as AddressInfo).port;
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return state;
}

/** A raw TCP server (for TLS tests): every socket handed to `onSocket`. */
async function rawServer(
  t: Tap,
  server: net.Server,
): Promise<{ port: number; sockets: net.Socket[] }> {
  const sockets: net.Socket[] = [];
  server.on('connection', (s: net.Socket) => sockets.push(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, sockets };
}

type Tap = { teardown(fn: () => unknown): void };

async function reasonOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    if (!(err instanceof SafeFetchError)) return `other error: ${String(err)}`;
    // The message carries the reason only: no address, port or network detail.
    if (err.message !== `fetch failed: ${err.code}`) return 'message leaks';
    return err.code;
  }
}

const small = { maxBytes: 1024, connectTimeoutMs: 2000, totalTimeoutMs: 5000 };
const loopback: SafeFetchOptions = { ...small, allowLoopback: true };

t.test('plain http to loopback with allowLoopback: status, headers, body', async (t) => {
  const s = await httpServer(t, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end('{"keys":[]}');
  });
  const r = await safeFetch(`http://127.0.0.1:${s.port}/.well-known/jwks.json`, loopback);
  t.equal(r.status, 200);
  t.equal(r.headers['content-type'], 'application/json');
  t.equal(r.body.toString(), '{"keys":[]}');
  t.same(s.requests, [{ url: '/.well-known/jwks.json', host: `127.0.0.1:${s.port}` }]);
});

t.test('the request target is the canonical @target-uri, byte for byte', async (t) => {
  const s = await httpServer(t, (_req, res) => res.end('ok'));
  await safeFetch(`http://127.0.0.1:${s.port}/a/./b/../c//d%7e%2f?b=2&a=1+%zz#frag`, loopback);
  t.equal(s.requests[0]!.url, '/a/c//d~%2F?b=2&a=1+%zz');
});

t.test('method, headers and body are sent', async (t) => {
  let got = '';
  const s = await httpServer(t, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      got = `${req.method} ${req.headers['x-test']} ${body}`;
      res.end();
    });
  });
  const r = await safeFetch(`http://127.0.0.1:${s.port}/`, {
    ...loopback,
    method: 'POST',
    headers: { 'x-test': 'yes' },
    body: 'payload',
  });
  t.equal(r.status, 200);
  t.equal(got, 'POST yes payload');
});

t.test('redirects are returned, never followed', async (t) => {
  const s = await httpServer(t, (req, res) => {
    if (req.url === '/start') {
      res.statusCode = 302;
      res.setHeader('location', '/elsewhere');
      return res.end();
    }
    res.end('followed');
  });
  const r = await safeFetch(`http://127.0.0.1:${s.port}/start`, loopback);
  t.equal(r.status, 302);
  t.equal(r.headers.location, '/elsewhere');
  t.same(
    s.requests.map((q) => q.url),
    ['/start'],
  );
});

t.test('body cap: declared length and streamed body', async (t) => {
  const big = Buffer.alloc(256 * 1024, 0x61);
  const s = await httpServer(t, (req, res) => {
    if (req.url === '/declared') {
      res.setHeader('content-length', big.length);
      return res.end(big);
    }
    // Chunked, no length: the cap must hold while streaming.
    let sent = 0;
    const push = () => {
      while (sent < 64) {
        sent++;
        if (!res.write(Buffer.alloc(16 * 1024, 0x62))) return res.once('drain', push);
      }
      res.end();
    };
    push();
  });
  const opts = { ...loopback, maxBytes: 64 * 1024 };
  t.equal(await reasonOf(safeFetch(`http://127.0.0.1:${s.port}/declared`, opts)), 'too_large');
  t.equal(await reasonOf(safeFetch(`http://127.0.0.1:${s.port}/chunked`, opts)), 'too_large');
  // Exactly at the cap is fine.
  const exact = await safeFetch(`http://127.0.0.1:${s.port}/declared`, {
    ...loopback,
    maxBytes: big.length,
  });
  t.equal(exact.body.length, big.length);
});

t.test('total timeout: headers that never come, and a body that never ends', async (t) => {
  const s = await httpServer(t, (req, res) => {
    if (req.url === '/slow-body') res.write('partial');
    // Never ends; the test's teardown closes the connections.
  });
  const opts = { ...loopback, totalTimeoutMs: 200 };
  t.equal(await reasonOf(safeFetch(`http://127.0.0.1:${s.port}/slow`, opts)), 'timeout');
  t.equal(await reasonOf(safeFetch(`http://127.0.0.1:${s.port}/slow-body`, opts)), 'timeout');
});

t.test('reserved targets are refused before any connection', async (t) => {
  const s = await httpServer(t, (_req, res) => res.end('should not be reached'));
  for (const url of [
    `https://127.0.0.1:${s.port}/`,
    `https://localhost:${s.port}/`,
    `https://[::ffff:127.0.0.1]:${s.port}/`,
  ]) {
    t.equal(await reasonOf(safeFetch(url, small)), 'address_not_allowed', url);
  }
  // Private, link-local and metadata literals: refused before connecting, so no traffic.
  for (const host of ['10.0.0.1', '169.254.169.254', '192.168.1.1', '[fd00:ec2::254]', '[::]']) {
    const url = `https://${host}/`;
    t.equal(await reasonOf(safeFetch(url, loopback)), 'address_not_allowed', url);
  }
  t.equal(s.connections, 0, 'the server saw no connection');
});

t.test('plain http is refused unless loopback is allowed or the host is listed', async (t) => {
  const s = await httpServer(t, (_req, res) => res.end('x'));
  t.equal(await reasonOf(safeFetch(`http://127.0.0.1:${s.port}/`, small)), 'scheme_not_allowed');
  t.equal(
    await reasonOf(safeFetch('http://example.com/', { ...small, allowLoopback: true })),
    'scheme_not_allowed',
  );
  t.equal(s.connections, 0);
});

t.test('bad URLs', async (t) => {
  for (const [url, reason] of [
    ['not a url', 'invalid_url'],
    ['https://user@/p', 'invalid_url'],
    ['https://[::1/p', 'invalid_url'],
    ['https://exa mple.com/', 'invalid_url'],
    ['ftp://example.com/', 'scheme_not_allowed'],
    ['file:///etc/passwd', 'scheme_not_allowed'],
  ] as const) {
    t.equal(await reasonOf(safeFetch(url, small)), reason, url);
  }
  await t.rejects(safeFetch('https://example.com/', { maxBytes: -1 }), TypeError);
});

t.test('IPv6 loopback', async (t) => {
  let s: TestServer;
  try {
    s = await httpServer(t, (_req, res) => res.end('v6'), '::1');
  } catch {
    t.pass('no IPv6 loopback on this machine: nothing to test');
    return;
  }
  const r = await safeFetch(`http://[::1]:${s.port}/`, loopback);
  t.equal(r.body.toString(), 'v6');
  t.equal(s.requests[0]!.host, `[::1]:${s.port}`);
  t.equal(await reasonOf(safeFetch(`https://[::1]:${s.port}/`, small)), 'address_not_allowed');
});

t.test('allowHosts lets a listed private target through, and only it', async (t) => {
  const s = await httpServer(t, (_req, res) => res.end('listed'));
  const r = await safeFetch(`http://127.0.0.1:${s.port}/`, { ...small, allowHosts: ['127.0.0.1'] });
  t.equal(r.body.toString(), 'listed');
  const byName = await safeFetch(`http://localhost:${s.port}/`, {
    ...small,
    allowHosts: ['LOCALHOST'],
  });
  t.equal(byName.body.toString(), 'listed', 'names match case-insensitively');
  t.equal(
    await reasonOf(safeFetch(`https://localhost:${s.port}/`, { ...small, allowHosts: ['other'] })),
    'address_not_allowed',
  );
});

t.test('pinning: the connection goes to the checked address, resolved once', async (t) => {
  const s = await httpServer(t, (_req, res) => res.end('pinned'));
  const calls: string[] = [];
  const lookup: LookupFunction = async (host) => {
    calls.push(host);
    return [{ address: '127.0.0.1', family: 4 }];
  };
  const r = await safeFetch(`http://pinned.invalid:${s.port}/x`, {
    ...small,
    lookup,
    allowHosts: ['pinned.invalid'],
  });
  t.equal(r.body.toString(), 'pinned');
  t.same(calls, ['pinned.invalid'], 'one resolution');
  t.equal(s.requests[0]!.host, `pinned.invalid:${s.port}`, 'Host keeps the name');

  // A name whose answers mix public and reserved addresses is refused outright.
  const mixed: LookupFunction = async () => [
    { address: '93.184.216.34', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ];
  t.equal(
    await reasonOf(safeFetch(`https://rebind.invalid:${s.port}/`, { ...small, lookup: mixed })),
    'address_not_allowed',
  );
  t.equal(s.connections, 1, 'only the pinned request connected');
});

t.test('TLS: SNI is the original host name while the socket goes to the checked IP', async (t) => {
  const names: string[] = [];
  const server = tls.createServer({
    SNICallback: (name, cb) => {
      names.push(name);
      cb(new Error('no certificate in this test'), null as unknown as tls.SecureContext);
    },
  });
  const { port } = await rawServer(t, server);
  const lookup: LookupFunction = async () => [{ address: '127.0.0.1', family: 4 }];
  const reason = await reasonOf(
    safeFetch(`https://sni-check.invalid:${port}/`, {
      ...small,
      lookup,
      allowHosts: ['sni-check.invalid'],
    }),
  );
  t.equal(reason, 'network_error', 'the handshake fails (no certificate), as a network error');
  t.same(names, ['sni-check.invalid']);
});

t.test('connect timeout: DNS that never answers, TLS handshake that never completes', async (t) => {
  const never: LookupFunction = () => new Promise(() => undefined);
  t.equal(
    await reasonOf(
      safeFetch('https://hang.invalid/', { ...small, lookup: never, connectTimeoutMs: 100 }),
    ),
    'connect_timeout',
  );
  const { port } = await rawServer(t, net.createServer()); // accepts TCP, never speaks TLS
  t.equal(
    await reasonOf(safeFetch(`https://localhost:${port}/`, { ...loopback, connectTimeoutMs: 150 })),
    'connect_timeout',
  );
});

t.test('dns failures and network errors', async (t) => {
  const fails: LookupFunction = async () => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND secret-internal-name'), {
      code: 'ENOTFOUND',
    });
  };
  const err = await safeFetch('https://nowhere.invalid/', { ...small, lookup: fails }).catch(
    (e: unknown) => e,
  );
  t.type(err, SafeFetchError);
  t.equal((err as SafeFetchError).code, 'dns_failed');
  t.notMatch((err as Error).message, /secret-internal-name|ENOTFOUND/, 'no detail in message');
  const empty: LookupFunction = async () => [];
  t.equal(
    await reasonOf(safeFetch('https://empty.invalid/', { ...small, lookup: empty })),
    'dns_failed',
  );
  // A closed port on loopback: refused connection.
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const closedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  t.equal(await reasonOf(safeFetch(`http://127.0.0.1:${closedPort}/`, loopback)), 'network_error');
  // A server that drops the connection mid-response.
  const s = await httpServer(t, (req) => req.socket.destroy());
  t.equal(await reasonOf(safeFetch(`http://127.0.0.1:${s.port}/`, loopback)), 'network_error');
});

t.test('dual-stack: a refused first address falls through to the next', async (t) => {
  const s = await httpServer(t, (_req, res) => res.end('second'));
  const lookup: LookupFunction = async () => [
    { address: '127.0.0.2', family: 4 }, // the server listens on 127.0.0.1 only
    { address: '127.0.0.1', family: 4 },
  ];
  const r = await safeFetch(`http://dual.invalid:${s.port}/`, {
    ...loopback,
    lookup,
    allowHosts: ['dual.invalid'],
  });
  t.equal(r.body.toString(), 'second');
});

t.test('guarded dispatcher: keep-alive reuse, one resolution per connection', async (t) => {
  const s = await httpServer(t, (_req, res) => res.end('ka'));
  let lookups = 0;
  const lookup: LookupFunction = async () => {
    lookups++;
    return [{ address: '127.0.0.1', family: 4 }];
  };
  const dispatcher = createGuardedDispatcher({
    allowHosts: ['keepalive.invalid'],
    lookup,
    connectTimeoutMs: 2000,
    keepAliveTimeout: 10_000,
    connections: 1,
  });
  t.teardown(() => dispatcher.destroy());
  for (let i = 0; i < 3; i++) {
    const r = await safeFetch(`http://keepalive.invalid:${s.port}/${i}`, {
      ...small,
      allowHosts: ['keepalive.invalid'],
      dispatcher,
    });
    t.equal(r.body.toString(), 'ka');
  }
  t.equal(s.connections, 1, 'one connection reused');
  t.equal(lookups, 1, 'resolved once for that connection');

  // Used directly through undici, a refusal surfaces as a SafeFetchError too.
  const strict = createGuardedDispatcher({ connectTimeoutMs: 2000 });
  t.teardown(() => strict.destroy());
  const err = await request(`https://127.0.0.1:${s.port}/`, { dispatcher: strict }).catch(
    (e: unknown) => e,
  );
  t.equal(toSafeFetchError(err).code, 'address_not_allowed');
  const listed = createGuardedDispatcher({ allowHosts: ['localhost'] });
  t.teardown(() => listed.destroy());
  const plain = await request(`http://localhost:${s.port}/`, { dispatcher: listed });
  t.equal(await plain.body.text(), 'ka');
  const refusedHttp = await request(`http://127.0.0.1:${s.port}/`, { dispatcher: strict }).catch(
    (e: unknown) => e,
  );
  t.equal(toSafeFetchError(refusedHttp).code, 'address_not_allowed');
});

t.test(
  'toSafeFetchError maps unknown errors to network_error and a timeout flag to timeout',
  async (t) => {
    t.equal(toSafeFetchError(new Error('x')).code, 'network_error');
    t.equal(toSafeFetchError('str').code, 'network_error');
    t.equal(toSafeFetchError(new Error('x'), { timedOut: true }).code, 'timeout');
    const wrapped = new Error('outer', { cause: new SafeFetchError('dns_failed') });
    t.equal(toSafeFetchError(wrapped).code, 'dns_failed');
  },
);
