/**
 * `svc start`'s service in process with DATABASE_URL unset: it runs on the embedded
 * PostgreSQL of its data directory, publishes its deployment (database, Redis, queue
 * prefix, allow-list) for the other commands, refuses a second start on the same data
 * directory, and stops the embedded server with itself.
 */
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startAgentsService } from '../../../agents/server/seller-process.js';
import { loadConfig } from '../../../shared/config.js';
import { commandServices } from '../../../shared/infra/command-services.js';
import { deploymentFile, readLiveDeployment } from '../../../shared/infra/deployment.js';
import { runningEmbeddedUrl } from '../../../shared/infra/embedded-postgres.js';
import { silentLogger } from '../../../shared/infra/logger.js';
import { ServiceUnavailableError } from '../../../shared/infra/services.js';

t.setTimeout(300_000);

t.test(
  'DATABASE_URL unset: the embedded server, the deployment file, one start per data dir',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'embedded-svc-'));
    await chmod(dir, 0o755);
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const dataDir = join(dir, 'data');
    const config = loadConfig({
      SVC_DATA_DIR: dataDir,
      SVC_SENDER_ALLOW_HOSTS: '127.0.0.1',
      LOG_LEVEL: 'silent',
    });
    const ports = { sales: 0, creative: 0, signals: 0 };
    const service = await startAgentsService({ config, logger: silentLogger, ports, oauth: false });
    let stopped = false;
    t.teardown(async () => {
      if (!stopped) await service.stop();
    });
    t.equal(service.embeddedPostgres, join(dataDir, 'postgres'));
    t.match(service.databaseUrl, /^postgres:\/\/svc:[^@]+@127\.0\.0\.1:\d+\/svc$/);
    t.match(service.queuePrefix, /^\{svc:[0-9a-f]{8}\}$/);
    const d = await readLiveDeployment(dataDir);
    t.match(d, {
      pid: process.pid,
      databaseUrl: service.databaseUrl,
      queuePrefix: service.queuePrefix,
      senderAllowHosts: ['127.0.0.1'],
    });
    t.equal((await stat(deploymentFile(dataDir))).mode & 0o777, 0o600);

    // Another command on the same data directory, none of the variables set: the same services.
    const joined = await commandServices(loadConfig({ SVC_DATA_DIR: dataDir }));
    t.equal(joined.databaseUrl, service.databaseUrl);
    t.equal(joined.queuePrefix, service.queuePrefix);
    t.same(joined.allowHosts, ['127.0.0.1']);

    await t.rejects(
      startAgentsService({ config, logger: silentLogger, ports, oauth: false }),
      ServiceUnavailableError,
    );
    await t.rejects(
      startAgentsService({ config, logger: silentLogger, ports, oauth: false }),
      /another svc start \(pid \d+\) runs on the data directory/,
    );

    await service.stop();
    stopped = true;
    t.equal(await runningEmbeddedUrl(dataDir), null, 'the embedded server stopped with it');
    t.equal(await readLiveDeployment(dataDir), null, 'the deployment file is gone');
  },
);
