/**
 * The operator's decision from another process's code path (`svc approve`): a pending buy
 * approved (its task webhook delivered and verified) or rejected; unknown ids refused.
 */
import { demoBuy } from './demo-buy.js';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { AgentClient } from '../../../agents/client/agent-client.js';
import { operatorAction } from '../../../agents/server/operator.js';
import { loadConfig } from '../../../shared/config.js';
import { createPool } from '../../../shared/infra/pg.js';
import { DATABASE_URL, REDIS_URL } from '../../helpers/db.js';
import { buyerReceiver, startService } from './support.js';

const BIN = join(import.meta.dirname, '../../../bin/svc.js');

t.test('approve and reject pending buys', async (t) => {
  const { service, agentsSchema, senderSchema, prefix } = await startService(t);
  const rx = await buyerReceiver(t, `${service.urls.sales}/.well-known/jwks.json`);
  const key = service.credentials.find(
    (c) => c.agent === 'sales' && c.principal_id === 'demo-buyer',
  )!.api_key;
  const c = new AgentClient({ agentUrl: service.urls.sales, apiKey: key });
  t.teardown(() => c.close());
  const create = (op: string) =>
    c.call(
      'create_media_buy',
      demoBuy(op, service.core.clock.nowMs() + 7 * 86400_000, {
        push_notification_config: { url: `${rx.url}/t`, operation_id: op },
      }),
    );
  const config = loadConfig({
    DATABASE_URL,
    REDIS_URL,
    LOG_LEVEL: 'silent',
    SVC_SENDER_ALLOW_HOSTS: '127.0.0.1',
  });
  const opts = { agentsSchema, senderSchema, queuePrefix: prefix };

  const a = await create('op-approve');
  t.equal(a.status, 'submitted', JSON.stringify(a.body));
  await rx.waitFor((e) => e.some((x) => x.operationId === 'op-approve' && x.status === 'working'));
  // The submitted envelope has no media_buy_id: the operator names the create task.
  t.notOk('media_buy_id' in a.body);
  const approved = await operatorAction(config, a.taskId!, undefined, opts);
  t.match(approved, { media_buy_id: /^mb_/ });
  await rx.waitFor((e) =>
    e.some((x) => x.operationId === 'op-approve' && x.status === 'completed'),
  );

  const r = await create('op-reject');
  await rx.waitFor((e) => e.some((x) => x.operationId === 'op-reject' && x.status === 'working'));
  const refused = await operatorAction(config, r.taskId!, 'no inventory', opts);
  await rx.waitFor((e) =>
    e.some((x) => x.operationId === 'op-reject' && ['rejected', 'failed'].includes(x.status!)),
  );
  const buys = await c.call('get_media_buys', {});
  const rejected = (buys.body.media_buys as Array<{ media_buy_id: string; status: string }>).find(
    (b) => b.media_buy_id === refused.media_buy_id,
  );
  t.equal(rejected?.status, 'rejected');

  // Redis out of reach (svc start on a private redis-server): the row waits in the outbox
  // for the running worker's reconciler.
  const q = await create('op-no-redis');
  await rx.waitFor((e) => e.some((x) => x.operationId === 'op-no-redis' && x.status === 'working'));
  const offline = loadConfig({
    DATABASE_URL,
    REDIS_URL: 'redis://127.0.0.1:1',
    LOG_LEVEL: 'silent',
    SVC_SENDER_ALLOW_HOSTS: '127.0.0.1',
  });
  await operatorAction(offline, q.taskId!, undefined, opts);
  const pool = createPool({ connectionString: DATABASE_URL, max: 1 });
  t.teardown(() => pool.end());
  const { rows } = await pool.query(
    `SELECT state FROM ${senderSchema}.outbox WHERE task_id = $1 AND notification_type = 'completed'`,
    [q.taskId],
  );
  t.equal(rows.length, 1, 'the completed webhook is in the outbox');

  await t.rejects(operatorAction(config, 'mb_unknown', undefined, opts), {
    code: 'MEDIA_BUY_NOT_FOUND',
  });
});

t.test('svc approve: an unreachable database ends with a message and exit 1', async (t) => {
  const out = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, 'approve', 'mb_x'], {
      env: {
        ...process.env,
        DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  t.equal(out.code, 1);
  t.match(out.stderr, /PostgreSQL .* does not answer/);
});
