// A seller whose agent already exists (for instance on the protocol's reference SDK) adds
// signed, retried webhooks: its own task handler calls NotificationCore, and a delivery
// worker in the same process signs and sends them. TypeScript; the same works in JavaScript.
// An ES module (top-level await): in a fresh `npm init` app, set "type": "module" and add tsx.
//   npm pkg set type=module && npm install svc-webhooks tsx
//   npx svc keys generate --out .data/keys      (then publish `npx svc keys jwks .data/keys`)
//   WEBHOOK_URL=https://buyer.example/webhooks npx tsx seller-task-handler.ts
import {
  brandProfile,
  createPool,
  createRedis,
  DeliveryQueue,
  DeliveryWorker,
  KeySet,
  migrateSender,
  NotificationCore,
  Outbox,
  type AttemptReport,
} from 'svc-webhooks/sender';

const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const schema = process.env.SENDER_SCHEMA ?? 'sender';
const prefix = process.env.QUEUE_PREFIX ?? '{svc}';
// Receivers must be https on public addresses; list hosts exempt from that (local tests only).
const allowHosts = (process.env.SVC_SENDER_ALLOW_HOSTS ?? '').split(',').filter(Boolean);
const profile = brandProfile('svc');

// Set-up, once per process: the outbox tables, the dispatch queue, the core.
const pool = createPool({ connectionString: databaseUrl });
await migrateSender(pool, schema);
const redis = createRedis(redisUrl);
const queue = new DeliveryQueue({ connection: redis, prefix });
const notifications = new NotificationCore({
  pool,
  queue,
  schema,
  profile,
  protocolVersion: '3.2',
  allowHosts,
});

// A delivery worker. Run it here, or in other processes (`npx svc worker`) on the same
// PostgreSQL and Redis: every event is in the outbox first, so none is lost either way.
const keys = await KeySet.fromDirectory(process.env.SVC_KEYS_DIR ?? '.data/keys');
let delivered: (report: AttemptReport) => void = () => {};
const settled = new Promise<AttemptReport>((resolve) => (delivered = resolve));
const workerRedis = createRedis(redisUrl);
const worker = new DeliveryWorker({
  outbox: new Outbox({ pool, queue, schema }),
  signer: { key: keys.signingKey(), profile },
  connection: workerRedis,
  prefix,
  allowHosts,
  onAttempt: (report) => {
    console.log(`attempt ${report.attempt}: ${report.state}`);
    if (report.state !== 'pending') delivered(report);
  },
});

interface CreateMediaBuyRequest {
  push_notification_config?: { url: string; operation_id: string };
  context?: Record<string, unknown>;
}

// Your task handler. At request time, refuse a bad webhook registration with the
// protocol's INVALID_REQUEST (RegistrationError); when the task's status changes, tell the core.
async function createMediaBuy(request: CreateMediaBuyRequest): Promise<{ task_id: string }> {
  notifications.validateRegistration({ pushNotificationConfig: request.push_notification_config });
  const taskId = `task_${Date.now()}`;
  // ... the buy is submitted; later, when it is approved:
  await notifications.taskStatusChanged({
    taskId,
    taskType: 'create_media_buy',
    initialStatus: 'submitted',
    status: 'completed',
    pushNotificationConfig: request.push_notification_config,
    context: request.context ?? {},
    result: { media_buy_id: 'mb_1001' },
  });
  return { task_id: taskId };
}

const url = process.env.WEBHOOK_URL ?? 'https://buyer.example/webhooks';
const { task_id } = await createMediaBuy({
  push_notification_config: { url, operation_id: 'op_1001' },
  context: { campaign: 'spring' },
});
const report = await settled;
console.log(`${task_id}: webhook ${report.state}`);

await worker.close();
await queue.close();
redis.disconnect();
workerRedis.disconnect();
await pool.end();
process.exitCode = report.state === 'delivered' ? 0 : 1;
