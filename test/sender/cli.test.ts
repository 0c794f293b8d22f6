import t from 'tap';
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import {
  runSend,
  EXIT_DELIVERED,
  EXIT_STOPPED,
  EXIT_TIMEOUT,
  EXIT_USAGE,
} from '../../sender/cli/send.js';
import { DeliveryQueue } from '../../sender/delivery/queue.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import { Outbox } from '../../sender/outbox/outbox.js';
import { migrateSender } from '../../sender/schema.js';
import { createRedis } from '../../shared/infra/redis.js';
import { DATABASE_URL, REDIS_URL, testDatabase, uniqueName } from '../helpers/db.js';
import { startReceiver } from './harness.js';

// Several tsx child processes (svc worker, svc send) on a shared machine.
t.setTimeout(300_000);

const run = promisify(execFile);
const SVC = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));

function capture() {
  const s = new PassThrough();
  let text = '';
  s.on('data', (c) => (text += c));
  return { stream: s, text: () => text };
}

const base = {
  brand: 'svc' as const,
  databaseUrl: DATABASE_URL,
  redisUrl: REDIS_URL,
  backoff: { baseMs: 30, capMs: 60 },
};

t.test('svc send: retries until delivered, prints each attempt, exit 0', async (t) => {
  const rx = await startReceiver((_r, i) => ({ status: i < 2 ? 503 : 200 }));
  t.teardown(() => rx.close());
  const out = capture();
  const err = capture();
  const dir = await mkdtemp(join(tmpdir(), 'svc-send-'));
  const payload = join(dir, 'p.json');
  await writeFile(payload, '{"task_id":"t1","status":"completed","custom":[1,2]}');
  const code = await runSend({
    ...base,
    url: rx.url,
    payloadFile: payload,
    timeoutSeconds: 20,
    out: out.stream,
    err: err.stream,
  });
  t.equal(code, EXIT_DELIVERED);
  t.match(out.text(), /attempt 1 {2}HTTP 503/);
  t.match(out.text(), /attempt 3 {2}HTTP 200 .* delivered/);
  t.match(err.text(), /throwaway key/);
  t.equal(rx.received.length, 3);
  const body = JSON.parse(rx.received[0]!.body.toString());
  t.same(body.custom, [1, 2]);
  t.match(body.idempotency_key, /^whk_/, 'a key is added when the file has none');
  t.ok(rx.received[2]!.body.equals(rx.received[0]!.body));
});

t.test(
  'svc send: 409 and other 4xx stop with exit 1; timeout exits 124; bad input exits 2',
  async (t) => {
    const rx = await startReceiver(() => ({ status: 409 }));
    const rx4 = await startReceiver(() => ({ status: 404 }));
    const slow = await startReceiver(() => ({ status: 500 }));
    t.teardown(() => Promise.all([rx.close(), rx4.close(), slow.close()]));
    const out = capture();
    t.equal(
      await runSend({
        ...base,
        url: rx.url,
        timeoutSeconds: 10,
        out: out.stream,
        err: capture().stream,
      }),
      EXIT_STOPPED,
    );
    t.match(out.text(), /stopped \(http_409_conflict\)/);
    t.equal(
      await runSend({
        ...base,
        url: rx4.url,
        timeoutSeconds: 10,
        out: capture().stream,
        err: capture().stream,
      }),
      EXIT_STOPPED,
    );
    t.equal(
      await runSend({
        ...base,
        url: slow.url,
        timeoutSeconds: 1,
        out: capture().stream,
        err: capture().stream,
      }),
      EXIT_TIMEOUT,
    );
    t.equal(
      await runSend({
        ...base,
        url: 'ftp://x/y',
        timeoutSeconds: 1,
        out: capture().stream,
        err: capture().stream,
      }),
      EXIT_USAGE,
    );
    const dir = await mkdtemp(join(tmpdir(), 'svc-send-'));
    const dup = join(dir, 'dup.json');
    await writeFile(dup, '{"a":1,"a":2}');
    await t.rejects(
      runSend({
        ...base,
        url: rx.url,
        payloadFile: dup,
        timeoutSeconds: 1,
        out: capture().stream,
        err: capture().stream,
      }),
      { name: 'JsonParseError', code: 'duplicate_key' },
    );
  },
);

t.test('svc keys generate / jwks, and svc worker delivers and stops on SIGTERM', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-keys-'));
  const a = await run(process.execPath, [SVC, 'keys', 'generate', '--out', dir]);
  const b = await run(process.execPath, [SVC, 'keys', 'generate', '--alg', 'es256', '--out', dir]);
  t.match(a.stdout, /^ed25519-\S+\t/);
  t.match(b.stdout, /^es256-\S+\t/);
  const jwks = JSON.parse((await run(process.execPath, [SVC, 'keys', 'jwks', dir])).stdout);
  t.equal(jwks.keys.length, 2);
  for (const k of jwks.keys) {
    t.equal(k.svc_use, 'request-signing');
    t.notOk('d' in k, 'no private part published');
  }
  await t.rejects(run(process.execPath, [SVC, 'keys', 'generate', '--alg', 'rsa', '--out', dir]));
  await t.rejects(run(process.execPath, [SVC, 'keys', 'jwks', join(dir, 'missing')]));

  const { pool, schema } = testDatabase(t, 'cli');
  await migrateSender(pool, schema);
  const prefix = `{${uniqueName('clq')}}`;
  const redis = createRedis(REDIS_URL);
  const queue = new DeliveryQueue({ connection: redis, prefix });
  t.teardown(async () => {
    await queue.obliterate().catch(() => {});
    await queue.close();
    redis.disconnect();
  });
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const child = spawn(
    process.execPath,
    [
      SVC,
      'worker',
      '--keys',
      dir,
      '--schema',
      schema,
      '--prefix',
      prefix,
      '--concurrency',
      '4',
      '--durable-claims',
      '0',
    ],
    {
      env: {
        ...process.env,
        DATABASE_URL,
        REDIS_URL,
        SVC_SENDER_ALLOW_HOSTS: '127.0.0.1',
        LOG_LEVEL: 'info',
        // The flag wins over its variable.
        SVC_WORKER_DURABLE_CLAIMS: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let log = '';
  child.stdout!.on('data', (c) => (log += c));
  t.teardown(() => void child.kill('SIGKILL'));
  await new Promise<void>((resolve) => {
    const check = () =>
      log.includes('delivery worker started') ? resolve() : setTimeout(check, 50);
    check();
  });
  t.match(log, /"durableClaims":false/, '--durable-claims 0 reaches the outbox');
  const outbox = new Outbox({ pool, queue, schema });
  const key = newIdempotencyKey();
  await outbox.enqueue([
    {
      target: { url: rx.url, auth: { mode: 'rfc9421' }, channel: 'task' },
      payload: { idempotency_key: key, task_id: 'w', status: 'completed' },
      idempotencyKey: key,
      notificationType: 'completed',
    },
  ]);
  await rx.waitFor(1);
  t.match(
    String(rx.received[0]!.headers['signature-input']),
    /keyid="ed25519-/,
    'newest Ed25519 key signs',
  );
  const exit = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  t.equal(await exit, 0, 'graceful exit on SIGTERM');
  t.match(log, /delivery worker stopped/);
  t.notMatch(log, new RegExp(key), 'the full key never appears in logs');
});

t.test('svc worker --durable-claims: in --help with its variable, validated', async (t) => {
  const help = (await run(process.execPath, [SVC, 'worker', '--help'])).stdout;
  t.match(help, /--durable-claims <0\|1>/);
  t.match(
    help.replace(/\s+/g, ' '),
    /WAL flush.*one of 0, 1 \(env SVC_WORKER_DURABLE_CLAIMS, default 1\)/,
  );
  const bad = await run(process.execPath, [SVC, 'worker', '--durable-claims', 'off']).catch(
    (e: { code: number; stderr: string }) => e,
  );
  t.not((bad as { code?: number }).code ?? 0, 0, 'a bad flag value fails');
  t.match((bad as { stderr: string }).stderr, /--durable-claims.*Allowed choices are 0, 1/);
  const badEnv = await run(process.execPath, [SVC, 'worker'], {
    env: { ...process.env, SVC_WORKER_DURABLE_CLAIMS: 'off' },
  }).catch((e: { code: number; stderr: string }) => e);
  t.not((badEnv as { code?: number }).code ?? 0, 0, 'a bad variable fails');
  t.match((badEnv as { stderr: string }).stderr, /SVC_WORKER_DURABLE_CLAIMS/);
});

t.test(
  'svc send with DATABASE_URL unset and no svc start: the examples default, not a failure',
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const dir = await mkdtemp(join(tmpdir(), 'svc-send-nodb-'));
    const env: NodeJS.ProcessEnv = { ...process.env, SVC_DATA_DIR: join(dir, 'data'), REDIS_URL };
    delete env.DATABASE_URL;
    delete env.SVC_KEYS_DIR;
    const r = await run(process.execPath, [SVC, 'send', rx.url, '--timeout', '30'], { env }).catch(
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    t.equal((r as { code?: number }).code ?? 0, 0, `${r.stdout}${r.stderr}`);
    t.match(
      r.stderr,
      /DATABASE_URL is unset and no svc start runs on .*: using postgres:\/\/postgres@127\.0\.0\.1:5432\/test \(the examples' default\)/,
    );
    t.match(r.stdout, /attempt 1 {2}HTTP 200 .* delivered/);
    t.equal(rx.received.length, 1);
  },
);
