import t from 'tap';
import { harness, buyer } from './support/core.js';

t.test('smoke', async (t) => {
  const h = await harness(t);
  const r = await h.ok('sales', 'get_products', { brief: 'sports fans on ctv' }, buyer(h));
  t.equal(r.status, 'completed');
  t.ok(Array.isArray(r.products));
  console.log(JSON.stringify(r).slice(0, 600));
});
