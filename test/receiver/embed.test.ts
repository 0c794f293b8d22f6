/** createReceiver: the library's one-call set-up, as the README's examples use it. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createReceiver } from '../../receiver/embed.js';
import { HandlerPublisher } from '../../receiver/publish/handler.js';
import type { ReceivedEvent } from '../../receiver/publish/types.js';
import { TrustFileError } from '../../receiver/trust/trust-file.js';
import { publishedJwk } from '../../shared/signing/keys.js';
import { testDatabase } from '../helpers/db.js';
import { envelope, makeSender, profile, signed, trustFor } from './support/fixtures.js';

const { pool, schema } = testDatabase(t, 'rembed');
const URL = 'http://127.0.0.1:9/webhooks';

t.test('from a trust file path: verified, deduplicated, handed over once', async (t) => {
  const seller = await makeSender('embed-seller');
  const dir = await mkdtemp(join(tmpdir(), 'embed-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const trustFile = join(dir, 'trust.json');
  await writeFile(
    trustFile,
    JSON.stringify({
      senders: [
        {
          id: seller.id,
          jwks: { keys: [publishedJwk(seller.key, profile)] },
          delivery_retry_horizon_seconds: 172800,
        },
      ],
    }),
  );
  const events: ReceivedEvent[] = [];
  const embedded = await createReceiver({
    trust: trustFile,
    pool,
    schema,
    publisher: new HandlerPublisher((e) => void events.push(e)),
  });
  t.teardown(() => embedded.close());
  t.equal(embedded.trust.senders[0]?.id, seller.id);
  const body = JSON.stringify(envelope());
  const first = await embedded.receiver.handle({
    method: 'POST',
    url: URL,
    ...signed(URL, body, seller),
  });
  t.equal(first.status, 200, first.body);
  const again = await embedded.receiver.handle({
    method: 'POST',
    url: URL,
    ...signed(URL, body, seller),
  });
  t.equal(again.status, 200);
  t.match(again.body, /duplicate/);
  t.equal(events.length, 1, 'handed over once');
  t.equal(events[0]?.sender, seller.id);
  const forged = await embedded.receiver.handle({
    method: 'POST',
    url: URL,
    ...signed(URL, JSON.stringify(envelope()), await makeSender('stranger')),
  });
  t.equal(forged.status, 401, 'an untrusted key is refused');
});

t.test('a parsed trust, the brand and version chosen', async (t) => {
  const seller = await makeSender('embed-parsed');
  const embedded = await createReceiver({
    trust: trustFor([seller]),
    pool,
    schema,
    brand: 'svc',
    protocolVersion: '3.1',
    allowLoopback: true,
    receiver: { maxBodyBytes: 64 },
    publisher: new HandlerPublisher(() => {}),
  });
  t.teardown(() => embedded.close());
  const big = JSON.stringify(envelope({ message: 'x'.repeat(100) }));
  const r = await embedded.receiver.handle({
    method: 'POST',
    url: URL,
    ...signed(URL, big, seller),
  });
  t.equal(r.status, 413, 'receiver options pass through');
});

t.test('bad set-ups fail with a clear error', async (t) => {
  await t.rejects(
    createReceiver({
      trust: join(tmpdir(), 'no-such-trust-file.json'),
      pool,
      publisher: new HandlerPublisher(() => {}),
    }),
    TrustFileError,
  );
  const seller = await makeSender('embed-bad');
  await t.rejects(
    createReceiver({
      trust: trustFor([seller]),
      pool,
      schema: 'Not A Schema',
      publisher: new HandlerPublisher(() => {}),
    }),
    /schema/,
  );
});
