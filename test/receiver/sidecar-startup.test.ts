/**
 * `svc receiver` start-up as a buyer meets it (issue 22): with DATABASE_URL unset it runs
 * an embedded PostgreSQL of its own (its data directory in the start-up line) at once, never
 * waiting for a seller's `svc start` nor naming it; `--forward stdout` prints each verified
 * event as a JSON line; a forward target where nothing listens is warned about at start-up
 * and named in each 503 publication_failed body.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { runningEmbeddedUrl } from '../../shared/infra/embedded-postgres.js';
import { publishedJwk } from '../../shared/signing/keys.js';
import { DATABASE_URL, testDatabase } from '../helpers/db.js';
import { envelope, makeSender, profile, signed } from './support/fixtures.js';
import { post } from './support/server.js';

// initdb of the sidecar's own cluster on a shared machine: bounded, but generously.
t.setTimeout(240_000);

const { schema } = testDatabase(t, 'rstart');
const dir = await mkdtemp(join(tmpdir(), 'rstart-'));
// As root the embedded server runs as the postgres user, which enters a 755 directory.
await chmod(dir, 0o755);
t.teardown(() => rm(dir, { recursive: true, force: true }));

function run(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, ['bin/svc.js', 'receiver', ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  t.teardown(() => void child.kill('SIGKILL'));
  return { child, exited, out: () => out, err: () => err };
}

async function listening(p: ReturnType<typeof run>, ms: number): Promise<string | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const m = /receiver listening on (\S+)/.exec(p.out());
    if (m || Date.now() > deadline || p.child.exitCode !== null) return m?.[1];
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A loopback port where nothing listens (bound, then released). */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const seller = await makeSender('seller-start');
const trust = join(dir, 'trust.json');
await writeFile(
  trust,
  JSON.stringify({
    senders: [{ id: 'seller-start', jwks: { keys: [publishedJwk(seller.key, profile)] } }],
  }),
);

t.test('DATABASE_URL unset: its own embedded PostgreSQL; --forward stdout', async (t) => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_DATA_DIR: join(dir, 'buyer-data'),
    LOG_LEVEL: 'info',
  };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS;
  const p = run(['--listen', '127.0.0.1:0', '--trust', trust, '--forward', 'stdout'], env);
  const base = await listening(p, 180_000);
  t.ok(base, `started: ${p.err()}`);
  if (!base) return;
  const store = join(dir, 'buyer-data', 'receiver', 'postgres');
  t.match(
    p.out(),
    `receiver database: embedded PostgreSQL, data in ${store} (DATABASE_URL unset)`,
    'the start-up line names its data directory',
  );
  t.notMatch(p.out() + p.err(), /service_wait|svc start/, 'never waits for, nor names, a seller');

  const url = `${base}/hooks/seller-start`;
  const s = signed(url, JSON.stringify(envelope({ task_id: 'stdout-1' })), seller);
  const res = await post(url, s.body, s.headers);
  t.equal(res.status, 200);
  const line = p
    .out()
    .split('\n')
    .find((l) => l.startsWith('{"webhook":'));
  t.ok(line, 'the event is a JSON line on stdout');
  t.match(JSON.parse(line!), {
    webhook: { sender: 'seller-start', task_id: 'stdout-1', stale: false, format: 'mcp' },
  });
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0, 'stops');
  t.equal(
    await runningEmbeddedUrl(join(dir, 'buyer-data', 'receiver')),
    null,
    'its PostgreSQL too',
  );
});

t.test('a forward target where nothing listens: warned at start, named in the 503', async (t) => {
  const port = await closedPort();
  const target = `http://127.0.0.1:${port}/events`;
  const env = { ...process.env, DATABASE_URL, SVC_RECEIVER_SCHEMA: schema, LOG_LEVEL: 'info' };
  const p = run(['--listen', '127.0.0.1:0', '--trust', trust, '--forward', target], env);
  const base = await listening(p, 90_000);
  t.ok(base, `started: ${p.err()}`);
  if (!base) return;
  const warning = p
    .out()
    .split('\n')
    .find((l) => l.includes('"forward_target_unreachable"'));
  t.ok(warning, 'a start-up warning');
  t.match(JSON.parse(warning!), { level: 40, target, msg: /--forward stdout/ });

  const url = `${base}/hooks/seller-start`;
  const s = signed(url, JSON.stringify(envelope({ task_id: 'refused-1' })), seller);
  const res = await post(url, s.body, s.headers);
  t.equal(res.status, 503);
  const body = res.json as { error: { code: string; message: string } };
  t.equal(body.error.code, 'publication_failed');
  t.match(body.error.message, `forward to ${target} failed: `, 'the body names the target');
  t.match(body.error.message, /ECONNREFUSED/);
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
});

t.test('a malformed --forward names stdout as the alternative, exit 2', async (t) => {
  const p = run(['--trust', trust, '--forward', 'stdou'], { ...process.env, DATABASE_URL });
  t.equal(await p.exited, 2);
  t.match(p.err(), /--forward: forward target "stdou" is not a URL \(or --forward stdout\)/);
});
