/**
 * `npm run bench -- conformance`: wall time of one full `svc conformance receiver` run
 * (every vector, gates, envelope, dedup) against our WebhookReceiver on PostgreSQL, in
 * process, over loopback HTTP. Options: --runs N (default 5, at most 20).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { brandProfile } from '../shared/brand.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { generateSigningKey, publishedJwk } from '../shared/signing/keys.js';
import { nodeListener } from '../receiver/http.js';
import { WebhookReceiver } from '../receiver/pipeline/receiver.js';
import { HandlerPublisher } from '../receiver/publish/handler.js';
import { PgReplayStore } from '../receiver/replay/pg-replay-store.js';
import { gradeReceiver } from '../conformance/grade-receiver/grade-receiver.js';

export async function run(args: string[]): Promise<void> {
  const i = args.indexOf('--runs');
  const runs = Math.min(Math.max(i >= 0 ? Number(args[i + 1]) || 5 : 5, 1), 20);
  const profile = brandProfile('svc');
  const pool = createPool({ connectionString: process.env.DATABASE_URL ?? LOCAL_DATABASE_URL });
  const schema = `bench_conf_${randomBytes(4).toString('hex')}`;
  const { key: ed } = await generateSigningKey('ed25519');
  const { key: es } = await generateSigningKey('ecdsa-p256-sha256');
  const jwks = new Map([ed, es].map((k) => [k.kid, publishedJwk(k, profile)]));
  const replay = new PgReplayStore(pool, { schema });
  const receiver = new WebhookReceiver({
    pool,
    schema,
    profile,
    protocolVersion: '3.2',
    keys: {
      resolve: async (kid) => (jwks.has(kid) ? { jwk: jwks.get(kid)!, senderId: 'bench' } : null),
    },
    replay,
    publisher: new HandlerPublisher(() => {}),
  });
  await replay.migrate();
  await receiver.migrate();
  const server = createServer(nodeListener(receiver));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  try {
    const times: number[] = [];
    let checks = 0;
    let requests = 0;
    for (let n = 0; n < runs; n++) {
      const start = performance.now();
      const report = await gradeReceiver({
        target: url,
        profile,
        protocolVersion: '3.2',
        keys: [ed, es],
      });
      times.push(performance.now() - start);
      checks = report.summary.total;
      requests = report.checks.reduce((s, c) => s + c.exchanges.length, 0);
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)]!;
    process.stdout.write(
      `receiver grading: ${checks} checks, ${requests} recorded exchanges per run; ` +
        `median ${median.toFixed(0)} ms, min ${times[0]!.toFixed(0)} ms over ${runs} runs\n`,
    );
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await replay.stop();
    await receiver.close();
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  }
}
