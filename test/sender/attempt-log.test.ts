/**
 * One info log line per delivery attempt outcome: the target's origin (never its path),
 * the status, the attempt, the next retry; never the body, headers or credentials.
 */
import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../../shared/infra/logger.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import { senderHarness, startReceiver } from './harness.js';

t.test('a retried then delivered webhook logs one line per attempt', async (t) => {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _e, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  const logger = createLogger({ level: 'info', destination });
  const h = await senderHarness(t);
  const rx = await startReceiver((_r, i) => ({ status: i < 1 ? 503 : 200 }));
  t.teardown(() => rx.close());
  h.startWorker({ logger });
  const key = newIdempotencyKey();
  const [id] = await h.outbox.enqueue([
    {
      target: { url: `${rx.url}/secret-path-token`, auth: { mode: 'rfc9421' }, channel: 'task' },
      payload: { idempotency_key: key, task_id: 'task_1', status: 'completed', note: 'BODY-MARK' },
      idempotencyKey: key,
      notificationType: 'completed',
      mediaBuyId: 'mb_1',
      principalId: 'p_1',
    },
  ]);
  t.equal(await h.waitForState(id!), 'delivered');
  const attempts = lines.filter((l) => l.event === 'webhook_attempt');
  t.match(attempts, [
    {
      level: 30,
      origin: new URL(rx.url).origin,
      attempt: 1,
      status: 503,
      state: 'pending',
      reason: 'http_503',
      next_attempt_at: /^\d{4}-/,
    },
    { level: 30, attempt: 2, status: 200, state: 'delivered' },
  ]);
  t.equal(attempts.length, 2);
  const text = JSON.stringify(lines);
  t.notMatch(text, /BODY-MARK|secret-path-token|signature/i, 'no body, path or signature');
});
