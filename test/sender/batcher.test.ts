import t from 'tap';
import { Batcher } from '../../sender/outbox/batcher.js';

const tick = () => new Promise((r) => setImmediate(r));

t.test('without linger a lone call goes out at once; concurrent calls share a run', async (t) => {
  const runs: number[][] = [];
  const b = new Batcher<number, number>(async (items) => {
    runs.push(items);
    await tick();
    return items.map((i) => i * 2);
  }, 10);
  t.equal(await b.submit(1), 2);
  t.same(await Promise.all([b.submit(2), b.submit(3), b.submit(4)]), [4, 6, 8]);
  t.same(runs, [[1], [2, 3, 4]]);
});

t.test(
  'with linger, calls from separate ticks wait for company; a full batch goes early',
  async (t) => {
    const runs: number[][] = [];
    // A linger far longer than the test: only a full batch can release these.
    const b = new Batcher<number, number>(
      async (items) => {
        runs.push(items);
        return items;
      },
      3,
      2,
      60_000,
    );
    const out: Array<Promise<number>> = [];
    for (let i = 1; i <= 3; i++) {
      out.push(b.submit(i));
      await tick();
      if (i < 3) t.same(runs, [], `call ${i} is still lingering`);
    }
    t.same(await Promise.all(out), [1, 2, 3]);
    t.same(runs, [[1, 2, 3]], 'one run for the three');
  },
);

t.test('a lingering call goes out when the linger ends; failures reach every caller', async (t) => {
  let fail = false;
  const b = new Batcher<number, number>(
    async (items) => {
      if (fail) throw new Error('down');
      return items;
    },
    100,
    2,
    1,
  );
  t.equal(await b.submit(7), 7);
  fail = true;
  const r = await Promise.allSettled([b.submit(1), b.submit(2)]);
  t.same(
    r.map((x) => x.status),
    ['rejected', 'rejected'],
  );
});
