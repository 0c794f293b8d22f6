// The same receiver mounted in a Koa app, on one path beside the app's own routes.
//   npm install svc-webhooks koa
//   node receiver-koa.mjs
import Koa from 'koa';
import {
  createPool,
  createReceiver,
  HandlerPublisher,
  webhookMiddleware,
} from 'svc-webhooks/receiver';

const pool = createPool({
  connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
});

const { receiver, close } = await createReceiver({
  trust: process.env.TRUST_FILE ?? 'trust.json',
  pool,
  schema: process.env.RECEIVER_SCHEMA ?? 'receiver',
  publisher: new HandlerPublisher(async (event) => {
    // Your code: called once per verified, deduplicated event.
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

const app = new Koa();
// Before any body parser: the receiver reads the raw bytes the signature covers.
app.use(webhookMiddleware(receiver, { path: '/webhooks' }));
app.use((ctx) => {
  ctx.body = 'the rest of your app';
});

const server = app.listen(Number(process.env.PORT ?? 8787), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}/webhooks`);
});

process.once('SIGTERM', () => {
  server.close(async () => {
    await close();
    await pool.end();
  });
});
