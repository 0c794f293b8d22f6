/**
 * `npm run bench -- sender`: events enqueued through NotificationCore (outbox write
 * included) and delivered, signed (Ed25519), to a loopback receiver answering 200.
 * Reports end-to-end deliveries/s with 1 and 2 worker processes, and enqueue-to-2xx
 * p50/p99 at a fixed 500 events/s. Bounded in count and time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { brandProfile } from '../shared/brand.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { createRedis } from '../shared/infra/redis.js';
import { generateSigningKey } from '../shared/signing/keys.js';
import { NotificationCore } from '../sender/core/notification-core.js';
import { DeliveryQueue } from '../sender/delivery/queue.js';
import { migrateSender } from '../sender/schema.js';

const DATABASE_URL = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function child(
  file: string,
  env: Record<string, string>,
): Promise<{ proc: ChildProcess; line: string }> {
  // BENCH_CPU_PROF=DIR writes a CPU profile of every child process there.
  const prof = process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  const proc = spawn(process.execPath, [...prof, '--import', 'tsx', here(file)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.stdout!.once('data', (d: Buffer) => resolve({ proc, line: d.toString().trim() }));
  });
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function run(args: string[]): Promise<void> {
  const total = Number(args[0] ?? 20_000);
  const rateSeconds = Number(args[1] ?? 10);
  const pool = createPool({ connectionString: DATABASE_URL, max: 16 });
  const schema = `bench_sender_${randomBytes(4).toString('hex')}`;
  const redis = createRedis(REDIS_URL);
  const procs: ChildProcess[] = [];
  let queue: DeliveryQueue | null = null;
  try {
    await migrateSender(pool, schema);
    const rx = await child('./sender/receiver.ts', {});
    procs.push(rx.proc);
    const rxBase = `http://127.0.0.1:${rx.line}`;
    const { privateJwk } = await generateSigningKey('ed25519');
    const rows: string[][] = [];

    const scenario = async (
      workers: number,
      label: string,
      drive: (core: NotificationCore) => Promise<number>,
    ) => {
      const prefix = `{bench-${randomBytes(4).toString('hex')}}`;
      queue = new DeliveryQueue({ connection: redis, prefix });
      const core = new NotificationCore({
        pool,
        schema,
        queue,
        profile: brandProfile('svc'),
        protocolVersion: '3.2',
        allowHosts: ['127.0.0.1'],
      });
      const ws: ChildProcess[] = [];
      for (let i = 0; i < workers; i++) {
        const w = await child('./sender/worker.ts', {
          BENCH_DATABASE_URL: DATABASE_URL,
          BENCH_REDIS_URL: REDIS_URL,
          BENCH_PREFIX: prefix,
          BENCH_SCHEMA: schema,
          BENCH_KEY: JSON.stringify(privateJwk),
        });
        ws.push(w.proc);
        procs.push(w.proc);
      }
      await fetch(`${rxBase}/reset`);
      await drive(core);
      for (const w of ws) w.kill('SIGTERM');
      await Promise.all(ws.map((w) => new Promise((r) => w.once('exit', r))));
      await queue.queue.obliterate({ force: true });
      await queue.close();
      queue = null;
      void label;
    };

    const event = (core: NotificationCore, i: number) =>
      core.taskStatusChanged({
        taskId: `task_${i}`,
        taskType: 'create_media_buy',
        status: 'completed',
        initialStatus: 'submitted',
        pushNotificationConfig: { url: `${rxBase}/hook`, operation_id: `op_${i}` },
        context: { bench_t0: now() },
        result: { media_buy_id: `mb_${i}`, packages: [{ package_id: 'p1', status: 'active' }] },
      });

    const waitDelivered = async (n: number, deadlineMs: number) => {
      const until = Date.now() + deadlineMs;
      for (;;) {
        const c = (await (await fetch(`${rxBase}/count`)).json()) as { count: number };
        if (c.count >= n || Date.now() > until) break;
        await sleep(20);
      }
      return (await (await fetch(`${rxBase}/stats`)).json()) as {
        count: number;
        latencies: number[];
      };
    };

    // `npm run bench -- sender 0` runs the latency scenario alone.
    for (const workers of total > 0 ? [1, 2] : []) {
      await scenario(workers, `throughput-${workers}`, async (core) => {
        const t0 = now();
        let next = 0;
        const inFlight = 64;
        await Promise.all(
          Array.from({ length: inFlight }, async () => {
            while (next < total) await event(core, next++);
          }),
        );
        const enqueued = now() - t0;
        const s = await waitDelivered(total, 120_000);
        const elapsed = now() - t0;
        rows.push([
          `throughput, ${workers} worker process${workers > 1 ? 'es' : ''}`,
          `${s.count}/${total}`,
          `${Math.round((s.count / elapsed) * 1000)} deliveries/s`,
          `enqueue alone ${Math.round((total / enqueued) * 1000)}/s`,
        ]);
        return s.count;
      });
    }

    await scenario(1, 'latency', async (core) => {
      const rate = 500;
      const n = rate * rateSeconds;
      const t0 = now();
      const pending: Promise<unknown>[] = [];
      for (let i = 0; i < n; i++) {
        const due = t0 + (i * 1000) / rate;
        const wait = due - now();
        if (wait > 1) await sleep(wait);
        pending.push(event(core, i));
      }
      const lastCall = now();
      await Promise.all(pending);
      const enqueueLag = now() - lastCall;
      const s = await waitDelivered(n, 60_000);
      const sorted = [...s.latencies].sort((a, b) => a - b);
      rows.push([
        `latency at ${rate}/s for ${rateSeconds} s, 1 worker`,
        `${s.count}/${n}`,
        `p50 ${pct(sorted, 50).toFixed(1)} ms`,
        `p99 ${pct(sorted, 99).toFixed(1)} ms (max ${sorted.at(-1)?.toFixed(1)} ms; last enqueue resolved ${enqueueLag.toFixed(0)} ms after its call)`,
      ]);
      return s.count;
    });

    process.stdout.write('\n| scenario | delivered | result | note |\n|---|---|---|---|\n');
    for (const r of rows) process.stdout.write(`| ${r.join(' | ')} |\n`);
    process.stdout.write(
      '\ntargets: >= 2,500 signed deliveries/s end to end; p99 < 50 ms at 500/s\n',
    );
  } finally {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGTERM');
    if (queue) await (queue as DeliveryQueue).close().catch(() => {});
    redis.disconnect();
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  }
}
