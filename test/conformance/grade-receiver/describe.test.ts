/**
 * How a check states a receiver's answer (conformance/grade-receiver/context.ts describe): a 5xx
 * says the receiver's error code and message, so a sidecar whose forward target refuses is
 * named in the grading report, not only in the sidecar's log (issue 22).
 */
import t from 'tap';
import { describe } from '../../../conformance/grade-receiver/context.js';
import type { Answer } from '../../../conformance/grade-receiver/http-client.js';

const answer = (status: number | undefined, text: string): Answer => ({
  exchange: status === undefined ? { error: 'connect ECONNREFUSED 127.0.0.1:9' } : {},
  ...(status === undefined ? {} : { status }),
  headers: {},
  text,
});

t.test('a 503 names the error the receiver gave', async (t) => {
  const body = JSON.stringify({
    error: {
      code: 'publication_failed',
      message:
        'the event could not be handed over yet: forward to http://127.0.0.1:9000/hook failed: ECONNREFUSED connect ECONNREFUSED 127.0.0.1:9000',
    },
  });
  t.equal(
    describe(answer(503, body)),
    'got 503 publication_failed: the event could not be handed over yet: forward to http://127.0.0.1:9000/hook failed: ECONNREFUSED connect ECONNREFUSED 127.0.0.1:9000',
  );
});

t.test('other answers read as before; a malformed 5xx body adds nothing', async (t) => {
  t.equal(describe(answer(200, '{}')), 'got 200');
  t.equal(describe(answer(500, 'not json')), 'got 500');
  t.equal(describe(answer(502, '{"error":{"code":7}}')), 'got 502');
  t.equal(describe(answer(503, '{"error":{"code":"busy"}}')), 'got 503 busy');
  t.equal(describe(answer(undefined, '')), 'no response (connect ECONNREFUSED 127.0.0.1:9)');
});
