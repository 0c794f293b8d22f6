import t from 'tap';
import { deploymentQueuePrefix } from '../../sender/delivery/queue-prefix.js';
import { testDatabase } from '../helpers/db.js';

t.test('one prefix per database, stable, with a hash tag', async (t) => {
  const a = testDatabase(t, 'qp');
  const b = testDatabase(t, 'qp');
  const p1 = await deploymentQueuePrefix(a.pool, a.schema, 'svc');
  t.match(p1, /^\{svc:[0-9a-f]{8}\}$/);
  t.equal(await deploymentQueuePrefix(a.pool, a.schema, 'svc'), p1, 'stable');
  t.not(await deploymentQueuePrefix(b.pool, b.schema, 'svc'), p1, 'another deployment, another');
  await t.rejects(deploymentQueuePrefix(a.pool, 'Bad-Schema', 'svc'));
});

t.test('processes starting together on a fresh database agree, none fails', async (t) => {
  // Concurrent CREATE TABLE IF NOT EXISTS of one table fails in one of them with a unique
  // violation in pg_type: the identity table is created under the migration lock instead.
  const { pool, schema } = testDatabase(t, 'qpc');
  const prefixes = await Promise.all(
    Array.from({ length: 8 }, () => deploymentQueuePrefix(pool, schema, 'svc')),
  );
  t.equal(new Set(prefixes).size, 1, 'one prefix');
});
