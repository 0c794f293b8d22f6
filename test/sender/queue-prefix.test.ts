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
