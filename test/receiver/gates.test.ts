/** The body reader's bounds on their own: declared lengths, the budget, short and long streams. */
import t from 'tap';
import { Readable } from 'node:stream';
import {
  BodyBudget,
  BodyBudgetError,
  BodyTooLargeError,
  readBodyCapped,
} from '../../receiver/pipeline/gates.js';

const stream = (...parts: string[]) => Readable.from(parts.map((p) => Buffer.from(p)));

t.test(
  'declared length: the bytes land in one buffer; short or long streams keep every byte',
  async (t) => {
    t.equal((await readBodyCapped(stream('ab', 'cd'), 100, '4')).toString(), 'abcd');
    t.equal((await readBodyCapped(stream('ab'), 100, '4')).toString(), 'ab', 'ended short');
    t.equal(
      (await readBodyCapped(stream('ab', 'cdef'), 100, '3')).toString(),
      'abcdef',
      'more than declared',
    );
    t.equal(
      (await readBodyCapped(stream('ab', 'cd'), 100, 'x')).toString(),
      'abcd',
      'not a length',
    );
    t.equal((await readBodyCapped(stream(), 100, '0')).length, 0);
    await t.rejects(readBodyCapped(stream('abc'), 2, null), BodyTooLargeError);
    await t.rejects(readBodyCapped(Buffer.from('abc'), 2, null), BodyTooLargeError);
  },
);

t.test(
  'the budget: declared length up front, undeclared or extra bytes as they come',
  async (t) => {
    t.throws(() => new BodyBudget(0), RangeError);
    const budget = new BodyBudget(10);
    const a = budget.open();
    t.equal((await readBodyCapped(stream('abcdef'), 100, '6', { account: a })).length, 6);
    t.equal(budget.inFlight, 6);
    t.equal(a.held(), 6);
    const b = budget.open();
    await t.rejects(readBodyCapped(stream('abcde'), 100, '5', { account: b }), BodyBudgetError);
    t.equal(budget.inFlight, 6, 'a refused declared length takes nothing');
    await t.rejects(
      readBodyCapped(stream('ab', 'cde'), 100, null, { account: b }),
      BodyBudgetError,
    );
    t.equal(b.held(), 2, 'chunks taken until the one that did not fit');
    b.release();
    const c = budget.open();
    t.equal((await readBodyCapped(stream('ab', 'cd'), 100, '1', { account: c })).length, 4);
    t.equal(c.held(), 4, 'bytes past the declared length are taken too');
    a.release();
    c.release();
    t.equal(budget.inFlight, 0);
  },
);

t.test('a budget within another: bytes count against both', async (t) => {
  const all = new BodyBudget(10);
  const share = new BodyBudget(4, all);
  const a = share.open();
  t.ok(a.take(4));
  t.notOk(a.take(1), 'the share is full');
  t.equal(all.inFlight, 4);
  const b = all.open();
  t.ok(b.take(6));
  const c = share.open();
  t.notOk(c.take(1), 'the share is full');
  a.release();
  t.ok(b.take(4), 'the whole budget is full again');
  t.notOk(c.take(1), 'the whole budget is full even though the share is not');
  b.release();
  t.ok(c.take(4));
  c.release();
  t.equal(all.inFlight, 0);
  t.equal(share.inFlight, 0);
});
