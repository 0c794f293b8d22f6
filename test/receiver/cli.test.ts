/** `svc receiver` as a process: flags, a real delivery through it, durable replay, SIGTERM. */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publishedJwk } from '../../shared/signing/keys.js';
import { DATABASE_URL, testDatabase } from '../helpers/db.js';
import { startApp } from './support/app.js';
import { envelope, makeSender, profile, signed } from './support/fixtures.js';
import { post } from './support/server.js';

const { schema } = testDatabase(t, 'rcli');
const dir = mkdtempSync(join(tmpdir(), 'rcli-'));

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

/** Waits (bounded) until the process printed `count` "listening on" lines or exited. */
async function listening(p: ReturnType<typeof run>, count = 1, ms = 90_000): Promise<string[]> {
  const urls = () => [...p.out().matchAll(/listening on (\S+)/g)].map((m) => m[1] as string);
  const deadline = Date.now() + ms;
  while (urls().length < count && Date.now() < deadline && p.child.exitCode === null) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return urls();
}

t.test('usage errors exit 2 with a message', async (t) => {
  const trust = join(dir, 'empty.json');
  writeFileSync(trust, JSON.stringify({ senders: [] }));
  const badTrust = join(dir, 'bad.json');
  writeFileSync(badTrust, '{"senders":[],"senders":[]}');
  // Each case is its own process, independent of the others: run them side by side (one
  // after another they are a dozen process start-ups end to end).
  const cases: Array<[string, string[], RegExp | null, Record<string, string>?]> = [
    [
      'both',
      ['--trust', trust, '--forward', 'http://127.0.0.1:1/x', '--queue', 'q'],
      /exactly one of --forward/,
    ],
    [
      'three',
      ['--trust', trust, '--queue', 'q', '--publish', 'nats://127.0.0.1:4222'],
      /exactly one of --forward <app-url>, --queue <name> or --publish/,
    ],
    [
      'kafka',
      ['--trust', trust, '--publish', 'kafka://127.0.0.1:9092'],
      /--publish: unknown scheme kafka: .*use nats:\/\//,
    ],
    [
      'subject',
      ['--trust', trust, '--publish', 'nats://127.0.0.1?subject=a.>'],
      /--publish: subject "a.>" is not a valid NATS subject/,
    ],
    ['remote', ['--trust', trust, '--forward', 'http://example.com/x'], /loopback/],
    ['no trust', ['--queue', 'q'], null, { SVC_RECEIVER_TRUST: '' }],
    ['duplicate key', ['--trust', badTrust, '--queue', 'q'], /duplicate key/],
    ...(
      [
        ['--max-connections', '0'],
        ['--body-budget-mib', 'lots'],
        ['--headers-timeout-ms', '99'],
        ['--body-timeout-ms', '600001'],
        ['--body-idle-timeout-ms', '-5'],
      ] as const
    ).map(
      ([flag, value]) =>
        [
          flag,
          ['--trust', trust, '--queue', 'q', `${flag}=${value}`],
          new RegExp(`${flag}: an integer`),
        ] as [string, string[], RegExp],
    ),
  ];
  const runs = cases.map(([, args, , env]) => run(args, env));
  for (const [i, [name, , message]] of cases.entries()) {
    const p = runs[i]!;
    t.equal(await p.exited, 2, name);
    if (message) t.match(p.err(), message, name);
  }
});

t.test('an unreachable database is named with what to do, exit 1', async (t) => {
  const trust = join(dir, 'empty2.json');
  writeFileSync(trust, JSON.stringify({ senders: [] }));
  const p = run(['--trust', trust, '--queue', 'q', '--wait', '0'], {
    DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
  });
  t.equal(await p.exited, 1);
  t.match(
    p.err(),
    /svc receiver: PostgreSQL at .*127\.0\.0\.1:1.* does not answer .*Start PostgreSQL at 127\.0\.0\.1:1/,
  );
});

t.test('a real delivery through the process, durable replay, graceful SIGTERM', async (t) => {
  const seller = await makeSender('seller-cli');
  const trust = join(dir, 'trust.json');
  writeFileSync(
    trust,
    JSON.stringify({
      senders: [{ id: 'seller-cli', jwks: { keys: [publishedJwk(seller.key, profile)] } }],
    }),
  );
  const app = await startApp();
  t.teardown(() => app.close());
  const p = run(
    [
      '--listen',
      '127.0.0.1:0',
      '--trust',
      trust,
      '--forward',
      app.url,
      '--brand',
      'svc',
      '--synchronous-commit',
      '--max-connections',
      '64',
      '--body-budget-mib',
      '8',
      '--headers-timeout-ms',
      '5000',
      '--body-timeout-ms',
      '5000',
      '--body-idle-timeout-ms',
      '2000',
    ],
    { LOG_LEVEL: 'info' },
  );
  t.teardown(() => p.child.kill('SIGKILL'));
  const base = (await listening(p, 1, 90_000))[0];
  t.ok(base, `started (${p.err().slice(0, 300)})`);
  if (!base) return;
  // The start-up block: the webhook URL to register, where events go; its lines together,
  // after the JSON log lines of the start-up.
  t.match(
    p.out(),
    `receiver listening on ${base} (webhook URL: ${base}/webhooks; every path but /healthz and /metrics is verified)\n  events forwarded to ${app.url}\n`,
  );

  // Its port taken: a second sidecar says which setting moves it, exit 1.
  const clash = run(['--listen', new URL(base).host, '--trust', trust, '--forward', app.url]);
  t.equal(await clash.exited, 1);
  t.match(
    clash.err(),
    `svc receiver: ${new URL(base).host} is already in use: choose another with --listen <host:port> (SVC_RECEIVER_LISTEN)`,
  );
  const url = `${base}/hooks/seller-cli`;
  const body = JSON.stringify(envelope({ task_id: 'cli-1' }));
  const s = signed(url, body, seller);
  const res = await post(url, s.body, s.headers);
  t.equal(res.status, 200);
  t.equal(app.hits.length, 1);
  t.equal(app.hits[0]?.headers['x-svc-sender'], 'seller-cli');
  const replay = await post(url, s.body, s.headers);
  t.equal(replay.status, 401);
  t.equal(replay.headers['www-authenticate'], 'Signature error="webhook_signature_replayed"');
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
});

t.test('a revocation list that cannot be loaded fails closed: revocation_stale', async (t) => {
  const seller = await makeSender('seller-rev');
  const trust = join(dir, 'trust-rev.json');
  writeFileSync(
    trust,
    JSON.stringify({
      senders: [
        {
          id: 'seller-rev',
          jwks: { keys: [publishedJwk(seller.key, profile)] },
          revocation_url: 'https://127.0.0.1:1/revocations.json',
        },
      ],
    }),
  );
  const app = await startApp();
  t.teardown(() => app.close());
  const p = run(['--listen', '127.0.0.1:0', '--trust', trust, '--forward', app.url]);
  t.teardown(() => p.child.kill('SIGKILL'));
  const base = (await listening(p))[0];
  t.ok(base, `started (${p.err().slice(0, 300)})`);
  if (!base) return;
  const url = `${base}/hooks/rev`;
  const body = JSON.stringify(envelope({ task_id: 'rev-1' }));
  const s = signed(url, body, seller);
  const res = await post(url, s.body, s.headers);
  t.equal(res.status, 401);
  t.equal(res.headers['www-authenticate'], 'Signature error="webhook_signature_revocation_stale"');
  t.equal(app.hits.length, 0);
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
});

t.test('--workers 2: processes share the port and stop together', async (t) => {
  const seller = await makeSender('seller-workers');
  const trust = join(dir, 'trust-workers.json');
  writeFileSync(
    trust,
    JSON.stringify({
      senders: [{ id: 'seller-workers', jwks: { keys: [publishedJwk(seller.key, profile)] } }],
    }),
  );
  const app = await startApp();
  t.teardown(() => app.close());
  const bad = run(['--trust', trust, '--forward', app.url, '--workers', 'x']);
  t.equal(await bad.exited, 2);
  const p = run([
    '--listen',
    '127.0.0.1:0',
    '--trust',
    trust,
    '--forward',
    app.url,
    '--workers',
    '2',
  ]);
  t.teardown(() => p.child.kill('SIGKILL'));
  const urls = await listening(p, 2);
  t.equal(urls.length, 2, `two workers (${p.err().slice(0, 300)})`);
  t.equal(urls[0], urls[1], 'one shared address');
  if (urls.length < 1) return;
  const res = await Promise.all(
    Array.from({ length: 20 }, (_, i) => {
      const url = `${urls[0]}/hooks/w`;
      const body = JSON.stringify(envelope({ task_id: `w-${i}` }));
      const s = signed(url, body, seller);
      return post(url, s.body, s.headers);
    }),
  );
  t.ok(res.every((r) => r.status === 200));
  t.equal(app.hits.length, 20);
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
});
