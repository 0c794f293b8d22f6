/**
 * `npm run bench -- tracing [deliveries per round] [rounds]`: what tracing costs in CPU, off
 * against on, alternating rounds in one process so both see the same machine (CPU time per
 * delivery holds on a shared machine; wall-clock figures do not).
 *
 * - receiver: the real pipeline (`WebhookReceiver.handle`: gate, Ed25519 verification, strict
 *   parse, envelope, claim in the in-memory store, publish to a no-op handler), 32 in flight,
 *   each request with a traceparent as from a traced sender; signatures made before the clock.
 * - sender: the tracing work of one delivery alone, each process's part measured on its own:
 *   the emit (its span, the carrier into the job data as JSON), then the worker (the attempt
 *   span from the job's carrier, its traceparent, the settle timed on it), the worker's set
 *   against the CPU per delivery `npm run bench -- sender` measures (that bench's
 *   `--tracing=both` gives the end-to-end view: worker and emit CPU per delivery off and on).
 *
 * "on" is `startTracing` as the commands run it: OTLP/HTTP to a collector stand-in in a
 * child process (so its CPU is not counted), the batch processor flushed at each phase's
 * end so the export is counted, its queue large enough that no span is dropped. Reported:
 * CPU µs per delivery over the rounds, median and min.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { brandProfile } from '../shared/brand.js';
import { silentLogger } from '../shared/infra/logger.js';
import { generateSigningKey, publishedJwk } from '../shared/signing/keys.js';
import { signWebhook } from '../shared/signing/sign.js';
import type { ReplayStore } from '../shared/signing/verify.js';
import { SpanKind } from '@opentelemetry/api';
import { contextOf, inSpan, timedOnSpan, traceCarrier } from '../shared/telemetry/trace-context.js';
import { startTracing } from '../shared/telemetry/tracing.js';
import { WebhookReceiver } from '../receiver/pipeline/receiver.js';
import { HandlerPublisher } from '../receiver/publish/handler.js';
import { MemoryDeliveryStore } from '../receiver/store/memory/memory-delivery-store.js';
import type { Pool } from '../shared/infra/pg.js';

const profile = brandProfile('svc');

class NonceSet implements ReplayStore {
  private readonly seenSet = new Set<string>();
  async atCap() {
    return false;
  }
  async seen(k: string, n: string) {
    return this.seenSet.has(`${k} ${n}`);
  }
  async insert(k: string, n: string): Promise<'inserted' | 'replayed' | 'cap'> {
    const key = `${k} ${n}`;
    if (this.seenSet.has(key)) return 'replayed';
    this.seenSet.add(key);
    return 'inserted';
  }
}

/** A collector stand-in in its own process: answers 200 to every export. */
async function collector(): Promise<{ url: string; stop(): void }> {
  // An empty ExportTraceServiceResponse in the request's encoding (protobuf: no bytes).
  const code = `require('http').createServer((q,s)=>{q.resume();q.on('end',()=>s.end(/json/.test(q.headers['content-type'])?'{}':''))})
    .listen(0,'127.0.0.1',function(){process.stdout.write(String(this.address().port)+'\\n')})`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) =>
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())),
  );
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
}

function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function receiverRound(
  n: number,
  tracing: { flush(): Promise<void> } | null = null,
): Promise<number> {
  const { key } = await generateSigningKey('ed25519', `bench-${randomBytes(3).toString('hex')}`);
  const jwk = publishedJwk(key, profile);
  const receiver = new WebhookReceiver({
    pool: null as unknown as Pool,
    store: new MemoryDeliveryStore({ protocolVersion: '3.2', maxKeysPerSender: n * 2 }),
    profile,
    protocolVersion: '3.2',
    keys: { resolve: async (kid) => (kid === key.kid ? { jwk, senderId: 'seller' } : null) },
    replay: new NonceSet(),
    publisher: new HandlerPublisher(async () => {}),
    logger: silentLogger,
  });
  const url = 'http://127.0.0.1:8787/webhooks';
  const requests = Array.from({ length: n }, (_, i) => {
    const body = Buffer.from(
      JSON.stringify({
        idempotency_key: `whk_${randomBytes(12).toString('hex')}`,
        operation_id: 'op',
        task_id: `task_${i}`,
        task_type: 'create_media_buy',
        status: 'working',
        timestamp: new Date(Date.UTC(2026, 0, 1) + i).toISOString(),
      }),
    );
    const headers: Record<string, string> = {
      ...signWebhook({ method: 'POST', url, body }, { key, profile }),
      host: '127.0.0.1:8787',
      traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`,
    };
    return { method: 'POST', url, headers, body };
  });
  let next = 0;
  let ok = 0;
  const before = cpuMicros();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < n) if ((await receiver.handle(requests[next++]!)).status === 200) ok++;
    }),
  );
  // The export of what the round made is part of its cost.
  if (tracing) await tracing.flush();
  const spent = cpuMicros() - before;
  if (ok !== n) throw new Error(`receiver round: ${ok} of ${n} accepted`);
  return spent / n;
}

/** The emit's span (the agents' process; it covers the outbox) and the job's carrier. */
async function emitOne(): Promise<string> {
  return inSpan('webhook.emit', { attributes: { 'webhook.task_id': 't' } }, async (span, emit) => {
    // Through Redis: the job data is JSON.
    const job = JSON.stringify({ id: '1', origin: 'o', trace: traceCarrier(emit) });
    span.setAttribute('webhook.events', 1);
    return job;
  });
}

/** The worker's part of one delivery, as sender/delivery/worker.ts makes it. */
async function attemptOne(jobData: string): Promise<void> {
  const job = JSON.parse(jobData) as { trace?: Record<string, string> };
  await inSpan(
    'webhook.attempt',
    {
      parent: contextOf(job.trace),
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        'webhook.outbox_id': '1',
        'webhook.origin': 'o',
        'webhook.attempt': 1,
        'webhook.notification_type': 'task_status',
      },
    },
    async (span, a) => {
      const headers = { 'content-type': 'application/json', ...traceCarrier(a) };
      if (span.isRecording()) {
        span.setAttribute('http.response.status_code', 200);
        span.setAttribute('webhook.verdict', 'delivered');
      }
      await timedOnSpan(
        'webhook.settle',
        a,
        async () => headers,
        () => ({
          'webhook.state': 'delivered',
        }),
      );
    },
  );
}

type Phase = 'receiver' | 'emit' | 'worker';

/** One phase's CPU µs per delivery, its export (a flush) counted when tracing is on. */
async function measured(
  tracing: { flush(): Promise<void> } | null,
  n: number,
  work: () => Promise<void>,
): Promise<number> {
  const before = cpuMicros();
  await work();
  if (tracing) await tracing.flush();
  return (cpuMicros() - before) / n;
}

export async function run(args: string[]): Promise<void> {
  const n = Math.min(Math.max(Number(args[0] ?? 3000) || 3000, 100), 50_000);
  const rounds = Math.min(Math.max(Number(args[1] ?? 5) || 5, 1), 20);
  const sink = await collector();
  // A queue that holds a whole round: a span dropped for a full queue would be one never
  // exported, and its export cost never counted.
  process.env.OTEL_BSP_MAX_QUEUE_SIZE = String(4 * n);
  const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_SERVICE_NAME: 'bench' };
  const phases: Phase[] = ['receiver', 'emit', 'worker'];
  const figures = Object.fromEntries(
    phases.map((p) => [p, { off: [] as number[], on: [] as number[] }]),
  ) as Record<Phase, { off: number[]; on: number[] }>;
  try {
    // Warm-up (JIT) of both paths, not counted.
    await receiverRound(500);
    await senderPhases(null, 500);
    for (let r = 0; r < rounds; r++) {
      // Each round flips the order, so a drift of the machine's load favours neither.
      for (const mode of r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
        const tracing = mode === 'on' ? startTracing('bench-tracing', env) : null;
        if (mode === 'on' && !tracing) throw new Error('tracing did not start');
        figures.receiver[mode].push(await receiverRound(n, tracing));
        const sender = await senderPhases(tracing, n);
        figures.emit[mode].push(sender.emit);
        figures.worker[mode].push(sender.worker);
        await tracing?.shutdown();
      }
    }
  } finally {
    sink.stop();
  }
  report(figures, n, rounds);
}

/** The sender's two processes' tracing work, each phase measured on its own. */
async function senderPhases(
  tracing: { flush(): Promise<void> } | null,
  n: number,
): Promise<{ emit: number; worker: number }> {
  const jobs: string[] = [];
  const emit = await measured(tracing, n, async () => {
    for (let i = 0; i < n; i += 32) {
      jobs.push(...(await Promise.all(Array.from({ length: Math.min(32, n - i) }, emitOne))));
    }
  });
  const worker = await measured(tracing, n, async () => {
    for (let i = 0; i < n; i += 32) await Promise.all(jobs.slice(i, i + 32).map(attemptOne));
  });
  return { emit, worker };
}

function report(
  figures: Record<Phase, { off: number[]; on: number[] }>,
  n: number,
  rounds: number,
): void {
  const stat = (xs: number[]) => ({ median: median(xs), min: Math.min(...xs) });
  const f = (p: Phase) => ({ off: stat(figures[p].off), on: stat(figures[p].on) });
  const r = f('receiver');
  const e = f('emit');
  const w = f('worker');
  const pct = (added: number, base: number) => `${((added / base) * 100).toFixed(1)} %`;
  const senderBase = 1e6 / 4200;
  const row = (
    name: string,
    x: ReturnType<typeof f>,
    base: (k: 'median' | 'min') => number,
    baseName: string,
  ) =>
    (['median', 'min'] as const)
      .map(
        (k) =>
          `| ${name} (${k}) | ${x.off[k].toFixed(1)} | ${x.on[k].toFixed(1)} | ${(x.on[k] - x.off[k]).toFixed(1)} µs | ${pct(x.on[k] - x.off[k], base(k))}${baseName} |`,
      )
      .join('\n');
  process.stdout.write(
    [
      `${rounds} rounds of ${n} deliveries each way, alternating; CPU µs per delivery (median and min over rounds: the min is the figure a busy machine disturbs least)`,
      '| path | off | on | tracing adds | overhead |',
      '|---|---|---|---|---|',
      row('receiver pipeline: one span (verify, claim, publish)', r, (k) => r.off[k], ''),
      row(
        'sender worker: tracing work alone (the attempt span, its carrier)',
        w,
        () => senderBase,
        ` of ${senderBase.toFixed(0)} µs`,
      ),
      `| sender emit: tracing work alone (the emit span, the job's carrier), in the agents' process | ${e.off.median.toFixed(1)} | ${e.on.median.toFixed(1)} | ${(e.on.median - e.off.median).toFixed(1)} µs | (beside a task's status change) |`,
      `(the worker's base: one worker core at 4,200 deliveries/s, sender/README.md, so at least ${senderBase.toFixed(0)} µs of worker CPU per delivery)`,
      '',
    ].join('\n'),
  );
}
