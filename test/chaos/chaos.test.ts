/**
 * The bounded chaos runs (issue 13), each on a private PostgreSQL cluster and Redis, every
 * fault once: (1) two `svc worker` processes deliver to a receiver that always answers 200
 * while a worker is SIGKILLed, Redis flushed and restarted, PostgreSQL restarted fast and
 * immediate; (2) they deliver through `svc receiver` to an app failing 10 % of forwards
 * while the sidecar is SIGKILLed. Nothing may be lost, no body changed, and the sidecar
 * never answers 500. The long version with figures: `npm run bench -- chaos`.
 */
import t, { type Test } from 'tap';
import { formatResult, runChaos } from '../../bench/chaos/run.js';

t.setTimeout(300_000);

/** Item 7 of issue 13: once nothing is in flight, every attempt made has its record. */
function recordsComplete(t: Test, result: Awaited<ReturnType<typeof runChaos>>): void {
  t.ok(result.records.settled, 'a moment with nothing in flight was found');
  t.equal(
    result.records.recorded,
    result.records.attempts,
    'every attempt recorded, with its outcome',
  );
  t.equal(result.records.hitsWithoutRecord, 0, 'every request received is a recorded attempt');
}

t.test('sender faults: nothing lost, no body changed', async (t) => {
  const result = await runChaos({
    events: 200,
    enqueueMs: 18_000,
    faults: [
      'kill-worker',
      'flush-redis',
      'restart-pg-fast',
      'restart-redis',
      'restart-pg-immediate',
    ],
    drainMs: 60_000,
  });
  t.comment(formatResult('chaos (bounded, direct)', result));
  t.equal(result.enqueued, 200, 'every event was enqueued (retried across the outages)');
  t.equal(result.lost, 0, 'nothing lost');
  t.equal(result.changedBodies, 0, 'no body changed');
  t.equal(result.faults.length, 5, 'every fault happened');
  recordsComplete(t, result);
});

t.test('sidecar killed, app failing 10 %: nothing lost, no body changed, no 500', async (t) => {
  const result = await runChaos({
    events: 100,
    enqueueMs: 8000,
    sidecar: true,
    faults: ['kill-sidecar'],
    // The drain ends once everything arrived; on a loaded machine the sidecar restarts
    // slowly and the events retried meanwhile back off (30 s by the sixth attempt).
    drainMs: 120_000,
  });
  t.comment(formatResult('chaos (bounded, sidecar)', result));
  t.equal(result.lost, 0, 'nothing lost');
  t.equal(result.changedBodies, 0, 'no body changed');
  t.equal(result.sidecar500s, 0, 'the sidecar never answered 500');
  t.ok((result.answers['503'] ?? 0) > 0, 'the app failures reached the sender as 503');
  recordsComplete(t, result);
});
