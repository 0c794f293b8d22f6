import t from 'tap';
import { RedisReplayStore } from '../../../receiver/replay/redis-replay-store.js';
import { createRedis, hashTaggedPrefix, type Redis } from '../../../shared/infra/redis.js';
import { REDIS_URL, uniqueName } from '../../helpers/db.js';

// A single node here: the replay store takes an ioredis Redis.
const redis = createRedis(REDIS_URL) as Redis;
const prefix = hashTaggedPrefix(uniqueName('replaytest'));

t.teardown(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

function clock(start = Date.parse('2026-04-18T12:00:00Z')) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

t.test('insert, seen, replay; keyids separate', async (t) => {
  const s = new RedisReplayStore(redis, { prefix: `${prefix}a` });
  t.equal(await s.seen('k1', 'n1'), false);
  t.equal(await s.insert('k1', 'n1', 300), 'inserted');
  t.equal(await s.seen('k1', 'n1'), true);
  t.equal(await s.insert('k1', 'n1', 300), 'replayed');
  t.equal(await s.insert('k2', 'n1', 300), 'inserted');
  t.equal(await s.insert('k:1', 'n1', 300), 'inserted', 'no key-name confusion');
});

t.test('concurrent inserts of one nonce: exactly one inserted', async (t) => {
  const s = new RedisReplayStore(redis, { prefix: `${prefix}b` });
  const results = await Promise.all(Array.from({ length: 50 }, () => s.insert('kc', 'x', 300)));
  t.equal(results.filter((r) => r === 'inserted').length, 1);
});

t.test('TTL expiry and caps', async (t) => {
  const c = clock();
  const s = new RedisReplayStore(redis, {
    prefix: `${prefix}c`,
    clock: c.now,
    minTtlSeconds: 60,
    perKeyidCap: 2,
    aggregateCap: 3,
  });
  t.equal(await s.insert('k', 'a', 1), 'inserted');
  t.equal(await s.insert('k', 'b', 60), 'inserted');
  t.equal(await s.atCap('k'), true);
  t.equal(await s.insert('k', 'c', 60), 'cap');
  t.equal(await s.insert('k', 'a', 60), 'replayed', 'replay wins over cap');
  t.equal(await s.insert('j', 'a', 60), 'inserted');
  t.equal(await s.atCap('z'), true, 'aggregate cap reached');
  t.equal(await s.insert('z', 'a', 60), 'cap');
  c.advance(61_000);
  t.equal(await s.seen('k', 'a'), false, 'expired');
  t.equal(await s.atCap('k'), false);
  t.equal(await s.insert('k', 'a', 60), 'inserted', 'expired nonce reusable');
});

t.test('harness hooks', async (t) => {
  const s = new RedisReplayStore(redis, { prefix: `${prefix}d` });
  await s.harnessFillCap('kh');
  t.equal(await s.atCap('kh'), true);
  t.equal(await s.insert('kh', 'n', 300), 'cap');
  await s.harnessClearCap('kh');
  t.equal(await s.atCap('kh'), false);
  await s.harnessInstallEntries([{ keyid: 'kh', nonce: 'REPLAYEDwebhook16byteA' }]);
  t.equal(await s.seen('kh', 'REPLAYEDwebhook16byteA'), true);
});
