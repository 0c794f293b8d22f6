/**
 * The whole seller side in-process (startAgentsService: real PostgreSQL, Redis, sender
 * worker, agents on 127.0.0.1 port 0, unique schemas and queue prefix) and a buyer's
 * WebhookReceiver that verifies every delivery against the seller's published JWKS.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../../shared/config.js';
import { brandProfile } from '../../../shared/brand.js';
import { silentLogger } from '../../../shared/infra/logger.js';
import { createRedis } from '../../../shared/infra/redis.js';
import { dropSchema } from '../../../shared/infra/pg.js';
import { nodeListener } from '../../../receiver/http.js';
import { TrustedKeyResolver } from '../../../receiver/keys/trusted-key-resolver.js';
import { WebhookReceiver } from '../../../receiver/pipeline/receiver.js';
import { HandlerPublisher } from '../../../receiver/publish/handler.js';
import type { ReceivedEvent } from '../../../receiver/publish/types.js';
import { PgReplayStore } from '../../../receiver/replay/pg-replay-store.js';
import {
  startAgentsService,
  type AgentsService,
  type AgentsServiceOptions,
} from '../../../agents/server/seller-process.js';
import { DATABASE_URL, REDIS_URL, testDatabase, uniqueName } from '../../helpers/db.js';

interface T {
  teardown(fn: () => unknown): void;
}

export async function startService(
  t: T,
  env: Record<string, string> = {},
  options: Pick<AgentsServiceOptions, 'settings' | 'announceDevLoginCode'> = {},
): Promise<{ service: AgentsService; agentsSchema: string; senderSchema: string; prefix: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'g2-e2e-'));
  const config = loadConfig({
    DATABASE_URL,
    REDIS_URL,
    SVC_DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    SVC_AGENTS_APPROVAL: 'manual',
    SVC_CHANNEL_TICK_MS: '100',
    ...env,
  });
  const agentsSchema = uniqueName('g2a');
  const senderSchema = uniqueName('g2s');
  const prefix = `{${uniqueName('g2q')}}`;
  const service = await startAgentsService({
    config,
    logger: silentLogger,
    ports: { sales: 0, creative: 0, signals: 0 },
    agentsSchema,
    senderSchema,
    queuePrefix: prefix,
    keysDir: join(dataDir, 'keys'),
    allowHosts: ['127.0.0.1'],
    pollIntervalMs: 50,
    ...options,
  });
  t.teardown(async () => {
    await service.stop();
    const { createPool } = await import('../../../shared/infra/pg.js');
    const pool = createPool({ connectionString: DATABASE_URL, max: 1 });
    await dropSchema(pool, agentsSchema).catch(() => {});
    await dropSchema(pool, senderSchema).catch(() => {});
    await pool.end();
    const redis = createRedis(REDIS_URL);
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
    redis.disconnect();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { service, agentsSchema, senderSchema, prefix };
}

export interface BuyerReceiver {
  url: string;
  events: ReceivedEvent[];
  waitFor(pred: (e: ReceivedEvent[]) => boolean, timeoutMs?: number): Promise<void>;
}

/** Our WebhookReceiver trusting the seller's JWKS URL (loopback allowed for the test). */
export async function buyerReceiver(t: T, jwksUri: string): Promise<BuyerReceiver> {
  const db = testDatabase(t, 'g2r');
  const replay = new PgReplayStore(db.pool, { schema: db.schema });
  await replay.migrate();
  const events: ReceivedEvent[] = [];
  const receiver = new WebhookReceiver({
    pool: db.pool,
    schema: db.schema,
    profile: brandProfile('svc'),
    protocolVersion: '3.2',
    keys: new TrustedKeyResolver([{ id: 'seller', jwks_uri: jwksUri }], { allowLoopback: true }),
    replay,
    publisher: new HandlerPublisher((e) => {
      events.push(e);
    }),
  });
  await receiver.migrate();
  const server = createServer(nodeListener(receiver));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    events,
    waitFor: (pred, timeoutMs = 20_000) => until(() => pred(events), timeoutMs),
  };
}

export async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 20_000) {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
