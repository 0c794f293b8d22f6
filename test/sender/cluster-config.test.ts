/**
 * Redis Cluster configuration mistakes (issue #19, bad input): a cluster node given as
 * REDIS_URL, both REDIS_URL and REDIS_CLUSTER_NODES, a seed list with a bad entry, a
 * shard count that is not a positive integer, a shard selection out of range. Each is
 * refused at start with one message naming the variable and what it accepts, exits
 * non-zero at once (no log flood), and leaves every pending delivery to the next good start.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import { ClusterAnswerError, createRedis } from '../../shared/infra/redis.js';
import { DATABASE_URL } from '../helpers/db.js';
import { startRedisCluster } from '../helpers/redis-cluster.js';
import { senderHarness, startReceiver } from './harness.js';

const run = promisify(execFile);
const SVC = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));

interface Outcome {
  code: number;
  out: string;
}

/** `svc worker` with `env` (and `args`): its exit code and everything it wrote. */
async function worker(env: Record<string, string>, args: string[] = []): Promise<Outcome> {
  const clean = { ...process.env };
  delete clean.REDIS_URL;
  delete clean.REDIS_CLUSTER_NODES;
  try {
    const r = await run(process.execPath, [SVC, 'worker', ...args], {
      env: { ...clean, DATABASE_URL, SVC_SERVICE_WAIT_SECONDS: '30', ...env },
      timeout: 30_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string; killed?: boolean };
    return {
      code: err.killed ? -1 : (err.code ?? -1),
      out: (err.stdout ?? '') + (err.stderr ?? ''),
    };
  }
}

const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '').length;

t.test('bad cluster settings: refused at start, one message, nothing pending lost', async (t) => {
  const cluster = await startRedisCluster(t, { masters: 3, replicas: 0 });
  const node = cluster.nodes[0]!.port;
  const h = await senderHarness(t);
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const keys = await mkdtemp(join(tmpdir(), 'svc-cluster-keys-'));
  await run(process.execPath, [SVC, 'keys', 'generate', '--out', keys]);
  const ids = await h.outbox.enqueue(
    Array.from({ length: 5 }, (_, i) => {
      const key = newIdempotencyKey();
      return {
        target: { url: rx.url, auth: { mode: 'rfc9421' as const }, channel: 'task' as const },
        payload: { idempotency_key: key, task_id: `t${i}`, status: 'completed' },
        idempotencyKey: key,
        notificationType: 'completed',
      };
    }),
  );
  const args = ['--keys', keys, '--schema', h.schema, '--prefix', h.prefix];

  t.test('a cluster node as REDIS_URL: exits non-zero at once, says what to set', async (t) => {
    const started = Date.now();
    const r = await worker({ REDIS_URL: `redis://127.0.0.1:${node}` }, args);
    t.not(r.code, 0, 'non-zero exit');
    t.not(r.code, -1, 'not killed by the timeout: it exits by itself');
    t.match(r.out, /REDIS_CLUSTER_NODES=127\.0\.0\.1:\d+/, 'names the variable to set');
    t.match(r.out, /cluster_enabled:1/);
    t.ok(lines(r.out) <= 5, `a bounded log (${lines(r.out)} lines)`);
    t.notMatch(r.out, /delivery worker started/, 'never starts taking jobs');
    t.comment(`exited after ${Date.now() - started} ms`);
  });

  const refused: Array<[string, Record<string, string>, string[], RegExp]> = [
    [
      'both REDIS_URL and REDIS_CLUSTER_NODES',
      { REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_NODES: cluster.seeds },
      [],
      /REDIS_CLUSTER_NODES.*instead of REDIS_URL, not with it/,
    ],
    [
      'a seed list with a bad entry',
      { REDIS_CLUSTER_NODES: `127.0.0.1:${node},not-a-node` },
      [],
      /REDIS_CLUSTER_NODES="127\.0\.0\.1:\d+,not-a-node" is not valid: it accepts comma-separated host:port/,
    ],
    [
      'a seed with a port out of range',
      { REDIS_CLUSTER_NODES: '127.0.0.1:70000' },
      [],
      /REDIS_CLUSTER_NODES=.*host:port/,
    ],
    [
      'an empty seed entry',
      { REDIS_CLUSTER_NODES: `127.0.0.1:${node},,` },
      [],
      /REDIS_CLUSTER_NODES/,
    ],
    [
      'shard count 0',
      { SVC_DISPATCH_SHARDS: '0' },
      [],
      /SVC_DISPATCH_SHARDS="0".*positive integer/,
    ],
    [
      'shard count -3',
      { SVC_DISPATCH_SHARDS: '-3' },
      [],
      /SVC_DISPATCH_SHARDS="-3".*positive integer/,
    ],
    [
      'shard count 1.5',
      { SVC_DISPATCH_SHARDS: '1.5' },
      [],
      /SVC_DISPATCH_SHARDS="1\.5".*positive integer/,
    ],
    [
      'shard count abc',
      { SVC_DISPATCH_SHARDS: 'abc' },
      [],
      /SVC_DISPATCH_SHARDS="abc".*positive integer/,
    ],
    ['shard count 5000', { SVC_DISPATCH_SHARDS: '5000' }, [], /SVC_DISPATCH_SHARDS="5000".*1-1024/],
    [
      'a shard selection out of range',
      { REDIS_URL: 'redis://127.0.0.1:6379', SVC_DISPATCH_SHARDS: '4' },
      ['--shards', '2-9'],
      /shards "2-9" is not valid: it accepts all, or shard indexes and ranges 0-3/,
    ],
    [
      'a single Redis as REDIS_CLUSTER_NODES',
      { REDIS_CLUSTER_NODES: '127.0.0.1:6379' },
      [],
      /not a Redis Cluster.*REDIS_URL/,
    ],
  ];
  for (const [name, env, extra, message] of refused) {
    t.test(name, async (t) => {
      const r = await worker(env, [...args, ...extra]);
      t.not(r.code, 0, 'non-zero exit');
      t.not(r.code, -1, 'exits by itself');
      t.match(r.out, message);
      t.ok(lines(r.out) <= 5, `a bounded log (${lines(r.out)} lines)`);
    });
  }

  t.test('every pending delivery is still there, and goes out on a good start', async (t) => {
    for (const id of ids) t.equal((await h.outbox.state(id))?.attempts, 0, 'untouched');
    h.startWorker();
    for (const id of ids) t.equal(await h.waitForState(id), 'delivered');
    t.equal(rx.received.length, 5, 'each once');
  });

  t.test('the library client meets a cluster: one error, then stopped, no loop', async (t) => {
    const redis = createRedis(`redis://127.0.0.1:${node}`);
    const errors: Error[] = [];
    redis.on('error', (err: Error) => errors.push(err));
    t.teardown(() => redis.disconnect());
    // Keys over the whole slot space: some are another master's (MOVED).
    const answers = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) => redis.set(`k${i}`, '1')),
    );
    t.ok(
      answers.some((a) => a.status === 'rejected'),
      'a command for another master is refused',
    );
    await new Promise((r) => setTimeout(r, 1000));
    const cluster = errors.filter((e) => e instanceof ClusterAnswerError);
    t.equal(cluster.length, 1, 'one ClusterAnswerError');
    t.match(cluster[0]!.message, /MOVED .*REDIS_CLUSTER_NODES/);
    t.ok(errors.length <= 3, `no reconnect loop (${errors.length} error events in 1 s)`);
    await t.rejects(redis.get('k1'), 'the client stays stopped');
  });
});
