/**
 * Our own sender graded end to end: NotificationCore -> PostgreSQL outbox -> BullMQ ->
 * delivery worker (sign, POST, classify, retry) against the kit's grading receiver, with
 * the sender's key published through brand.json.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { gradeSender } from '../../../conformance/grade-sender/grade-sender.js';
import type {
  SenderDriver,
  StepRequest,
  TriggerOutcome,
} from '../../../conformance/grade-sender/driver.js';
import { NotificationCore } from '../../../sender/core/notification-core.js';
import { publishedJwk } from '../../../shared/signing/keys.js';
import { senderHarness } from '../../sender/harness.js';
import { profile } from '../support/receivers.js';
import { publishKeys } from '../support/senders.js';

/** Plays the task runtime: each step is a task whose status changes once. */
class NotificationCoreDriver implements SenderDriver {
  readonly name = 'notification-core';
  constructor(private readonly core: NotificationCore) {}
  async prepare(): Promise<string | null> {
    return null;
  }
  async trigger(step: StepRequest): Promise<TriggerOutcome> {
    const ids = await this.core.taskStatusChanged({
      taskId: `task_${randomBytes(8).toString('hex')}`,
      taskType: 'create_media_buy',
      status: 'completed',
      initialStatus: step.initial === 'terminal' ? 'completed' : 'submitted',
      pushNotificationConfig: { url: step.url, operation_id: step.operationId },
      context: step.context,
      result: { media_buy_id: `mb_${randomBytes(4).toString('hex')}`, packages: [] },
    });
    return { triggered: true, detail: `${ids.length} event(s) enqueued` };
  }
}

t.test('our sender scores every check', async (t) => {
  const h = await senderHarness(t);
  h.startWorker();
  const pub = await publishKeys(t, [publishedJwk(h.key, profile)]);
  const core = new NotificationCore({
    pool: h.pool,
    queue: h.queue,
    profile,
    protocolVersion: '3.2',
    sink: h.outbox,
    allowHosts: ['127.0.0.1'],
  });
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new NotificationCoreDriver(core),
    keys: { agentUrl: pub.agentUrl, allowLoopback: true },
    stepTimeoutMs: 20_000,
    quietMs: 2000,
  });
  const notPassed = report.checks.filter((c) => c.status !== 'passed');
  t.same(
    notPassed.map((c) => `${c.id}: ${c.detail}`),
    [],
    'every check passed, none skipped',
  );
  const retry = report.checks.find((c) => c.id === 'retry.deliveries')!;
  t.same(
    retry.exchanges.map((x) => x.sent?.status),
    [503, 503, 503, 200],
  );
  t.equal(report.checks.find((c) => c.id === 'retry.body-stable')?.detail, 'byte-identical');
});
