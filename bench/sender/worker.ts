/** A bench delivery worker process; configuration from env (BENCH_*). */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { brandProfile } from '../../shared/brand.js';
import { createPool } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { importSigningKey } from '../../shared/signing/keys.js';
import { ActivityLog } from '../../sender/activity/activity-log.js';
import { DeliveryQueue, isBatchJob } from '../../sender/delivery/queue.js';
import { DeliveryWorker } from '../../sender/delivery/worker.js';
import type { Transport } from '../../sender/delivery/transport.js';
import { createStatePool, Outbox } from '../../sender/outbox/outbox.js';
import { startTracing } from '../../shared/telemetry/tracing.js';

// Tracing on when the bench passes OTEL_EXPORTER_OTLP_ENDPOINT (`--tracing=on|both`).
startTracing('bench-worker');

const env = process.env;
const now = () => performance.timeOrigin + performance.now();
const pool = createPool({ connectionString: env.BENCH_DATABASE_URL!, max: 16 });
const queue = new DeliveryQueue({
  connection: createRedis(env.BENCH_REDIS_URL!),
  prefix: env.BENCH_PREFIX!,
  // BENCH_SHARDS: the dispatch shard count (SVC_DISPATCH_SHARDS; default 16).
  ...(env.BENCH_SHARDS ? { shards: Number(env.BENCH_SHARDS) } : {}),
});
const schema = env.BENCH_SCHEMA!;
const statePool = createStatePool(env.BENCH_DATABASE_URL!);
// BENCH_DURABLE_CLAIMS=off: claims commit without the WAL flush (the A/B of its cost).
const durableClaims = (env.BENCH_DURABLE_CLAIMS ?? 'on') !== 'off';
const outbox = new Outbox({ pool, queue, schema, statePool, durableClaims });
const key = await importSigningKey(JSON.parse(env.BENCH_KEY!));
const http: number[] = [];

// BENCH_TRACE=FILE: per-row stage times (Unix ms) for the bench to break the latency down:
// job active, row claimed, request sent (signed); plus GC pauses and event-loop delay.
const tracing = Boolean(env.BENCH_TRACE);
const stages = new Map<string, { active?: number; claimed?: number; sent?: number }>();
const stage = (id: string) => {
  let s = stages.get(id);
  if (!s) stages.set(id, (s = {}));
  return s;
};
const bodies = new WeakMap<Buffer, string>();
const gcs: Array<{ at: number; ms: number; kind: number }> = [];
const loop = monitorEventLoopDelay({ resolution: 10 });
if (tracing) {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcs.push({
        at: performance.timeOrigin + e.startTime,
        ms: e.duration,
        kind: (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0,
      });
    }
  }).observe({ entryTypes: ['gc'] });
  loop.enable();
  const claim = outbox.claim.bind(outbox);
  outbox.claim = async (id, leaseMs) => {
    const out = await claim(id, leaseMs);
    stage(id).claimed ??= now();
    if (!('kind' in out)) bodies.set(out.body, id);
    return out;
  };
}

const worker = new DeliveryWorker({
  outbox,
  signer: { key, profile: brandProfile('svc') },
  connection: createRedis(env.BENCH_REDIS_URL!),
  prefix: env.BENCH_PREFIX!,
  allowHosts: ['127.0.0.1'],
  concurrency: Number(env.BENCH_JOBS ?? 512),
  maxInFlight: 256,
  // The bench has one receiver origin: let it take every slot. The limit is a total
  // across worker processes, so the bench gives 256 per process (BENCH_PER_ORIGIN).
  perOriginConcurrency: Number(env.BENCH_PER_ORIGIN ?? 256),
  connectionsPerOrigin: Number(env.BENCH_CONNS ?? 64),
  activity: new ActivityLog({ pool, schema }),
  onAttempt: (r) => http.push(r.responseTimeMs),
  reconcileEveryMs: 0,
  storageEveryMs: 0,
});
if (tracing) {
  for (const w of worker.workers) {
    w.on('active', (job) => {
      const t = now();
      const ids = isBatchJob(job.data) ? job.data.ids : [job.data.id];
      for (const id of ids) stage(id).active ??= t;
    });
  }
  // post() is called right after signing: the request leaves now.
  const transport = (worker as unknown as { transport: Transport }).transport;
  const post = transport.post.bind(transport);
  transport.post = async (url, body, headers) => {
    const id = bodies.get(body);
    if (id) stage(id).sent ??= now();
    return post(url, body, headers);
  };
}
// Ready once the worker has connected and is taking jobs.
await worker.start();
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
    if (tracing) {
      writeFileSync(
        env.BENCH_TRACE!,
        JSON.stringify({
          stages: Object.fromEntries(stages),
          gcs,
          loop: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
        }),
      );
    }
    process.exit(0);
  });
});
