/**
 * Issue 21 item 9 against `svc receiver` as a process, defaults only: one address
 * (127.0.0.1) holds 2,000 idle connections (re-opening each one the sidecar closes) and
 * sends hostile requests for 20 s (forged signatures, garbage, stalled heads, huge declared
 * bodies), while another address (127.0.0.2) probes `/healthz`, `/metrics` and sends valid
 * signed deliveries on fresh connections. Every probe must be answered 2xx. At 8faf630 the
 * process cap (1,024) filled with the idle connections and probes were reset.
 * Bounded: the flood stops at its deadline, at most 40 hostile requests in flight, at most
 * 60,000 idle connections and 100,000 hostile requests opened in all; each probe has its own 10 s bound (unanswered = failed).
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publishedJwk } from '../../shared/signing/keys.js';
import { DATABASE_URL, testDatabase } from '../helpers/db.js';
import { startApp } from './support/app.js';
import { envelope, makeSender, profile, signed } from './support/fixtures.js';

const { schema } = testDatabase(t, 'rflood');
const FLOOD_MS = 20_000;
const IDLE = 2_000;
const HOSTILE_IN_FLIGHT = 40;
const MAX_IDLE_OPENED = 60_000;
const MAX_HOSTILE = 100_000;
const OTHER = '127.0.0.2';

t.setTimeout(110_000);

function wait(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** One request on a fresh connection from `from`; its status, or 0 when it failed or hung. */
function probe(
  port: number,
  from: string,
  o: { method: string; path: string; headers?: Record<string, string>; body?: Buffer },
): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        localAddress: from,
        agent: false,
        method: o.method,
        path: o.path,
        headers: o.headers,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.setTimeout(10_000, () => req.destroy());
    req.on('error', () => resolve(0));
    req.end(o.body);
  });
}

t.test('2,000 idle connections and 20 s of hostile requests from one address', async (t) => {
  const seller = await makeSender('seller-flood');
  const dir = mkdtempSync(join(tmpdir(), 'rflood-'));
  const trust = join(dir, 'trust.json');
  writeFileSync(
    trust,
    JSON.stringify({
      senders: [{ id: seller.id, jwks: { keys: [publishedJwk(seller.key, profile)] } }],
    }),
  );
  const forger = await makeSender('seller-flood'); // same id, a key nobody trusts
  const app = await startApp();
  t.teardown(() => app.close());
  const child = spawn(
    process.execPath,
    ['bin/svc.js', 'receiver', '--listen', '127.0.0.1:0', '--trust', trust, '--forward', app.url],
    {
      env: { ...process.env, DATABASE_URL, SVC_RECEIVER_SCHEMA: schema, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  t.teardown(() => void child.kill('SIGKILL'));
  for (let i = 0; i < 600 && !/listening on/.test(out) && child.exitCode === null; i++) {
    await wait(50);
  }
  const base = /listening on (\S+)/.exec(out)?.[1];
  t.ok(base, `started (${out.slice(0, 300)})`);
  if (!base) return;
  const port = Number(new URL(base).port);
  const deadline = Date.now() + FLOOD_MS;
  let opened = 0;
  let hostileSent = 0;
  const sockets = new Set<Socket>();
  t.teardown(() => sockets.forEach((s) => s.destroy()));

  // The attacker's idle connections: opened in batches (the listen backlog is finite), each
  // one the sidecar closes opened again until the deadline.
  const holdOne = (): Promise<void> =>
    new Promise((resolve) => {
      if (Date.now() > deadline || opened >= MAX_IDLE_OPENED) return resolve();
      opened++;
      const s = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' });
      sockets.add(s);
      s.on('error', () => {});
      s.once('connect', () => resolve());
      s.once('close', () => {
        sockets.delete(s);
        resolve();
        if (Date.now() < deadline) setTimeout(() => void holdOne(), 1_000);
      });
    });
  for (let i = 0; i < IDLE; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, IDLE - i) }, holdOne));
  }

  // Hostile requests, bounded in flight.
  const hostile = async (n: number): Promise<void> => {
    while (Date.now() < deadline && hostileSent < MAX_HOSTILE) {
      hostileSent++;
      const kind = n++ % 4;
      await new Promise<void>((resolve) => {
        const s = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' });
        const bound = setTimeout(() => s.destroy(), 2_000);
        s.on('error', () => {});
        s.once('close', () => (clearTimeout(bound), resolve()));
        s.on('data', () => s.destroy());
        s.once('connect', () => {
          if (kind === 0) {
            const body = JSON.stringify(envelope());
            const f = signed(`${base}/hooks`, body, forger);
            const head = Object.entries({ ...f.headers, 'content-length': String(body.length) })
              .map(([k, v]) => `${k}: ${v}\r\n`)
              .join('');
            s.write(`POST /hooks HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${head}\r\n${body}`);
          } else if (kind === 1) {
            s.write('\x16\x03\x01\x02\x00garbage\r\n\r\n');
          } else if (kind === 2) {
            s.write('POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: '); // never finished
          } else {
            s.write(
              `POST /hooks HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
                'Content-Length: 1048576\r\n\r\n{',
            );
          }
        });
      });
    }
  };
  const flood = Promise.all(Array.from({ length: HOSTILE_IN_FLIGHT }, (_, i) => hostile(i)));

  // The other address, one probe after another (250 ms apart) until the deadline.
  const results: Array<{ what: string; status: number }> = [];
  let n = 0;
  while (Date.now() < deadline) {
    const what = ['healthz', 'delivery', 'metrics'][n++ % 3] as string;
    let status: number;
    if (what === 'delivery') {
      const url = `${base}/hooks/flood`;
      const s = signed(url, JSON.stringify(envelope({ task_id: `flood-${n}` })), seller);
      status = await probe(port, OTHER, {
        method: 'POST',
        path: '/hooks/flood',
        headers: s.headers,
        body: s.body,
      });
    } else status = await probe(port, OTHER, { method: 'GET', path: `/${what}` });
    results.push({ what, status });
    await wait(250);
  }
  await flood;
  const failed = results.filter((r) => r.status < 200 || r.status > 299);
  t.ok(results.length >= 10, `${results.length} probes`);
  t.same(failed, [], 'every probe from the other address answered 2xx');
  t.ok(opened >= IDLE, `${opened} idle connections opened`);
  t.ok(hostileSent > 0, `${hostileSent} hostile requests`);
  t.comment(JSON.stringify(results));
  const metrics = await probe(port, OTHER, { method: 'GET', path: '/metrics' });
  t.equal(metrics, 200);
  const deliveries = results.filter((r) => r.what === 'delivery').length;
  t.equal(app.hits.length, deliveries, 'every valid delivery reached the app once');
  child.kill('SIGTERM');
});
