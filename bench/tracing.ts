/**
 * `npm run bench -- tracing [deliveries per round] [rounds]`: what tracing costs in CPU, off
 * against on, alternating rounds in one process so both see the same machine (CPU time per
 * delivery holds on a shared machine; wall-clock figures do not).
 *
 * - receiver: the real pipeline (`WebhookReceiver.handle`: gate, Ed25519 verification, strict
 *   parse, envelope, claim in the in-memory store, publish to a no-op handler), 32 in flight,
 *   each request with a traceparent as from a traced sender; signatures made before the clock.
 * - sender: the tracing work of one delivery alone (emit, outbox, the carrier through job
 *   data as JSON, dispatch, attempt with its traceparent, settle), set against the worker's
 *   CPU per delivery that `npm run bench -- sender` implies.
 *
 * "on" is `startTracing` as the commands run it: OTLP/HTTP to a collector stand-in in a
 * child process (so its CPU is not counted), the batch processor flushed at each round's
 * end so the export is counted. Reported: median CPU µs per delivery over the rounds.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { brandProfile } from '../shared/brand.js';
import { silentLogger } from '../shared/infra/logger.js';
import { generateSigningKey, publishedJwk } from '../shared/signing/keys.js';
import { signWebhook } from '../shared/signing/sign.js';
import type { ReplayStore } from '../shared/signing/verify.js';
import { contextOf, inEvent, inSpan, traceCarrier } from '../shared/telemetry/trace-context.js';
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
  const code = `require('http').createServer((q,s)=>{q.resume();q.on('end',()=>s.end('{}'))})
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

async function receiverRound(n: number): Promise<number> {
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
  const spent = cpuMicros() - before;
  if (ok !== n) throw new Error(`receiver round: ${ok} of ${n} accepted`);
  return spent;
}

/** The spans and carriers of one delivery on the sender, as the real code makes them. */
async function senderDelivery(): Promise<void> {
  await inSpan('webhook.emit', { attributes: { 'webhook.task_id': 't' } }, async (_s, emit) => {
    const fromEmit = traceCarrier(emit);
    await inSpan('webhook.outbox', { parent: contextOf(fromEmit as never) }, async (_o, out) => {
      // Through Redis: the job data is JSON.
      const job = JSON.parse(JSON.stringify({ id: '1', origin: 'o', trace: traceCarrier(out) }));
      await inSpan('webhook.dispatch', { parent: contextOf(job.trace) }, async (_d, d) => {
        await inSpan('webhook.attempt', { parent: d }, async (span, a) => {
          const headers = { 'content-type': 'application/json', ...traceCarrier(a) };
          span.setAttribute('http.response.status_code', 200);
          span.setAttribute('webhook.verdict', 'delivered');
          return headers;
        });
        await inEvent('webhook.settle', d, { 'webhook.state': 'delivered' }, async () => {});
      });
    });
  });
}

async function senderRound(n: number): Promise<number> {
  const before = cpuMicros();
  for (let i = 0; i < n; i += 32) {
    await Promise.all(Array.from({ length: Math.min(32, n - i) }, () => senderDelivery()));
  }
  return cpuMicros() - before;
}

export async function run(args: string[]): Promise<void> {
  const n = Math.min(Math.max(Number(args[0] ?? 3000) || 3000, 100), 50_000);
  const rounds = Math.min(Math.max(Number(args[1] ?? 5) || 5, 1), 20);
  const sink = await collector();
  const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_SERVICE_NAME: 'bench' };
  const figures = {
    receiver: { off: [] as number[], on: [] as number[] },
    sender: { off: [] as number[], on: [] as number[] },
  };
  try {
    // Warm-up (JIT) of both paths, both ways, not counted.
    await receiverRound(500);
    await senderRound(500);
    for (let r = 0; r < rounds; r++) {
      // Each round flips the order, so a drift of the machine's load favours neither.
      for (const mode of r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
        const tracing = mode === 'on' ? startTracing('bench-tracing', env) : null;
        if (mode === 'on' && !tracing) throw new Error('tracing did not start');
        let cpu = await receiverRound(n);
        let s = await senderRound(n);
        if (tracing) {
          // The export of what the round made is part of its cost.
          const before = cpuMicros();
          await tracing.flush();
          const flushCpu = cpuMicros() - before;
          // Shared by the two halves in proportion to their spans (5 each).
          cpu += flushCpu / 2;
          s += flushCpu / 2;
          await tracing.shutdown();
        }
        figures.receiver[mode].push(cpu / n);
        figures.sender[mode].push(s / n);
      }
    }
  } finally {
    sink.stop();
  }
  const r = { off: median(figures.receiver.off), on: median(figures.receiver.on) };
  const s = { off: median(figures.sender.off), on: median(figures.sender.on) };
  const pct = (a: number, b: number) => `${(((b - a) / a) * 100).toFixed(1)} %`;
  const spread = (xs: number[]) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;
  process.stdout.write(
    `rounds (min-max µs): receiver off ${spread(figures.receiver.off)}, on ${spread(figures.receiver.on)}; ` +
      `sender off ${spread(figures.sender.off)}, on ${spread(figures.sender.on)}\n`,
  );
  const senderBase = 1e6 / 4200;
  process.stdout.write(
    [
      `${rounds} rounds of ${n} deliveries each way, alternating; median CPU µs per delivery`,
      '| path | off | on | tracing adds | overhead |',
      '|---|---|---|---|---|',
      `| receiver pipeline (verify, claim, publish) | ${r.off.toFixed(1)} | ${r.on.toFixed(1)} | ${(r.on - r.off).toFixed(1)} µs | ${pct(r.off, r.on)} |`,
      `| sender: tracing work alone (4 spans, a settle event, 2 carriers) | ${s.off.toFixed(1)} | ${s.on.toFixed(1)} | ${(s.on - s.off).toFixed(1)} µs | ${(((s.on - s.off) / senderBase) * 100).toFixed(1)} % of ${senderBase.toFixed(0)} µs |`,
      `(the sender's base: one worker core at 4,200 deliveries/s, sender/README.md, so at least ${senderBase.toFixed(0)} µs of worker CPU per delivery; the emit's two spans run in the agents' process, not the worker's)`,
      '',
    ].join('\n'),
  );
}
