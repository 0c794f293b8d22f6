import t from 'tap';
import { Batcher } from '../../receiver/pipeline/batcher.js';

t.test('concurrent calls share one batch, each gets its own result', async (t) => {
  const batches: number[][] = [];
  const b = new Batcher<number, number>(
    async (xs) => {
      batches.push(xs);
      return xs.map((x) => x * 2);
    },
    async (x) => x * 2,
  );
  const out = await Promise.all([1, 2, 3, 4].map((x) => b.run(x)));
  t.same(out, [2, 4, 6, 8]);
  t.same(batches, [[1, 2, 3, 4]]);
});

t.test('a failing batch falls back to single calls; one bad item fails alone', async (t) => {
  const b = new Batcher<number, number>(
    async () => {
      throw new Error('batch failed');
    },
    async (x) => {
      if (x === 3) throw new Error('bad item');
      return x;
    },
  );
  const out = await Promise.allSettled([1, 2, 3].map((x) => b.run(x)));
  t.same(
    out.map((o) => o.status),
    ['fulfilled', 'fulfilled', 'rejected'],
  );
});

t.test('maxSize splits batches', async (t) => {
  const sizes: number[] = [];
  const b = new Batcher<number, number>(
    async (xs) => {
      sizes.push(xs.length);
      return xs;
    },
    async (x) => {
      sizes.push(1);
      return x;
    },
    2,
  );
  await Promise.all([1, 2, 3, 4, 5].map((x) => b.run(x)));
  t.same(sizes, [2, 2, 1]);
});
