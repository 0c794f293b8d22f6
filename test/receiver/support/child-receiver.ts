/**
 * A receiver in its own process, for the crash test: it claims a delivery, starts (or
 * finishes part of) the publication, says so on stdout, then hangs until it is SIGKILLed.
 * env: DATABASE_URL, SCHEMA, SENDER_ID, JWK (public, published), MODE (block | queue), LEASE_MS.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brandProfile } from '../../../shared/brand.js';
import { createPool } from '../../../shared/infra/pg.js';
import { nodeListener } from '../../../receiver/http.js';
import { WebhookReceiver } from '../../../receiver/pipeline/receiver.js';
import { DurableQueue } from '../../../receiver/publish/queue.js';
import type { Publisher } from '../../../receiver/publish/types.js';
import { MemoryReplayStore } from './fixtures.js';

const env = process.env;
// Run by crash.test.ts only; a test runner globbing this folder gets a no-op.
if (env.CHILD_RECEIVER !== '1') process.exit(0);
const pool = createPool({ connectionString: env.DATABASE_URL as string, max: 4 });
const jwk = JSON.parse(env.JWK as string);
const queue = new DurableQueue({ pool, schema: env.SCHEMA, queue: 'crash' });
const hang = () => new Promise<void>(() => {});
const publisher: Publisher = {
  async publish(e) {
    if (env.MODE === 'queue') {
      await queue.publish(e);
      process.stdout.write('ENQUEUED\n');
    } else {
      process.stdout.write('PUBLISHING\n');
    }
    await hang();
  },
};
const receiver = new WebhookReceiver({
  pool,
  schema: env.SCHEMA,
  profile: brandProfile('svc'),
  protocolVersion: '3.2',
  keys: {
    resolve: async (kid) => (kid === jwk.kid ? { jwk, senderId: env.SENDER_ID as string } : null),
  },
  replay: new MemoryReplayStore(),
  publisher,
  leaseMs: Number(env.LEASE_MS),
});
await receiver.migrate();
const server = createServer(nodeListener(receiver));
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`PORT ${(server.address() as AddressInfo).port}\n`);
});
