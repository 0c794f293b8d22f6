/**
 * bench/compare.ts: `--base REV` argument handling and the side-by-side figure table's
 * matching of lines by shape.
 */
import t from 'tap';
import { figures, parseCompareArgs } from '../../bench/compare.js';

t.test('--base and --rounds are split off the suite arguments', async (t) => {
  t.equal(parseCompareArgs('json', ['--x', '1']), null, 'no --base: no comparison');
  t.same(parseCompareArgs('sender', ['--base', '8faf630', '--workers', '2', '--rounds', '3']), {
    suite: 'sender',
    args: ['--workers', '2'],
    base: '8faf630',
    rounds: 3,
  });
  t.equal(parseCompareArgs('json', ['--base', 'HEAD'])?.rounds, 2, 'two rounds by default');
});

t.test('malformed --base and --rounds are refused with what they take', async (t) => {
  t.throws(() => parseCompareArgs('json', ['--base']), /--base needs a value/);
  t.throws(() => parseCompareArgs('json', ['--base', '--rounds', '2']), /--base needs a value/);
  for (const bad of ['0', '21', '1.5', 'two']) {
    t.throws(
      () => parseCompareArgs('json', ['--base', 'HEAD', '--rounds', bad]),
      /--rounds takes a whole number from 1 to 20/,
      bad,
    );
  }
});

t.test('figures: lines match by shape, numbers collected per round', async (t) => {
  const f = figures([
    'title\np99 3.5 ms at 1,000/s\ntarget within 2-3x\np99 9 ms at 5/s\n',
    'p99 4.25 ms at 1,000/s\nlatency -2 ms\nverify ES256 0.9x\n',
  ]);
  t.same(
    f.get('p99 # ms at #/s'),
    [
      [3.5, 1000],
      [4.25, 1000],
    ],
    'first of a repeated shape',
  );
  t.same(f.get('target within #-#x'), [[2, 3]], 'a dash between numbers is not a sign');
  t.same(f.get('latency # ms'), [[-2]], 'a leading minus is a sign');
  t.same(f.get('verify ES256 #x'), [[0.9]], 'digits inside a name are the label');
  t.notOk(f.has('title'), 'lines without numbers are not figures');
});
