import t from 'tap';
import {
  checkPostgres,
  ensureRedis,
  pingRedis,
  redactUrl,
  resolveDatabaseUrl,
  ServiceUnavailableError,
} from '../../shared/infra/services.js';
import { DATABASE_URL, REDIS_URL } from '../helpers/db.js';

t.test('a reachable PostgreSQL is accepted; an unreachable one says what to do', async (t) => {
  t.equal(await resolveDatabaseUrl(DATABASE_URL), DATABASE_URL);
  const err = await checkPostgres('postgres://nobody:secret@127.0.0.1:1/none', 500).catch((e) => e);
  t.type(err, ServiceUnavailableError);
  t.match(err.message, /set DATABASE_URL/);
  t.notMatch(err.message, /secret/, 'password never printed');
});

t.test('a reachable Redis is used as it is', async (t) => {
  t.ok(await pingRedis(REDIS_URL));
  const handle = await ensureRedis(REDIS_URL, '.data-test');
  t.equal(handle.url, REDIS_URL);
  t.equal(handle.child, null);
});

t.test('an unreachable Redis is replaced by a private redis-server', async (t) => {
  const handle = await ensureRedis('redis://127.0.0.1:1', `.tmp/redis-${process.pid}`);
  t.teardown(() => handle.stop());
  t.not(handle.url, 'redis://127.0.0.1:1');
  t.ok(handle.child, 'started one');
  t.ok(await pingRedis(handle.url), 'and it answers');
});

t.test('URLs are redacted', async (t) => {
  t.equal(redactUrl('postgres://u:pw@h:5432/db'), 'postgres://u:***@h:5432/db');
  t.equal(redactUrl('::'), '(unparseable URL)');
});
