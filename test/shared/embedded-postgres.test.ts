/**
 * The embedded PostgreSQL of `svc start`: created on the first run in its own directory,
 * reused (same port) on the next, found by other processes while it runs, and stopped. As
 * root from a mode-700 directory (a clone in /root or `mktemp -d`), with a data directory
 * that does not exist yet: created, its cluster placed where the postgres user can reach
 * it, said in the log.
 */
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { Writable } from 'node:stream';
import { dirname, join } from 'node:path';
import pg from 'pg';
import t from 'tap';
import {
  EMBEDDED_DATABASE,
  RELOCATED_ROOT,
  embeddedPaths,
  runningEmbeddedUrl,
  startEmbeddedPostgres,
} from '../../shared/infra/embedded-postgres.js';
import { createLogger } from '../../shared/infra/logger.js';

t.setTimeout(300_000);

async function query(url: string, sql: string): Promise<unknown[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

t.test('first run, warm run, adoption, stop', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'embedded-pg-'));
  await chmod(dir, 0o755);
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  const logger = createLogger({ level: 'silent' });
  t.equal(await runningEmbeddedUrl(dataDir), null, 'nothing runs yet');

  const first = await startEmbeddedPostgres(dataDir, logger);
  t.ok(first.created, 'the cluster was created');
  t.match(
    first.url,
    new RegExp(`^postgres://svc:[^@]+@127\\.0\\.0\\.1:${first.port}/${EMBEDDED_DATABASE}$`),
  );
  t.match(await query(first.url, 'SELECT current_database() AS db'), [{ db: 'svc' }]);
  t.equal((await stat(embeddedPaths(dataDir).auth)).mode & 0o777, 0o600, 'password owner-only');
  t.equal(await runningEmbeddedUrl(dataDir), first.url, 'other processes find it');

  // A second start while it runs adopts it (a previous process killed without shutdown).
  const adopted = await startEmbeddedPostgres(dataDir, logger);
  t.equal(adopted.url, first.url);
  t.notOk(adopted.created);
  await adopted.stop();
  t.equal(await runningEmbeddedUrl(dataDir), null, 'stopped');
  await first.stop();

  const warm = await startEmbeddedPostgres(dataDir, logger);
  t.teardown(() => warm.stop());
  t.notOk(warm.created, 'warm: reused');
  t.equal(warm.port, first.port, 'the same port when it is free');
  t.match(await query(warm.url, 'SELECT 1 AS one'), [{ one: 1 }]);
  const auth = JSON.parse(await readFile(embeddedPaths(dataDir).auth, 'utf8')) as { port: number };
  t.equal(auth.port, warm.port);
});

const asRoot = { skip: userInfo().uid !== 0 ? 'needs root (the tests run as root here)' : false };
t.test('as root, from a mode-700 dir, into a data dir that does not exist', asRoot, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'embedded-pg-private-'));
  await chmod(dir, 0o700);
  const dataDir = join(dir, 'clone', '.data', 'new');
  let log = '';
  const logger = createLogger({
    level: 'info',
    destination: new Writable({
      write(chunk: Buffer, _enc, done) {
        log += chunk.toString();
        done();
      },
    }),
  });
  const pg = await startEmbeddedPostgres(dataDir, logger);
  t.teardown(async () => {
    await pg.stop();
    await rm(dir, { recursive: true, force: true });
    await rm(dirname(pg.dir), { recursive: true, force: true });
  });
  t.ok(pg.created, 'started: the cluster was created');
  t.ok(pg.dir.startsWith(`${RELOCATED_ROOT}/`), `data where postgres can reach it: ${pg.dir}`);
  t.ok((await stat(dataDir)).isDirectory(), 'the data directory was created');
  t.match(await query(pg.url, 'SELECT 1 AS one'), [{ one: 1 }]);
  const line = log.split('\n').find((l) => l.includes('embedded_postgres_relocated'));
  t.ok(line, 'the relocation is logged');
  t.match(JSON.parse(line!), { dir: pg.dir, blocked: dir });
  t.match(JSON.parse(line!).msg, `keeps its data in ${pg.dir}`);
  t.equal(await runningEmbeddedUrl(dataDir), pg.url, 'other commands find it from the data dir');
  await pg.stop();
  const warm = await startEmbeddedPostgres(dataDir, createLogger({ level: 'silent' }));
  t.notOk(warm.created, 'warm: the relocated cluster is reused');
  t.equal(warm.dir, pg.dir);
  await warm.stop();
});
