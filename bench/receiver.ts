/**
 * `npm run bench -- receiver`: signed deliveries from a load generator (undici, bounded in
 * count and time) against (1) a bare Koa server answering 200 (the floor), (2) the receiver
 * library in a Koa server publishing to an in-process handler, (3) the sidecar forwarding to
 * a local app, also as two worker processes. Each server runs in its own process;
 * deliveries are signed before the clock starts so the generator measures the receiver,
 * not its own signing.
 *
 * Reported: events/s accepted end to end (closed loop, fixed concurrency), and p50/p99
 * latency at a fixed 1,000 deliveries/s (open loop). Every accepted event is verified
 * (Ed25519, durable PostgreSQL replay cache), deduplicated (PostgreSQL claim) and published.
 *
 * Options: --count N (throughput deliveries, default 12000), --seconds S (cap per phase,
 * default 20), --rate R (default 1000), --rate-seconds S (default 8), --concurrency C (64),
 * --modes floor,library,sidecar,sidecar-2,nats,amqp,redis-stream (which targets to run;
 * default all). The last three are the sidecar publishing to the buyer's broker (`--publish`),
 * each durable as a buyer would run it (bench/broker-targets.ts); "in broker" counts what the
 * broker holds afterwards, which must equal "published".
 *
 * --tracing off|on|both (or BENCH_TRACING): on, the server exports its spans over OTLP/HTTP
 * to a loopback sink (bench/otlp-sink.ts) and every delivery carries a traceparent, as from
 * a traced sender; both runs each target twice, off then on, and prints the overhead;
 * `--rounds N` (1 to 9) alternates them N times, flipping the order, and prints medians.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { brandProfile } from '../shared/brand.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { generateSigningKey, publishedJwk, type SigningKey } from '../shared/signing/keys.js';
import { signWebhook } from '../shared/signing/sign.js';
import { BROKER_MODES, brokerTargets, type BrokerMode } from './broker-targets.js';
import { CpuMeter, type CpuPerEvent } from './cpu-meter.js';
import {
  median,
  overhead,
  roundsOf,
  startOtlpSink,
  tracingEnv,
  tracingModes,
} from './otlp-sink.js';
import { randomBytes } from 'node:crypto';

const profile = brandProfile('svc');
const SERVER = fileURLToPath(new URL('./receiver-server.ts', import.meta.url));

interface Opts {
  count: number;
  seconds: number;
  rate: number;
  rateSeconds: number;
  concurrency: number;
  modes: string[];
}

const MODES = ['floor', 'library', 'sidecar', 'sidecar-2', ...BROKER_MODES];

function parseArgs(args: string[]): Opts {
  const get = (name: string, dflt: number) => {
    const i = args.indexOf(`--${name}`);
    const v = i >= 0 ? Number(args[i + 1]) : dflt;
    if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
    return v;
  };
  return {
    count: Math.min(get('count', 12_000), 200_000),
    seconds: Math.min(get('seconds', 20), 120),
    rate: Math.min(get('rate', 1000), 20_000),
    rateSeconds: Math.min(get('rate-seconds', 8), 60),
    concurrency: Math.min(get('concurrency', 64), 512),
    modes: modesArg(args),
  };
}

function modesArg(args: string[]): string[] {
  const i = args.indexOf('--modes');
  if (i < 0) return MODES;
  const modes = String(args[i + 1] ?? '').split(',');
  const bad = modes.filter((m) => !MODES.includes(m));
  if (bad.length) throw new Error(`--modes takes a comma list of ${MODES.join(', ')}`);
  return modes;
}

interface Prepared {
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

let seq = 0;
function prepare(origin: string, key: SigningKey, n: number, traced = false): Prepared[] {
  const out: Prepared[] = [];
  const path = '/webhooks/bench';
  for (let i = 0; i < n; i++) {
    seq++;
    const body = Buffer.from(
      JSON.stringify({
        idempotency_key: `bench_${process.pid}_${seq.toString(36).padStart(10, '0')}`,
        operation_id: 'op_bench',
        task_id: `task_${seq % 5000}`,
        task_type: 'media_buy_delivery',
        status: 'working',
        timestamp: new Date(Date.UTC(2026, 0, 1) + seq).toISOString(),
        result: { notification_type: 'scheduled', sequence_number: seq },
      }),
    );
    const headers = signWebhook({ method: 'POST', url: origin + path, body }, { key, profile });
    // As a traced sender's attempt: its own span id, outside the signature.
    if (traced) {
      headers.traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
    }
    out.push({ path, headers, body });
  }
  return out;
}

async function startServer(
  mode: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; origin: string; stop(): Promise<number> }> {
  // RECEIVER_BENCH_PROF=<dir>: CPU profiles of the server processes, for optimisation work.
  const prof = process.env.RECEIVER_BENCH_PROF;
  const flags = prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [];
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', SERVER, mode], {
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${mode} server did not start`)), 30_000);
    const check = () => {
      const m = /READY (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout?.on('data', check);
    child.on('exit', () => reject(new Error(`${mode} server exited: ${out}`)));
  });
  return {
    child,
    origin: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<number>((resolve) => {
        child.once('exit', () => resolve(Number(/PUBLISHED (\d+)/.exec(out)?.[1] ?? 0)));
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
      }),
  };
}

async function send(pool: Pool, p: Prepared): Promise<number> {
  const res = await pool.request({
    method: 'POST',
    path: p.path,
    headers: p.headers,
    body: p.body,
  });
  await res.body.dump();
  return res.statusCode;
}

/** Closed loop: `concurrency` workers until the list or the time runs out. */
async function throughput(pool: Pool, items: Prepared[], concurrency: number, seconds: number) {
  let next = 0;
  let ok = 0;
  let other = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length && performance.now() < deadline) {
        const p = items[next++] as Prepared;
        try {
          if ((await send(pool, p)) === 200) ok++;
          else other++;
        } catch {
          other++;
        }
      }
    }),
  );
  const secs = (performance.now() - start) / 1000;
  return { ok, other, secs, perSec: ok / secs };
}

/** Open loop at a fixed rate: latency of each delivery from its scheduled send time. */
async function fixedRate(pool: Pool, items: Prepared[], rate: number) {
  const lat: number[] = [];
  let other = 0;
  const start = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < items.length; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const t0 = performance.now();
    inflight.push(
      send(pool, items[i] as Prepared).then(
        (status) => {
          if (status === 200) lat.push(performance.now() - t0);
          else other++;
        },
        () => {
          other++;
        },
      ),
    );
  }
  await Promise.all(inflight);
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN;
  return { p50: q(0.5), p99: q(0.99), ok: lat.length, other };
}

function cpuColumns(cpu: CpuPerEvent): string[] {
  const f = (v: number | null) => (v === null ? '-' : v.toFixed(0));
  return [f(cpu.server), f(cpu.database), f(cpu.loadGenerator)];
}

interface TargetFigures {
  perSec: number;
  p99: number;
  cpu: number | null;
}

const LABELS: Record<string, string> = {
  floor: 'bare Koa 200 (floor)',
  library: 'library (Koa, handler)',
  sidecar: 'sidecar (forward)',
  'sidecar-2': 'sidecar, 2 workers (forward)',
  nats: 'sidecar (NATS JetStream)',
  amqp: 'sidecar (RabbitMQ)',
  'redis-stream': 'sidecar (Redis stream, AOF)',
};

interface Run {
  o: Opts;
  env: Record<string, string>;
  key: SigningKey;
  admin: ReturnType<typeof createPool>;
  schema: string;
  appUrl: string;
  brokers: Awaited<ReturnType<typeof brokerTargets>>;
  sink: Awaited<ReturnType<typeof startOtlpSink>> | null;
}

let runs = 0;

/** One target, tracing off or on, in a fresh server process: its table row and figures. */
async function runTarget(
  r: Run,
  mode: string,
  on: boolean,
): Promise<{ cells: string[]; figures: TargetFigures }> {
  const isBroker = (m: string): m is BrokerMode => (BROKER_MODES as readonly string[]).includes(m);
  // Each run starts from an empty receiver, as a run on the base does: state left by earlier
  // runs (their keys, the signing key's replay cache near its per-keyid cap) would skew it.
  const schema = `${r.schema}_${++runs}`;
  const server = await startServer(mode, {
    ...r.env,
    SCHEMA: schema,
    PG_APPLICATION_NAME: schema,
    APP_URL: r.appUrl,
    ...(isBroker(mode) ? { PUBLISH_URL: r.brokers.url(mode) } : {}),
    ...(on && r.sink ? tracingEnv(r.sink) : {}),
  });
  const pool = new Pool(server.origin, { connections: r.o.concurrency, keepAliveTimeout: 30_000 });
  try {
    const warm = prepare(server.origin, r.key, 500, on);
    await throughput(pool, warm, 16, 10);
    const items = prepare(server.origin, r.key, r.o.count, on);
    const meter = await CpuMeter.start(server.child.pid as number, r.admin, schema);
    const tp = await throughput(pool, items, r.o.concurrency, r.o.seconds);
    const cpu = await meter.perEvent(tp.ok);
    const fixed = prepare(server.origin, r.key, Math.round(r.o.rate * r.o.rateSeconds), on);
    const lat = await fixedRate(pool, fixed, r.o.rate);
    const published = await server.stop();
    const held = isBroker(mode) ? String(await r.brokers.count(mode)) : '-';
    return {
      cells: [
        tp.perSec.toFixed(0),
        String(tp.ok),
        String(tp.other + lat.other),
        lat.p50.toFixed(2),
        lat.p99.toFixed(2),
        mode === 'floor' ? '-' : String(published),
        held,
        ...cpuColumns(cpu),
      ],
      figures: { perSec: tp.perSec, p99: lat.p99, cpu: cpu.server },
    };
  } finally {
    await pool.close();
    server.child.kill('SIGKILL');
    await dropSchema(r.admin, schema).catch(() => {});
  }
}

export async function run(argv: string[]): Promise<void> {
  const { modes: tracing, rest: afterTracing } = tracingModes(argv);
  const { rounds, rest: args } = roundsOf(afterTracing);
  const o = parseArgs(args);
  const sink = tracing.includes('on') ? await startOtlpSink() : null;
  const figures = new Map<string, TargetFigures[]>();
  const databaseUrl = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;
  const admin = createPool({ connectionString: databaseUrl, max: 2 });
  const schema = `bench_receiver_${process.pid}`;
  const { key } = await generateSigningKey('ed25519', `bench-${process.pid}`);
  const jwk = publishedJwk(key, profile);
  const env = {
    DATABASE_URL: databaseUrl,
    JWK: JSON.stringify(jwk),
    SENDER_ID: 'bench-seller',
  };

  // The app behind the sidecar: answers 200 to every forwarded event.
  let appHits = 0;
  const app = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      appHits++;
      res.writeHead(200).end();
    });
  });
  app.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/events`;

  const brokers = await brokerTargets(o.modes, String(process.pid));
  const ctx: Run = { o, env, key, admin, schema, appUrl, brokers, sink };
  const rows: string[][] = [];
  try {
    for (const mode of o.modes)
      // With both and --rounds N: off and on alternate, the order flipped each round, so a
      // drift in the machine's load falls on both sides alike; the overhead is of medians.
      for (let round = 0; round < rounds; round++)
        for (const tr of round % 2 === 0 ? tracing : [...tracing].reverse()) {
          const out = await runTarget(ctx, mode, tr === 'on');
          const key = `${mode} ${tr}`;
          figures.set(key, [...(figures.get(key) ?? []), out.figures]);
          const label =
            LABELS[mode]! +
            (tracing.length > 1 || tr === 'on' ? `, tracing ${tr}` : '') +
            (rounds > 1 ? `, round ${round + 1}` : '');
          rows.push([label, ...out.cells]);
        }
  } finally {
    await new Promise<void>((r) => app.close(() => r()));
    app.closeAllConnections();
    await brokers.close();
    await sink?.close();
    await admin.end();
  }
  const head = [
    'target',
    'events/s',
    'accepted',
    'non-200',
    `p50 ms @${o.rate}/s`,
    `p99 ms @${o.rate}/s`,
    'published',
    'in broker',
    'CPU µs/event: server',
    'database',
    'bench',
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`;
  process.stdout.write(
    [
      `throughput: ${o.count} signed deliveries max, concurrency ${o.concurrency}, cap ${o.seconds}s; latency: ${o.rate}/s for ${o.rateSeconds}s`,
      line(head),
      `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
      ...rows.map(line),
      `app behind the sidecar received ${appHits} events`,
      'CPU µs/event: CPU time per accepted event in the throughput phase, of the server process(es), of its PostgreSQL backends, and of this process (load generator and the app behind the sidecar); it holds when other work shares the machine, events/s and latency do not.',
      '',
    ].join('\n'),
  );
  if (tracing.length > 1) process.stdout.write(overheadTable(o.modes, figures, rounds));
}

/** Tracing on against off per target: events/s, p99 and the server's CPU per event. */
function overheadTable(
  modes: string[],
  runs: Map<string, TargetFigures[]>,
  rounds: number,
): string {
  const med = median;
  const medianOf = (xs: TargetFigures[] | undefined): TargetFigures | undefined =>
    xs?.length
      ? {
          perSec: med(xs.map((x) => x.perSec)),
          p99: med(xs.map((x) => x.p99)),
          cpu: xs.some((x) => x.cpu === null) ? null : med(xs.map((x) => x.cpu as number)),
        }
      : undefined;
  const lines = [
    `tracing overhead (on vs off${rounds > 1 ? `, medians of ${rounds} alternating rounds` : ''}; CPU per event is the figure that holds on a shared machine):`,
    '| target | events/s off → on | Δ | p99 ms off → on | server CPU µs/event off → on | Δ |',
    '|---|---|---|---|---|---|',
  ];
  for (const mode of modes) {
    const off = medianOf(runs.get(`${mode} off`));
    const on = medianOf(runs.get(`${mode} on`));
    if (!off || !on) continue;
    const cpu = (v: number | null) => (v === null ? '-' : v.toFixed(0));
    lines.push(
      `| ${mode} | ${off.perSec.toFixed(0)} → ${on.perSec.toFixed(0)} | ${overhead(off.perSec, on.perSec, true)} | ` +
        `${off.p99.toFixed(2)} → ${on.p99.toFixed(2)} | ${cpu(off.cpu)} → ${cpu(on.cpu)} | ` +
        `${off.cpu !== null && on.cpu !== null ? overhead(off.cpu, on.cpu, false) : '-'} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
