/**
 * `npm run bench -- sender [total] [seconds] [warm-up seconds]`: events enqueued through
 * NotificationCore (outbox write included) and delivered, signed (Ed25519), to a loopback
 * receiver answering 200. Reports end-to-end deliveries/s with 1 and 2 worker processes
 * (`total` events each, default 20,000; 0 skips them), and enqueue-to-2xx p50/p99 at a
 * fixed 500 events/s for `seconds` (default 10) after `warm-up seconds` (default 2) at the
 * same rate, whose figures are printed on their own row: a fresh worker's first second
 * (JIT, first connections) is not the steady state asked for. The latency scenario also
 * prints a per-stage breakdown (bench/sender/breakdown.ts). Bounded in count and time.
 *
 * `--console-indexes=off` (or BENCH_CONSOLE_INDEXES=off) drops the operator console's
 * indexes (sender/console/migrations.ts CONSOLE_INDEXES) after migrating: run it with and
 * without, on a quiet machine, to see what they cost the insert and settle path (A/B).
 *
 * `--tracing=off|on|both` (or BENCH_TRACING): on, the bench (emit, outbox spans) and its
 * workers (dispatch, attempt, settle) export their spans over OTLP/HTTP to a loopback sink
 * (bench/otlp-sink.ts) and every attempt carries a traceparent; both runs everything off,
 * then on, and prints the overhead side by side. `--rounds N` (with `both`) alternates off and
 * on N times, flipping the order each round, and prints each figure's median: on a shared
 * machine a sequential off-then-on pair mostly measures the load changing between them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { brandProfile } from '../shared/brand.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { createRedis } from '../shared/infra/redis.js';
import { generateSigningKey } from '../shared/signing/keys.js';
import { NotificationCore } from '../sender/core/notification-core.js';
import { DeliveryQueue, type DispatchItem } from '../sender/delivery/queue.js';
import { CONSOLE_INDEXES } from '../sender/console/migrations.js';
import { migrateSender } from '../sender/schema.js';
import { startTracing } from '../shared/telemetry/tracing.js';
import {
  overhead,
  roundsOf,
  startOtlpSink,
  tracingEnv,
  tracingModes,
  type OtlpSink,
  median,
} from './otlp-sink.js';
import { backendTicks } from './sender/claim-cost.js';
import {
  breakdown,
  cpuSince,
  cpuSnapshot,
  pct,
  type QueueTrace,
  type WorkerTrace,
} from './sender/breakdown.js';

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

/** The bench's queue: notes when each row's INSERT committed and when its job was added. */
class TracedQueue extends DeliveryQueue implements QueueTrace {
  readonly committed = new Map<string, number>();
  readonly added = new Map<string, number>();
  override async dispatchBatch(items: DispatchItem[], batchSize?: number): Promise<void> {
    const t = now();
    for (const i of items) this.committed.set(i.id, t);
    await super.dispatchBatch(items, batchSize);
    const t2 = now();
    for (const i of items) this.added.set(i.id, t2);
  }
}

/** `--console-indexes=on|off` out of the arguments (default: BENCH_CONSOLE_INDEXES, else on). */
export function consoleIndexesFlag(args: string[]): { on: boolean; rest: string[] } {
  let value = process.env.BENCH_CONSOLE_INDEXES ?? 'on';
  const rest: string[] = [];
  for (const a of args) {
    const m = /^--console-indexes=(.*)$/.exec(a);
    if (m) value = m[1]!;
    else rest.push(a);
  }
  if (value !== 'on' && value !== 'off') {
    throw new Error(`--console-indexes must be on or off, not ${JSON.stringify(value)}`);
  }
  return { on: value === 'on', rest };
}

interface SenderFigures {
  /** Deliveries/s end to end, by worker processes. */
  throughput: Map<number, number>;
  /** CPU µs per delivery in the worker processes (all of them), by worker count. */
  workerCpu: Map<number, number>;
  /** CPU µs per delivery in this process: the emit side (NotificationCore, outbox). */
  emitCpu: Map<number, number>;
  p50: number;
  p99: number;
}

/** µs per /proc tick (USER_HZ: 100 on Linux, the value `getconf CLK_TCK` gives here). */
const TICK_US = 10_000;

/** Each figure's median over rounds (per worker count for the maps). */
function medianFigures(runs: SenderFigures[]): SenderFigures {
  const med = median;
  const map = (k: 'throughput' | 'workerCpu' | 'emitCpu') =>
    new Map([...runs[0]![k].keys()].map((w) => [w, med(runs.map((r) => r[k].get(w) ?? NaN))]));
  return {
    throughput: map('throughput'),
    workerCpu: map('workerCpu'),
    emitCpu: map('emitCpu'),
    p50: med(runs.map((r) => r.p50)),
    p99: med(runs.map((r) => r.p99)),
  };
}

export async function run(argv: string[]): Promise<void> {
  const { modes, rest: afterTracing } = tracingModes(argv);
  const { rounds, rest } = roundsOf(afterTracing);
  const sink = modes.includes('on') ? await startOtlpSink() : null;
  const results = { off: [] as SenderFigures[], on: [] as SenderFigures[] };
  try {
    for (let r = 0; r < rounds; r++) {
      for (const tr of r % 2 === 0 ? modes : [...modes].reverse()) {
        if (modes.length > 1 || tr === 'on') {
          process.stdout.write(
            `\n## tracing ${tr}${rounds > 1 ? `, round ${r + 1} of ${rounds}` : ''}\n`,
          );
        }
        results[tr].push(await runOnce(rest, tr === 'on' ? sink : null));
      }
    }
  } finally {
    await sink?.close();
  }
  if (!results.off.length || !results.on.length) return;
  const off = medianFigures(results.off);
  const on = medianFigures(results.on);
  const rows = [
    `\ntracing overhead (on vs off${rounds > 1 ? `, medians of ${rounds} alternating rounds` : ''}):`,
    '| figure | off | on | Δ |',
    '|---|---|---|---|',
  ];
  for (const [workers, v] of off.throughput) {
    const w = on.throughput.get(workers) ?? NaN;
    rows.push(
      `| deliveries/s, ${workers} worker${workers > 1 ? 's' : ''} | ${v.toFixed(0)} | ${w.toFixed(0)} | ${overhead(v, w, true)} |`,
    );
    for (const [name, m] of [
      ['worker CPU µs per delivery', 'workerCpu'],
      ['emit CPU µs per delivery (the bench process)', 'emitCpu'],
    ] as const) {
      const a = off[m].get(workers) ?? NaN;
      const b = on[m].get(workers) ?? NaN;
      rows.push(
        `| ${name}, ${workers} worker${workers > 1 ? 's' : ''} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${overhead(a, b, false)} |`,
      );
    }
  }
  rows.push(
    `| p50 ms at 500/s | ${off.p50.toFixed(1)} | ${on.p50.toFixed(1)} | ${overhead(off.p50, on.p50, false)} |`,
    `| p99 ms at 500/s | ${off.p99.toFixed(1)} | ${on.p99.toFixed(1)} | ${overhead(off.p99, on.p99, false)} |`,
  );
  process.stdout.write(`${rows.join('\n')}\n`);
}

async function runOnce(argv: string[], sink: OtlpSink | null): Promise<SenderFigures> {
  const figures: SenderFigures = {
    throughput: new Map(),
    workerCpu: new Map(),
    emitCpu: new Map(),
    p50: NaN,
    p99: NaN,
  };
  // The bench process emits (webhook.emit, webhook.outbox); its workers do the rest.
  const tracing = sink
    ? startTracing('bench-sender', { ...process.env, ...tracingEnv(sink) })
    : null;
  const traceEnv: Record<string, string> = sink ? tracingEnv(sink) : {};
  const { on: consoleIndexes, rest: args } = consoleIndexesFlag(argv);
  const total = Number(args[0] ?? 20_000);
  const rateSeconds = Number(args[1] ?? 10);
  const warmSeconds = Number(args[2] ?? 2);
  const pool = createPool({ connectionString: DATABASE_URL, max: 16 });
  const schema = `bench_sender_${randomBytes(4).toString('hex')}`;
  const redis = createRedis(REDIS_URL);
  const procs: ChildProcess[] = [];
  let queue: DeliveryQueue | null = null;
  try {
    await migrateSender(pool, schema);
    if (!consoleIndexes) {
      for (const index of CONSOLE_INDEXES)
        await pool.query(`DROP INDEX IF EXISTS ${schema}.${index}`);
    }
    process.stdout.write(
      `console indexes: ${consoleIndexes ? `on (${CONSOLE_INDEXES.length})` : 'off (dropped for the A/B)'}\n`,
    );
    const rx = await child('./sender/receiver.ts', {});
    procs.push(rx.proc);
    const rxBase = `http://127.0.0.1:${rx.line}`;
    const { privateJwk } = await generateSigningKey('ed25519');
    const rows: string[][] = [];

    const scenario = async (
      workers: number,
      label: string,
      drive: (
        core: NotificationCore,
        queue: TracedQueue,
        workers: ChildProcess[],
      ) => Promise<number>,
      workerEnv: Record<string, string> = {},
    ) => {
      const prefix = `{bench-${randomBytes(4).toString('hex')}}`;
      const traced = new TracedQueue({
        connection: redis,
        prefix,
        ...(process.env.BENCH_SHARDS ? { shards: Number(process.env.BENCH_SHARDS) } : {}),
      });
      queue = traced;
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
          BENCH_PER_ORIGIN: String(256 * workers),
          ...traceEnv,
          ...workerEnv,
        });
        ws.push(w.proc);
        procs.push(w.proc);
      }
      await fetch(`${rxBase}/reset`);
      await drive(core, traced, ws);
      for (const w of ws) w.kill('SIGTERM');
      await Promise.all(ws.map((w) => new Promise((r) => w.once('exit', r))));
      await queue.obliterate();
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
        context: { bench_t0: now(), bench_i: i },
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
        arrivals: Record<string, number>;
      };
    };

    // `npm run bench -- sender 0` runs the latency scenario alone.
    for (const workers of total > 0 ? [1, 2] : []) {
      await scenario(workers, `throughput-${workers}`, async (core, _q, ws) => {
        // CPU time, not wall time: what tracing (or any change) costs per delivery holds
        // on a shared machine where deliveries/s does not.
        const workerTicks0 = ws.reduce((a, w) => a + backendTicks(w.pid!), 0);
        const emit0 = process.cpuUsage();
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
        const emitCpu = process.cpuUsage(emit0);
        const workerTicks = ws.reduce((a, w) => a + backendTicks(w.pid!), 0) - workerTicks0;
        figures.throughput.set(workers, (s.count / elapsed) * 1000);
        figures.workerCpu.set(workers, (workerTicks * TICK_US) / s.count);
        figures.emitCpu.set(workers, (emitCpu.user + emitCpu.system) / s.count);
        rows.push([
          `throughput, ${workers} worker process${workers > 1 ? 'es' : ''}`,
          `${s.count}/${total}`,
          `${Math.round((s.count / elapsed) * 1000)} deliveries/s`,
          `enqueue alone ${Math.round((total / enqueued) * 1000)}/s`,
          `worker CPU ${figures.workerCpu.get(workers)!.toFixed(0)} µs, emit CPU ${figures.emitCpu.get(workers)!.toFixed(0)} µs per delivery`,
        ]);
        return s.count;
      });
    }

    // The latency scenario also breaks each delivery down by stage (BENCH_TRACE in the
    // worker): where the slowest 1 % spent their time, and what ran at that moment.
    const traceFile = join(tmpdir(), `bench-sender-trace-${randomBytes(4).toString('hex')}.json`);
    const t0s: number[] = [];
    const idOf: string[] = [];
    let traced: TracedQueue | null = null;
    let received: Record<string, number> = {};
    let cpuNote = '';
    const benchGcs: Array<{ at: number; ms: number }> = [];
    const gcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        benchGcs.push({ at: performance.timeOrigin + e.startTime, ms: e.duration });
      }
    });
    const benchLoop = monitorEventLoopDelay({ resolution: 10 });
    await scenario(
      1,
      'latency',
      async (core, q, ws) => {
        traced = q;
        const ours = [process.pid, rx.proc.pid!, ...ws.map((w) => w.pid!)];
        const rate = 500;
        // Paced at `rate`; `record` keeps each call's start and outbox id for the breakdown.
        const paced = async (count: number, first: number, record: boolean) => {
          const start = now();
          const calls: Promise<unknown>[] = [];
          for (let j = 0; j < count; j++) {
            const due = start + (j * 1000) / rate;
            const wait = due - now();
            if (wait > 1) await sleep(wait);
            const i = first + j;
            if (record) t0s[i] = now();
            calls.push(
              event(core, i).then((ids) => {
                if (record) idOf[i] = ids[0]!;
              }),
            );
          }
          return calls;
        };
        // The worker's first second (JIT, first connections) is measured on its own, then
        // the receiver is reset: the figure asked for is the steady state at 500/s.
        if (warmSeconds > 0) {
          const warmN = rate * warmSeconds;
          await Promise.all(await paced(warmN, 10_000_000, false));
          const w = await waitDelivered(warmN, 60_000);
          const sorted = [...w.latencies].sort((a, b) => a - b);
          rows.push([
            `warm-up at ${rate}/s for ${warmSeconds} s, a fresh worker (not in the figure below)`,
            `${w.count}/${warmN}`,
            `p50 ${pct(sorted, 50).toFixed(1)} ms`,
            `p99 ${pct(sorted, 99).toFixed(1)} ms (max ${sorted.at(-1)?.toFixed(1)} ms)`,
          ]);
          await fetch(`${rxBase}/reset`);
        }
        const cpu0 = cpuSnapshot(ours);
        gcObserver.observe({ entryTypes: ['gc'] });
        benchLoop.enable();
        const n = rate * rateSeconds;
        const pending = await paced(n, 0, true);
        const lastCall = now();
        await Promise.all(pending);
        const enqueueLag = now() - lastCall;
        const s = await waitDelivered(n, 60_000);
        cpuNote = cpuSince(cpu0, cpuSnapshot(ours));
        benchLoop.disable();
        gcObserver.disconnect();
        received = s.arrivals;
        const sorted = [...s.latencies].sort((a, b) => a - b);
        figures.p50 = pct(sorted, 50);
        figures.p99 = pct(sorted, 99);
        rows.push([
          `latency at ${rate}/s for ${rateSeconds} s, 1 worker`,
          `${s.count}/${n}`,
          `p50 ${pct(sorted, 50).toFixed(1)} ms`,
          `p99 ${pct(sorted, 99).toFixed(1)} ms (max ${sorted.at(-1)?.toFixed(1)} ms; last enqueue resolved ${enqueueLag.toFixed(0)} ms after its call)`,
        ]);
        return s.count;
      },
      { BENCH_TRACE: traceFile },
    );
    try {
      const trace = JSON.parse(readFileSync(traceFile, 'utf8')) as WorkerTrace;
      process.stdout.write(
        breakdown(t0s, idOf, traced!, trace, received, benchGcs, {
          p99: benchLoop.percentile(99) / 1e6,
          max: benchLoop.max / 1e6,
        }),
      );
      process.stdout.write(`${cpuNote}\n`);
    } catch (err) {
      process.stderr.write(`bench sender: no stage breakdown (${String(err)})\n`);
    } finally {
      rmSync(traceFile, { force: true });
    }

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
    await tracing?.shutdown();
  }
  return figures;
}
