import t from 'tap';
import { editDistance, nearestNames } from '../../shared/text/nearest.js';

t.test('edit distance', async (t) => {
  t.equal(editDistance('kitten', 'sitting'), 3);
  t.equal(editDistance('', 'abc'), 3);
  t.equal(editDistance('same', 'same'), 0);
});

t.test('nearest names: typos, substrings, nothing for noise', async (t) => {
  const names = ['get_products', 'get_media_buys', 'create_media_buy', 'start', 'receiver'];
  t.same(nearestNames('get_prodcts', names), ['get_products']);
  t.same(nearestNames('strat', names), ['start']);
  t.same(nearestNames('media_buy', names).sort(), ['create_media_buy', 'get_media_buys']);
  t.same(nearestNames('zzzzzzzzzzzz', names), []);
  t.same(nearestNames('', names), []);
});
