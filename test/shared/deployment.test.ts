/**
 * The local deployment file (shared/infra/deployment.ts): written into an SVC_DATA_DIR that
 * does not exist yet (svc start with DATABASE_URL set creates nothing else there first),
 * owner-only, read back while its process lives, removed on stop.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import {
  deploymentFile,
  readLiveDeployment,
  removeDeployment,
  writeDeployment,
} from '../../shared/infra/deployment.js';

t.test('into a data directory that does not exist yet', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'deployment-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'not', 'yet');
  const d = {
    pid: process.pid,
    databaseUrl: 'postgres://u:p@127.0.0.1:5432/svc',
    redisUrl: 'redis://127.0.0.1:6379',
    queuePrefix: '{svc}',
    senderAllowHosts: ['127.0.0.1'],
    keysDir: join(dataDir, 'keys'),
  };
  await writeDeployment(dataDir, d);
  t.equal((await stat(deploymentFile(dataDir))).mode & 0o777, 0o600, 'owner-only');
  t.same(await readLiveDeployment(dataDir), d);
  await removeDeployment(dataDir);
  t.equal(await readLiveDeployment(dataDir), null, 'removed');
});
