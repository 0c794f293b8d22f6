/**
 * An owner killed mid-publication (SIGKILL, so no cleanup runs) holds the claim; after its
 * lease another receiver takes the key over and the event is published exactly once.
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { publishedJwk } from '../../shared/signing/keys.js';
import { migrate } from '../../shared/infra/pg.js';
import { WebhookReceiver } from '../../receiver/pipeline/receiver.js';
import { RECEIVER_MIGRATIONS } from '../../receiver/store/index.js';
import { DurableQueue } from '../../receiver/publish/queue.js';
import { HandlerPublisher } from '../../receiver/publish/handler.js';
import type { Publisher, ReceivedEvent } from '../../receiver/publish/types.js';
import { DATABASE_URL, testDatabase } from '../helpers/db.js';
import {
  envelope,
  inlineResolver,
  makeSender,
  MemoryReplayStore,
  profile,
  signed,
  type SenderKeys,
} from './support/fixtures.js';
import { listen, post } from './support/server.js';

const { pool, schema } = testDatabase(t, 'rcrash');
const LEASE_MS = 1500;
const child = fileURLToPath(new URL('./support/child-receiver.ts', import.meta.url));

async function crashDuring(mode: 'block' | 'queue', seller: SenderKeys, body: string) {
  const proc = spawn(process.execPath, ['--import', 'tsx', child], {
    env: {
      ...process.env,
      DATABASE_URL,
      SCHEMA: schema,
      SENDER_ID: seller.id,
      JWK: JSON.stringify(publishedJwk(seller.key, profile)),
      MODE: mode,
      CHILD_RECEIVER: '1',
      LEASE_MS: String(LEASE_MS),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const wait = (re: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`child never printed ${re}: ${out}`)),
        20_000,
      );
      const check = () => {
        const m = re.exec(out);
        if (m) {
          clearTimeout(timer);
          proc.stdout.off('data', onData);
          resolve(m);
        }
      };
      const onData = (d: Buffer) => {
        out += d;
        check();
      };
      proc.stdout.on('data', onData);
      check();
    });
  const port = Number((await wait(/PORT (\d+)/))[1]);
  const url = `http://127.0.0.1:${port}/hooks`;
  const s = signed(url, body, seller);
  const pending = post(url, s.body, s.headers).catch((err: Error) => err);
  await wait(mode === 'queue' ? /ENQUEUED/ : /PUBLISHING/);
  const exited = new Promise((r) => proc.on('exit', r));
  proc.kill('SIGKILL');
  await exited;
  const res = await pending;
  return res instanceof Error ? -1 : res.status;
}

t.before(async () => {
  await migrate(pool, schema, RECEIVER_MIGRATIONS);
});

async function survivor(t: Test, seller: SenderKeys, publisher: Publisher) {
  const receiver = new WebhookReceiver({
    pool,
    schema,
    profile,
    protocolVersion: '3.2',
    keys: inlineResolver([seller]),
    replay: new MemoryReplayStore(),
    publisher,
    leaseMs: LEASE_MS,
  });
  const { url, server } = await listen(receiver);
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return async (body: string) => {
    const s = signed(`${url}/hooks`, body, seller);
    return post(`${url}/hooks`, s.body, s.headers);
  };
}

t.test(
  'killed before publication completed: taken over after the lease, published once',
  async (t) => {
    const seller = await makeSender('crash-a');
    const body = JSON.stringify(envelope({ task_id: 'crash-1' }));
    const status = await crashDuring('block', seller, body);
    t.not(status, 200, 'the killed owner never acknowledged');
    const events: ReceivedEvent[] = [];
    const deliver = await survivor(t, seller, new HandlerPublisher((e) => void events.push(e)));
    // The sender retries at once: the dead owner's lease still holds.
    t.equal((await deliver(body)).status, 503);
    await new Promise((r) => setTimeout(r, LEASE_MS + 200));
    const res = await deliver(body);
    t.equal(res.status, 200);
    t.equal(events.length, 1);
    t.equal(events[0]?.redelivery, true, 'flagged as a possible redelivery');
    t.equal((await deliver(body)).json.status, 'duplicate');
    t.equal(events.length, 1, 'exactly once');
  },
);

t.test(
  'killed after enqueueing, before the done-mark: the keyed queue holds one row',
  async (t) => {
    const seller = await makeSender('crash-b');
    const body = JSON.stringify(envelope({ task_id: 'crash-2' }));
    await crashDuring('queue', seller, body);
    const queue = new DurableQueue({ pool, schema, queue: 'crash' });
    t.equal(await queue.depth(), 1, 'the dead owner enqueued');
    const deliver = await survivor(t, seller, queue);
    await new Promise((r) => setTimeout(r, LEASE_MS + 200));
    t.equal((await deliver(body)).status, 200);
    t.equal((await deliver(body)).status, 200);
    t.equal(await queue.depth(), 1, 'published exactly once');
    const items = await queue.claim({ max: 10 });
    t.equal(items.length, 1);
    t.equal(items[0]?.body.toString(), body);
  },
);
