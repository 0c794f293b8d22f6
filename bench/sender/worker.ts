/** A bench delivery worker process; configuration from env (BENCH_*). */
import { brandProfile } from '../../shared/brand.js';
import { createPool } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { importSigningKey } from '../../shared/signing/keys.js';
import { ActivityLog } from '../../sender/activity/activity-log.js';
import { DeliveryQueue } from '../../sender/delivery/queue.js';
import { DeliveryWorker } from '../../sender/delivery/worker.js';
import { createStatePool, Outbox } from '../../sender/outbox/outbox.js';

const env = process.env;
const pool = createPool({ connectionString: env.BENCH_DATABASE_URL!, max: 16 });
const queue = new DeliveryQueue({
  connection: createRedis(env.BENCH_REDIS_URL!),
  prefix: env.BENCH_PREFIX!,
});
const schema = env.BENCH_SCHEMA!;
const statePool = createStatePool(env.BENCH_DATABASE_URL!);
const outbox = new Outbox({ pool, queue, schema, statePool });
const key = await importSigningKey(JSON.parse(env.BENCH_KEY!));
const http: number[] = [];
const worker = new DeliveryWorker({
  outbox,
  signer: { key, profile: brandProfile('svc') },
  connection: createRedis(env.BENCH_REDIS_URL!),
  prefix: env.BENCH_PREFIX!,
  allowHosts: ['127.0.0.1'],
  concurrency: Number(env.BENCH_JOBS ?? 512),
  maxInFlight: 256,
  // The bench has one receiver origin: let it take every slot.
  perOriginConcurrency: 256,
  connectionsPerOrigin: Number(env.BENCH_CONNS ?? 64),
  activity: new ActivityLog({ pool, schema }),
  onAttempt: (r) => http.push(r.responseTimeMs),
  reconcileEveryMs: 0,
  purgeEveryMs: 0,
});
process.stdout.write('ready\n');
const startCpu = process.cpuUsage();
process.on('SIGTERM', () => {
  void worker.close().then(() => {
    if (env.BENCH_CPU_REPORT) {
      const u = process.cpuUsage(startCpu);
      const sorted = http.sort((a, b) => a - b);
      const p = (q: number) => sorted[Math.floor(q * sorted.length)] ?? NaN;
      process.stderr.write(
        `worker cpu ${((u.user + u.system) / 1000).toFixed(0)} ms; http p50 ${p(0.5)} ms p99 ${p(0.99)} ms\n`,
      );
    }
    process.exit(0);
  });
});
