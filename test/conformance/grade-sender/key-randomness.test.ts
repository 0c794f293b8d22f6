import t from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  judgeKeyRandomness,
  timestampIn,
} from '../../../conformance/grade-sender/key-randomness.js';

const at = Date.UTC(2026, 4, 26, 10, 0, 0);

t.test('CSPRNG keys are never flagged (2000 runs of three keys)', async (t) => {
  let flagged = 0;
  for (let i = 0; i < 2000; i++) {
    const keys = [0, 1, 2].map(() => ({ key: `whk_${randomUUID().replaceAll('-', '')}`, at }));
    if (judgeKeyRandomness(keys).problems.length) flagged++;
  }
  t.equal(flagged, 0);
  const b64 = [0, 1].map(() => ({ key: randomBytes(16).toString('base64url'), at }));
  t.same(judgeKeyRandomness(b64).problems, []);
});

t.test('clock readings are found: seconds, milliseconds, dates', async (t) => {
  t.equal(timestampIn(`whk_${Math.floor(at / 1000)}`, at), String(Math.floor(at / 1000)));
  t.equal(timestampIn(`k-${at}-x`, at), String(at));
  t.equal(timestampIn('whk_20260526_example_000031', at), '20260526');
  t.equal(timestampIn('whk_2026-05-25_x', at), '2026-05-25', 'a day either side');
  t.equal(timestampIn('whk_20250526_x', at), null, 'a year off is not the capture date');
  t.equal(timestampIn('whk_1234567890123456', at), null);
});

t.test('keys carrying clock readings are flagged when most of them do', async (t) => {
  const base = Math.floor(at / 1000);
  const stamped = [0, 1, 2].map((i) => ({
    key: `whk_${base + i}_${randomBytes(8).toString('hex')}`,
    at,
  }));
  t.equal(judgeKeyRandomness(stamped).problems.length, 3, 'every stamped key named');
  t.match(judgeKeyRandomness(stamped).problems[0], /contains a clock reading/);
  t.equal(judgeKeyRandomness(stamped.slice(0, 1)).problems.length, 1, 'a single stamped key');
  // One random key that happens to hold a reading among CSPRNG keys: chance, not a clock.
  const mixed = [
    stamped[0]!,
    ...[0, 1].map(() => ({ key: `whk_${randomBytes(16).toString('hex')}`, at })),
  ];
  t.same(judgeKeyRandomness(mixed).problems, []);
});

t.test('counters and narrow keys are flagged', async (t) => {
  const counter = judgeKeyRandomness(
    ['evt-000000000101', 'evt-000000000102', 'evt-000000000107'].map((key) => ({ key, at })),
  );
  t.match(counter.problems.join(' '), /small counter/);
  const narrow = judgeKeyRandomness(
    ['fixed_prefix_abcdefgh_AAA1', 'fixed_prefix_abcdefgh_AAB2'].map((key) => ({ key, at })),
  );
  t.match(narrow.problems.join(' '), /bits vary/);
  t.ok((narrow.estimatedBits ?? 99) < 64);
  t.same(
    judgeKeyRandomness([{ key: `whk_${randomUUID()}`, at }]).estimatedBits,
    null,
    'one key: no comparison',
  );
});
