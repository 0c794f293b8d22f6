/**
 * The server side of `npm run bench -- receiver`, in its own process so the load generator
 * does not share its event loop. Modes: `floor` (bare Koa answering 200), `library` (Koa +
 * the receiver middleware publishing to an in-process handler), `sidecar` (the sidecar
 * forwarding to APP_URL), `sidecar-2` (two sidecar processes sharing the port, as
 * `svc receiver --workers 2`), `nats`, `amqp`, `redis-stream` (the sidecar publishing to
 * PUBLISH_URL). Prints `READY <port>`; on SIGTERM prints `PUBLISHED <n>`.
 * env: DATABASE_URL, SCHEMA, SENDER_ID, JWK (public), PG_APPLICATION_NAME (for the CPU meter).
 */
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { brandProfile } from '../shared/brand.js';
import { createPool } from '../shared/infra/pg.js';
import type { KeyResolver } from '../shared/signing/verify.js';
import { webhookMiddleware } from '../receiver/koa.js';
import { WebhookReceiver } from '../receiver/pipeline/receiver.js';
import { HandlerPublisher } from '../receiver/publish/handler.js';
import { PgReplayStore } from '../receiver/replay/pg-replay-store.js';
import { Sidecar } from '../receiver/sidecar/server.js';
import { parseTrust } from '../receiver/trust/trust-file.js';
import { startTracing } from '../shared/telemetry/tracing.js';

// Tracing on when the bench passes OTEL_EXPORTER_OTLP_ENDPOINT (`--tracing on|both`).
startTracing('bench-receiver');

const mode = process.argv[2];
const env = process.env;
const profile = brandProfile('svc');
let published = 0;
let count = async (): Promise<number> => published;

function ready(port: number): void {
  if (cluster.isWorker) process.send?.({ ready: port });
  else process.stdout.write(`READY ${port}\n`);
}

if (cluster.isWorker) {
  process.on('message', (m: unknown) => {
    if (m === 'count') void count().then((n) => process.send?.({ published: n }));
  });
}

process.on('SIGTERM', () => {
  void count().then((n) => process.stdout.write(`PUBLISHED ${n}\n`, () => process.exit(0)));
});

if (mode === 'sidecar-2' && cluster.isPrimary) {
  const workers = [cluster.fork(), cluster.fork()];
  let up = 0;
  const counts = new Map<number, number>();
  for (const w of workers) {
    w.on('message', (m: { ready?: number; published?: number }) => {
      if (m.ready !== undefined && ++up === workers.length) ready(m.ready);
      if (m.published !== undefined) counts.set(w.id, m.published);
    });
  }
  count = async () => {
    for (const w of workers) w.send('count');
    const deadline = Date.now() + 3000;
    while (counts.size < workers.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const w of workers) w.process.kill('SIGKILL');
    return [...counts.values()].reduce((a, b) => a + b, 0);
  };
} else if (mode === 'floor') {
  const app = new Koa();
  app.use((ctx) => {
    ctx.status = 200;
    ctx.body = '{"status":"ok"}';
  });
  const server = createServer(app.callback());
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
} else {
  const pool = createPool({
    connectionString: env.DATABASE_URL as string,
    max: 24,
    applicationName: env.PG_APPLICATION_NAME,
  });
  const schema = env.SCHEMA as string;
  const jwk = JSON.parse(env.JWK as string);
  const sender = env.SENDER_ID as string;
  const keys: KeyResolver = {
    resolve: async (kid) => (kid === jwk.kid ? { jwk, senderId: sender } : null),
  };
  const replay = new PgReplayStore(pool, { schema, asyncCommit: true }); // as the sidecar
  await replay.migrate();
  if (mode === 'library') {
    const receiver = new WebhookReceiver({
      pool,
      schema,
      profile,
      protocolVersion: '3.2',
      keys,
      replay,
      publisher: new HandlerPublisher(() => {
        published++;
      }),
    });
    await receiver.migrate();
    const app = new Koa();
    app.use(webhookMiddleware(receiver));
    const server = createServer(app.callback());
    server.keepAliveTimeout = 30_000;
    server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
  } else if (['sidecar', 'sidecar-2', 'nats', 'amqp', 'redis-stream'].includes(mode as string)) {
    const sidecar = await Sidecar.start({
      port: 0,
      trust: parseTrust({ senders: [{ id: sender, jwks: { keys: [jwk] } }] }),
      profile,
      protocolVersion: '3.2',
      target: env.PUBLISH_URL ? { publish: env.PUBLISH_URL } : { forward: env.APP_URL as string },
      pool,
      schema,
      keys,
      replay,
      purgeIntervalMs: 0,
    });
    sidecar.server.keepAliveTimeout = 30_000;
    count = async () =>
      (await sidecar.receiver.metrics.published.get()).values.reduce((a, v) => a + v.value, 0);
    ready(Number(new URL(sidecar.url).port));
  } else {
    process.stderr.write(`unknown mode ${mode}\n`);
    process.exit(2);
  }
}
