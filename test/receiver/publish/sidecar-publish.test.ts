/**
 * The sidecar with `--publish`: a signed delivery is answered 2xx only after JetStream stored
 * it; with the broker down the seller gets 503 and nothing is recorded as done, and its retry
 * once the broker is back is published exactly once (spec: reliability, "2xx only once
 * publication is complete or durably enqueued").
 */
import t from 'tap';
import { connect as natsConnect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Sidecar } from '../../../receiver/sidecar/server.js';
import { testDatabase, uniqueName } from '../../helpers/db.js';
import { tcpProxy } from '../../helpers/tcp-proxy.js';
import {
  envelope,
  inlineResolver,
  makeSender,
  MemoryReplayStore,
  profile,
  signed,
  trustFor,
} from '../support/fixtures.js';
import { post } from '../support/server.js';

const { pool, schema } = testDatabase(t, 'rpub');

t.test('a broker down answers 503; the retry once it is back is published once', async (t) => {
  const seller = await makeSender('seller-a');
  const nc = await natsConnect({ servers: '127.0.0.1:4222' });
  const jsm = await jetstreamManager(nc);
  const stream = uniqueName('P').toUpperCase();
  const subject = stream.toLowerCase();
  t.teardown(async () => {
    await jsm.streams.delete(stream).catch(() => {});
    await nc.close();
  });
  const proxy = await tcpProxy(4222);
  t.teardown(() => proxy.close());
  const s = await Sidecar.start({
    port: 0,
    trust: trustFor([seller]),
    profile,
    protocolVersion: '3.2',
    target: {
      publish: `nats://127.0.0.1:${proxy.port}?subject=${subject}.{sender}.{task_type}&stream=${stream}`,
    },
    forwardTimeoutMs: 1_000,
    pool,
    schema,
    keys: inlineResolver([seller]),
    replay: new MemoryReplayStore(),
    purgeIntervalMs: 0,
  });
  t.teardown(() => s.close());
  const url = `${s.url}/webhooks/seller-a`;
  const body = JSON.stringify(envelope({ idempotency_key: 'pub-key-0001-abcdef' }));
  // Each attempt is signed anew, as a seller's retry is.
  const attempt = () => {
    const sig = signed(url, body, seller);
    return post(url, sig.body, sig.headers);
  };

  t.equal((await attempt()).status, 200, 'broker up: 2xx');
  t.equal((await jsm.streams.info(stream)).state.messages, 1);

  await proxy.cut();
  const other = JSON.stringify(envelope({ idempotency_key: 'pub-key-0002-abcdef' }));
  const sig = signed(url, other, seller);
  t.equal((await post(url, sig.body, sig.headers)).status, 503, 'broker down: 503, seller retries');
  await proxy.restore();
  let status = 0;
  for (let i = 0; i < 40 && status !== 200; i++) {
    const again = signed(url, other, seller);
    status = (await post(url, again.body, again.headers)).status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 250));
  }
  t.equal(status, 200, 'back: the retry is accepted');
  const again = signed(url, other, seller);
  t.equal((await post(url, again.body, again.headers)).status, 200, 'a duplicate is 2xx');
  t.equal((await jsm.streams.info(stream)).state.messages, 2, 'each event published once');
  t.equal((await attempt()).status, 200);
  t.equal((await jsm.streams.info(stream)).state.messages, 2, 'the first one still once');
});
