/**
 * The embedded PostgreSQL of `svc start`: created on the first run in its own directory,
 * reused (same port) on the next, found by other processes while it runs, and stopped.
 */
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import t from 'tap';
import {
  EMBEDDED_DATABASE,
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
