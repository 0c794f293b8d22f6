// A buyer's webhook receiver in plain JavaScript with node:http.
//   npm install svc-webhooks
//   node receiver-node-http.mjs          (trust.json names the sellers whose keys you trust)
// Every request is verified (RFC 9421), deduplicated and ordered before your handler sees it;
// the handler runs once per event. PostgreSQL keeps the receiver's state (DATABASE_URL).
import { createServer } from 'node:http';
import {
  createPool,
  createReceiver,
  HandlerPublisher,
  limitServer,
  nodeListener,
} from 'svc-webhooks/receiver';

const pool = createPool({
  connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
});

const { receiver, close } = await createReceiver({
  trust: process.env.TRUST_FILE ?? 'trust.json',
  pool,
  schema: process.env.RECEIVER_SCHEMA ?? 'receiver',
  publisher: new HandlerPublisher(async (event) => {
    // Your code. Throwing answers 503, and the seller retries the same event later.
    console.log(
      JSON.stringify({
        sender: event.sender,
        idempotency_key: event.idempotencyKey,
        task_id: event.taskId,
        status: event.status,
      }),
    );
  }),
});

const server = createServer(nodeListener(receiver));
// Bounds for hostile traffic: connections, and how long a head or a body may take.
limitServer(server, { maxConnections: 1024, headersTimeoutMs: 10_000 });
server.listen(Number(process.env.PORT ?? 8787), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}/webhooks`);
});

process.once('SIGTERM', () => {
  server.close(async () => {
    await close();
    await pool.end();
  });
});
