/**
 * The chaos run: sender workers (`svc worker` processes) deliver events to a receiver that
 * always answers 200, or through the receiver sidecar (`svc receiver`) to an app that fails
 * 10 % of forwards, while workers and the sidecar are SIGKILLed, Redis is flushed and
 * restarted, and PostgreSQL is restarted (`fast` and `immediate`). Everything runs on a
 * private PostgreSQL cluster and Redis on free loopback ports (./services.ts). Killed and
 * exited processes are started again, as a supervisor would.
 *
 * What it measures: events, lost, changed bodies, duplicates and their cause, 500s from the
 * sidecar, time from the last fault to the last delivery, p99 latency (enqueue to first
 * delivery) of events enqueued while faults were being injected, the longest time without
 * any delivery while events were outstanding, peak RSS of each process role.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brandProfile } from '../../shared/brand.js';
import { createPool } from '../../shared/infra/pg.js';
import { createRedis } from '../../shared/infra/redis.js';
import { DeliveryQueue } from '../../sender/delivery/queue.js';
import { KeySet, writeNewKey } from '../../sender/keys/key-set.js';
import { newIdempotencyKey } from '../../sender/outbox/keys.js';
import { Outbox, OutboxError } from '../../sender/outbox/outbox.js';
import { migrateSender } from '../../sender/schema.js';
import { checkRecords, measure, RECEIVER_SCHEMA, type ChaosResult, type Hit } from './measure.js';
import { freePort, startPostgres, startRedis, waitForPostgres } from './services.js';

export { formatResult, type ChaosResult } from './measure.js';

export type Fault =
  | 'kill-worker'
  | 'kill-sidecar'
  | 'flush-redis'
  | 'restart-redis'
  | 'restart-pg-fast'
  | 'restart-pg-immediate';

export interface ChaosOptions {
  /** Events enqueued, spread evenly over `enqueueMs`. */
  events: number;
  enqueueMs: number;
  /** Faults, injected one after another, evenly spaced over the enqueue window. */
  faults: Fault[];
  /** Sender worker processes. */
  workers?: number;
  /** Deliver through `svc receiver` to an app failing `appFailureRate` of forwards. */
  sidecar?: boolean;
  appFailureRate?: number;
  /** How long to wait for the last deliveries after the last fault. */
  drainMs?: number;
  /** How long to wait, after the drain, for nothing in flight before counting records. */
  recordWaitMs?: number;
  log?: (line: string) => void;
}

const repo = fileURLToPath(new URL('../../', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

function rssMb(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** A process kept running: started again (after `restartMs`) whenever it exits. */
class Supervised {
  child: ChildProcess | null = null;
  private stopped = false;
  starts = 0;
  output = '';
  /** Exits we did not cause (code and last output lines). */
  readonly exits: string[] = [];
  /** When each process was ready (its start-up line) until it exited: [ready or null, exited or null]. */
  readonly lives: Array<[number | null, number | null]> = [];

  constructor(
    readonly role: string,
    private readonly args: string[],
    private readonly env: Record<string, string>,
    /** The line a process prints once it serves. */
    private readonly ready: RegExp,
    private readonly restartMs = 300,
  ) {}

  start(): void {
    if (this.stopped) return;
    this.starts++;
    const child = spawn(process.execPath, [join(repo, 'bin/svc.js'), ...this.args], {
      cwd: repo,
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logDir = process.env.CHAOS_LOG_DIR;
    const life: [number | null, number | null] = [null, null];
    this.lives.push(life);
    const keep = (d: Buffer) => {
      if (life[0] === null && this.ready.test(d.toString())) life[0] = Date.now();
      this.output = (this.output + d.toString()).slice(-20_000);
      // CHAOS_LOG_DIR=dir keeps every process's whole output there (with LOG_LEVEL).
      if (logDir) appendFileSync(join(logDir, `${this.role}.log`), d);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.once('exit', (code, signal) => {
      life[1] = Date.now();
      if (signal !== 'SIGKILL' && !this.stopped) {
        this.exits.push(
          `${code ?? signal}: ${this.output.trim().split('\n').slice(-3).join(' | ').slice(0, 400)}`,
        );
      }
      if (this.child === child) this.child = null;
      if (!this.stopped) setTimeout(() => this.start(), this.restartMs).unref();
    });
    this.child = child;
  }

  kill(): boolean {
    const c = this.child;
    if (!c || c.exitCode !== null) return false;
    c.kill('SIGKILL');
    return true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const c = this.child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    const t = setTimeout(() => c.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  }
}

function listen(
  handler: (req: IncomingMessage, body: Buffer) => number,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = handler(req, Buffer.concat(chunks));
      res.writeHead(status).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` }),
    ),
  );
}

const SENDER_ID = 'chaos-seller';

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const log = o.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), 'svc-chaos-'));
  const pgServer = await startPostgres();
  const redisServer = await startRedis();
  const cleanups: Array<() => Promise<unknown> | unknown> = [
    () => pgServer.destroy(),
    () => redisServer.destroy(),
    () => rmSync(dir, { recursive: true, force: true }),
  ];
  try {
    return await chaos(o, log, dir, pgServer, redisServer, cleanups);
  } finally {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => {});
  }
}

async function chaos(
  o: ChaosOptions,
  log: (line: string) => void,
  dir: string,
  pgServer: Awaited<ReturnType<typeof startPostgres>>,
  redisServer: Awaited<ReturnType<typeof startRedis>>,
  cleanups: Array<() => Promise<unknown> | unknown>,
): Promise<ChaosResult> {
  const profile = brandProfile('svc');
  const keysDir = join(dir, 'keys');
  await writeNewKey(keysDir, 'ed25519');
  const jwks = (await KeySet.fromDirectory(keysDir)).jwks(profile);
  const schema = 'chaos';
  const prefix = '{chaos}';
  const pool = createPool({ connectionString: pgServer.url, max: 8 });
  pool.on('error', () => {});
  cleanups.push(() => pool.end());
  await migrateSender(pool, schema);
  const redis = createRedis(redisServer.url);
  redis.on('error', () => {});
  cleanups.push(() => redis.disconnect());
  const queue = new DeliveryQueue({ connection: redis, prefix });
  cleanups.push(() => queue.close());
  const outbox = new Outbox({ pool, queue, schema, dispatchTimeoutMs: 1000 });

  // Where deliveries end: the receiver (always 200), or the app behind the sidecar.
  const hits = new Map<string, Hit[]>();
  let lastHit = 0;
  const record = (body: Buffer) => {
    let key = '';
    try {
      key = (JSON.parse(body.toString()) as { idempotency_key?: string }).idempotency_key ?? '';
    } catch {
      key = `unparsable:${sha(body)}`;
    }
    const at = Date.now();
    lastHit = at;
    const list = hits.get(key) ?? [];
    list.push({ at, body });
    hits.set(key, list);
  };
  const failureRate = o.appFailureRate ?? 0.1;
  const end = await listen((_req, body) => {
    if (o.sidecar && Math.random() < failureRate) return 500;
    record(body);
    return 200;
  });
  cleanups.push(() => new Promise((r) => end.server.close(r)));

  const env = {
    DATABASE_URL: pgServer.url,
    REDIS_URL: redisServer.url,
    SVC_SENDER_ALLOW_HOSTS: '127.0.0.1',
    SVC_BRAND: 'svc',
    LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
  };
  let target = end.url;
  const sidecar: Supervised[] = [];
  if (o.sidecar) {
    const trust = join(dir, 'trust.json');
    writeFileSync(trust, JSON.stringify({ senders: [{ id: SENDER_ID, jwks }] }));
    const port = await freePort();
    const s = new Supervised(
      'sidecar',
      ['receiver', '--listen', `127.0.0.1:${port}`, '--trust', trust, '--forward', end.url],
      { ...env, SVC_RECEIVER_SCHEMA: RECEIVER_SCHEMA },
      /listening on/,
    );
    s.start();
    sidecar.push(s);
    cleanups.push(() => s.stop());
    target = `http://127.0.0.1:${port}/hooks/${SENDER_ID}`;
    await waitFor(
      () => /listening on/.test(s.output),
      30_000,
      () => s.output,
    );
  }
  const workers = Array.from(
    { length: o.workers ?? 2 },
    (_, i) =>
      new Supervised(
        `worker${i}`,
        ['worker', '--keys', keysDir, '--schema', schema, '--prefix', prefix],
        // info: the start-up line tells when the worker serves
        { ...env, LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'info' },
        /delivery worker started/,
      ),
  );
  for (const w of workers) {
    w.start();
    cleanups.push(() => w.stop());
  }
  const peak: Record<string, number> = {};
  const sampler = setInterval(() => {
    for (const p of [...workers, ...sidecar]) {
      const role = p.role.replace(/\d+$/, '');
      peak[role] = Math.max(peak[role] ?? 0, rssMb(p.child?.pid));
    }
  }, 250);
  cleanups.push(() => clearInterval(sampler));

  // Enqueue: one event per call, retried until committed (a retry that finds its key
  // already used was committed by the attempt that seemed to fail).
  const sent = new Map<string, { at: number; body: string }>();
  const enqueueOne = async (n: number) => {
    const key = newIdempotencyKey();
    const payload = {
      idempotency_key: key,
      operation_id: `op_${n}`,
      task_id: `task_${n}`,
      task_type: 'create_media_buy',
      status: 'completed',
      timestamp: new Date().toISOString(),
      result: { media_buy_id: `mb_${n}`, note: 'é ✓ \u2028' },
    };
    const at = Date.now();
    for (;;) {
      try {
        await outbox.enqueue([
          {
            target: { url: target, auth: { mode: 'rfc9421' }, channel: 'task' },
            payload,
            idempotencyKey: key,
            notificationType: 'completed',
          },
        ]);
        break;
      } catch (err) {
        if (err instanceof OutboxError && /already used/.test(err.message)) break;
        await sleep(200);
      }
    }
    sent.set(key, { at, body: JSON.stringify(payload) });
  };

  // The clock starts once every worker serves: events enqueued while none can take them
  // would measure start-up, not recovery.
  await waitFor(
    () => workers.every((w) => w.lives.at(-1)?.[0] != null),
    120_000,
    () => workers.map((w) => w.output).join('\n'),
  );
  const started = Date.now();
  const gapEvery = o.enqueueMs / Math.max(1, o.events);
  const enqueuing = (async () => {
    const inFlight = new Set<Promise<void>>();
    for (let n = 0; n < o.events; n++) {
      const due = started + n * gapEvery;
      if (due > Date.now()) await sleep(due - Date.now());
      const p = enqueueOne(n).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await Promise.all(inFlight);
  })();

  // Faults, evenly spaced inside the enqueue window.
  const faultLog: string[] = [];
  let firstFaultAt = 0;
  let lastFaultEnd = 0;
  const spacing = o.enqueueMs / (o.faults.length + 1);
  for (let i = 0; i < o.faults.length; i++) {
    const due = started + (i + 1) * spacing;
    if (due > Date.now()) await sleep(due - Date.now());
    const f = o.faults[i]!;
    const t0 = Date.now();
    if (!firstFaultAt) firstFaultAt = t0;
    switch (f) {
      case 'kill-worker': {
        // Workers keep capacity: a kill waits (bounded) until every worker serves again,
        // so on a slow machine kills do not outpace start-ups.
        await waitFor(
          () => workers.every((w) => w.lives.at(-1)?.[0] != null),
          60_000,
          () => 'workers to serve again',
        ).catch(() => {});
        // A serving worker when there is one (killing one still starting proves less).
        const serving = workers.filter((w) => w.child && w.lives.at(-1)?.[0] != null);
        const live = serving.length ? serving : workers.filter((w) => w.child);
        live[Math.floor(Math.random() * live.length)]?.kill();
        break;
      }
      case 'kill-sidecar':
        sidecar[0]?.kill();
        break;
      case 'flush-redis':
        await redisServer.flush();
        break;
      case 'restart-redis':
        await redisServer.restart();
        break;
      case 'restart-pg-fast':
        await pgServer.restart('fast');
        break;
      case 'restart-pg-immediate':
        await pgServer.restart('immediate');
        break;
    }
    lastFaultEnd = Date.now();
    const line = `${((t0 - started) / 1000).toFixed(1)}s ${f} (${lastFaultEnd - t0} ms)`;
    faultLog.push(line);
    log(`fault ${line}`);
  }
  await enqueuing;
  await waitForPostgres(pgServer.url);
  log(`enqueued ${sent.size} events in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // Drain: until every event arrived or the drain time is up.
  const drainUntil = Date.now() + (o.drainMs ?? 60_000);
  if (process.env.CHAOS_INSPECT) {
    // Where the events still waiting stand: their row, and their job in Redis.
    await sleep(5000);
    const waiting = [...sent.keys()].filter((k) => !hits.has(k)).slice(0, 6);
    const { rows } = await pool.query(
      `SELECT id::text, idempotency_key, state, attempts, target_url,
              (next_attempt_at - now())::text AS due, created_at
         FROM ${schema}.outbox WHERE idempotency_key = ANY($1)`,
      [waiting],
    );
    for (const r of rows) {
      const job = await queue.getJob(r.id, new URL(r.target_url).origin);
      const state = job ? await job.getState() : 'no row job';
      log(
        `waiting row ${r.id}: ${r.state} attempts ${r.attempts} due in ${r.due}; job ${state}` +
          (job
            ? ` delay ${job.delay} ts ${((job.timestamp - started) / 1000).toFixed(1)}s made ${job.attemptsMade} stalled ${job.stalledCounter} ${job.failedReason ?? ''}`
            : ''),
      );
    }
    const counts = await queue.jobCounts();
    log(`queue: ${JSON.stringify(counts)}`);
  }
  while (Date.now() < drainUntil && [...sent.keys()].some((k) => !hits.has(k))) await sleep(100);
  await sleep(1000); // late duplicates
  // Attempts against records, once dead workers' attempts are closed (lease + reconciler).
  const records = await checkRecords(pool, schema, hits, o.recordWaitMs ?? 30_000);
  const result = await measure(
    o,
    sent,
    hits,
    pool,
    schema,
    {
      firstFaultAt,
      lastFaultEnd,
      lastHit,
      started,
      capacity: capacityOf(workers, sidecar),
    },
    records,
  );
  result.faults = faultLog;
  result.unexpectedExits = [...workers, ...sidecar].flatMap((p) =>
    p.exits.map((e) => `${p.role} ${e}`),
  );
  result.peakRssMb = Object.fromEntries(Object.entries(peak).map(([k, v]) => [k, Math.round(v)]));
  return result;
}

/**
 * How much of [from, to] some worker (and, with a sidecar, the sidecar too) was serving
 * (from its start-up line to its exit): only then can a stretch without deliveries be
 * blamed on recovery rather than on every process being down or starting.
 */
function capacityOf(workers: Supervised[], sidecar: Supervised[]) {
  const up = (group: Supervised[]) =>
    group.flatMap((g) =>
      g.lives.map(
        ([a, b]) => [a ?? Number.POSITIVE_INFINITY, b ?? Number.POSITIVE_INFINITY] as const,
      ),
    );
  const w = up(workers);
  const s = sidecar.length ? up(sidecar) : [[0, Number.POSITIVE_INFINITY] as const];
  return (from: number, to: number): number => {
    let total = 0;
    // 100 ms steps: plenty for figures in seconds.
    for (let t = from; t < to; t += 100) {
      const live = (ivs: ReadonlyArray<readonly [number, number]>) =>
        ivs.some(([a, b]) => a <= t && t < b);
      if (live(w) && live(s)) total += Math.min(100, to - t);
    }
    return total;
  };
}

async function waitFor(cond: () => boolean, ms: number, what: () => string): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`chaos: timed out waiting: ${what().slice(-2000)}`);
    await sleep(50);
  }
}
