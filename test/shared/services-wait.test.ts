/**
 * Waiting for the backing services: back-off with a log line per attempt up to the limit,
 * messages that name the service, its address and what to do, and the local deployment
 * (embedded server, deployment file) that commands other than `svc start` join.
 */
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { loadConfig } from '../../shared/config.js';
import { commandServices } from '../../shared/infra/command-services.js';
import {
  deploymentFile,
  readLiveDeployment,
  removeDeployment,
  writeDeployment,
} from '../../shared/infra/deployment.js';
import { createLogger } from '../../shared/infra/logger.js';
import {
  ensureRedis,
  resolveDatabaseUrl,
  ServiceUnavailableError,
  waitForPostgres,
  waitForRedis,
} from '../../shared/infra/services.js';
import { DATABASE_URL, REDIS_URL } from '../helpers/db.js';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { lines, logger: createLogger({ level: 'info', destination }) };
}

t.test('an unreachable PostgreSQL is waited for with back-off, then named', async (t) => {
  const { lines, logger } = capture();
  const err = await waitForPostgres('postgres://u:secret@127.0.0.1:1/db', {
    waitSeconds: 1,
    logger,
  }).catch((e: unknown) => e);
  t.type(err, ServiceUnavailableError);
  t.match(
    (err as Error).message,
    /PostgreSQL at .*127\.0\.0\.1:1.* does not answer .*Start PostgreSQL at 127\.0\.0\.1:1/,
  );
  t.notMatch((err as Error).message, /secret/);
  const waits = lines.filter((l) => l.event === 'service_wait');
  t.ok(waits.length >= 2, 'a log line per attempt');
  t.match(waits[0], {
    service: 'PostgreSQL',
    address: '127.0.0.1:1',
    attempt: 1,
    retry_in_ms: 250,
  });
  t.match(waits[1], { attempt: 2, retry_in_ms: 500 });
});

t.test('a missing database or bad credentials fail at once, with the right advice', async (t) => {
  const missing = new URL(DATABASE_URL);
  missing.pathname = '/no_such_database_xyz';
  const { lines, logger } = capture();
  const err = await waitForPostgres(missing.toString(), { waitSeconds: 30, logger }).catch(
    (e: unknown) => e,
  );
  t.match(
    (err as Error).message,
    /database "no_such_database_xyz" does not exist\. Create it \(createdb/,
  );
  t.equal(lines.length, 0, 'not waited for: waiting cannot help');
  const badUser = new URL(DATABASE_URL);
  badUser.username = 'no_such_role_xyz';
  const auth = await waitForPostgres(badUser.toString()).catch((e: unknown) => e);
  t.type(auth, ServiceUnavailableError);
});

t.test('DATABASE_URL unset and no svc start running: say to run it or set the URL', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-nodb-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const err = await resolveDatabaseUrl(undefined, { dataDir: dir }).catch((e: unknown) => e);
  t.match(
    (err as Error).message,
    /DATABASE_URL is unset and no embedded PostgreSQL runs in .*postgres: run `svc start`/,
  );
});

t.test('Redis: waited for, then named with how to get one', async (t) => {
  await waitForRedis(REDIS_URL);
  const { lines, logger } = capture();
  const err = await waitForRedis('redis://127.0.0.1:1', { waitSeconds: 0.5, logger }).catch(
    (e: unknown) => e,
  );
  t.match(
    (err as Error).message,
    /Redis at redis:\/\/127\.0\.0\.1:1 does not answer .*apt-get install redis-server.*REDIS_URL/,
  );
  t.ok(lines.some((l) => l.event === 'service_wait' && l.service === 'Redis'));
});

t.test('a Redis that comes up while waited for is used: logged waits, then ready', async (t) => {
  const { createServer } = await import('node:net');
  const { spawn } = await import('node:child_process');
  const port = await new Promise<number>((r) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => r(p));
    });
  });
  const dir = await mkdtemp(join(tmpdir(), 'svc-late-redis-'));
  let child: ReturnType<typeof spawn> | null = null;
  t.teardown(async () => {
    child?.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  });
  const timer = setTimeout(() => {
    child = spawn(
      'redis-server',
      ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--dir', dir],
      {
        stdio: 'ignore',
      },
    );
  }, 700);
  t.teardown(() => clearTimeout(timer));
  const { lines, logger } = capture();
  await waitForRedis(`redis://127.0.0.1:${port}`, { waitSeconds: 20, logger });
  t.ok(lines.filter((l) => l.event === 'service_wait').length >= 1, 'waited, and said so');
  t.match(lines.at(-1), { event: 'service_ready', service: 'Redis' });
});

t.test('the private redis-server is logged with the reason it was chosen', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-redis-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { lines, logger } = capture();
  const handle = await ensureRedis('redis://127.0.0.1:1', dir, logger);
  t.teardown(() => handle.stop());
  t.match(handle.reason, /Redis at redis:\/\/127\.0\.0\.1:1 does not answer/);
  t.match(
    lines.find((l) => l.event === 'private_redis'),
    { url: handle.url, reason: handle.reason },
  );
  const path = process.env.PATH;
  process.env.PATH = '/nonexistent';
  t.teardown(() => (process.env.PATH = path));
  const missing = await ensureRedis('redis://127.0.0.1:1', dir).catch((e: unknown) => e);
  process.env.PATH = path;
  t.match(
    (missing as Error).message,
    /redis-server is not installed .*apt-get install redis-server/,
  );
});

t.test(
  "other commands take the running svc start's settings for what they leave unset",
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-deploy-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    t.equal(await readLiveDeployment(dir), null, 'none yet');
    await writeDeployment(dir, {
      pid: process.pid,
      databaseUrl: DATABASE_URL,
      redisUrl: REDIS_URL,
      queuePrefix: '{svc:feedbeef}',
      senderAllowHosts: ['127.0.0.1'],
      keysDir: join(dir, 'keys'),
    });
    t.equal((await stat(deploymentFile(dir))).mode & 0o777, 0o600);
    const s = await commandServices(
      loadConfig({ SVC_DATA_DIR: dir, SVC_SENDER_ALLOW_HOSTS: 'localhost' }),
      {
        redis: 'check',
      },
    );
    t.equal(s.databaseUrl, DATABASE_URL);
    t.equal(s.redisUrl, REDIS_URL);
    t.equal(s.queuePrefix, '{svc:feedbeef}');
    t.same(s.allowHosts.sort(), ['127.0.0.1', 'localhost']);
    const own = await commandServices(
      loadConfig({ SVC_DATA_DIR: dir, SVC_QUEUE_PREFIX: '{mine}', REDIS_URL }),
    );
    t.equal(own.queuePrefix, '{mine}', 'a variable wins');
    // A file whose process is gone is ignored.
    await writeFile(deploymentFile(dir), JSON.stringify({ pid: 2 ** 22 + 7 }));
    t.equal(await readLiveDeployment(dir), null);
    await writeFile(deploymentFile(dir), '{nope');
    t.equal(await readLiveDeployment(dir), null);
    await removeDeployment(dir);
    await removeDeployment(dir);
  },
);
