/**
 * Every kind of webhook a buyer receives (service spec reliability rule 2, supplement
 * §6.7), through the whole pipeline: governance list changes with their `signature`
 * marker (any string form, never authentication), artifact push webhooks and rights
 * revocation notifications are accepted, named in the event, deduplicated by (sender,
 * idempotency_key) with 409 on a changed payload; a missing or malformed required member
 * is 422 with the envelope error id, and nothing is published. Runs on the PostgreSQL
 * store and on the in-memory one (the `store` option).
 */
import t, { type Test } from 'tap';
import { WebhookReceiver } from '../../receiver/pipeline/receiver.js';
import { HandlerPublisher } from '../../receiver/publish/handler.js';
import type { ReceivedEvent } from '../../receiver/publish/types.js';
import { MemoryDeliveryStore } from '../../receiver/store/index.js';
import { testDatabase } from '../helpers/db.js';
import {
  inlineResolver,
  makeSender,
  MemoryReplayStore,
  newKey,
  profile,
  signed,
} from './support/fixtures.js';
import { listen, post } from './support/server.js';

const { pool, schema } = testDatabase(t, 'rkinds');

async function setup(t: Test, memory: boolean) {
  const seller = await makeSender('seller-kinds');
  const events: ReceivedEvent[] = [];
  const receiver = new WebhookReceiver({
    pool,
    schema,
    profile,
    protocolVersion: '3.2',
    keys: inlineResolver([seller]),
    replay: new MemoryReplayStore(),
    publisher: new HandlerPublisher((e) => void events.push(e)),
    ...(memory ? { store: new MemoryDeliveryStore({ protocolVersion: '3.2' }) } : {}),
  });
  await receiver.migrate();
  const { url, server } = await listen(receiver);
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const deliver = async (body: unknown) => {
    const s = signed(`${url}/hooks`, JSON.stringify(body), seller);
    return post(`${url}/hooks`, s.body, s.headers);
  };
  return { deliver, events };
}

const now = '2026-05-26T10:00:00Z';
const bodies = (): Array<[string, Record<string, unknown>, string]> => [
  [
    'property_list_changed',
    {
      idempotency_key: newKey(),
      event: 'property_list_changed',
      list_id: 'pl_1',
      resolved_at: now,
      signature: 'eyJhbGciOiJub25lIn0..not-verified',
    },
    'signature',
  ],
  [
    'collection_list_changed',
    {
      idempotency_key: newKey(),
      event: 'collection_list_changed',
      list_id: 'cl_1',
      list_name: 'Sports',
      resolved_at: now,
      signature: '',
    },
    'list_id',
  ],
  [
    'artifact',
    {
      idempotency_key: newKey(),
      media_buy_id: 'mb_1',
      batch_id: 'b_1',
      timestamp: now,
      artifacts: [{ artifact_id: 'a1' }],
      pagination: { cursor: null },
    },
    'batch_id',
  ],
  [
    'revocation_notification',
    {
      idempotency_key: newKey(),
      rights_id: 'r_1',
      brand_id: 'brand_1',
      reason: 'license_expired',
      effective_at: now,
      context: { anything: true },
    },
    'effective_at',
  ],
];

for (const memory of [false, true]) {
  const store = memory ? 'memory store' : 'postgres store';

  t.test(`${store}: each kind is accepted, named, deduplicated`, async (t) => {
    const { deliver, events } = await setup(t, memory);
    for (const [kind, body] of bodies()) {
      const res = await deliver(body);
      t.equal(res.status, 200, `${kind} accepted`);
      t.equal(res.json.status, 'published');
      const e = events.at(-1);
      t.equal(e?.kind, kind, `${kind} named in the event`);
      t.equal(e?.idempotencyKey, body.idempotency_key);
      t.equal(e?.taskId, null, 'no task ordering');
      t.same(e?.payload, body);
      const again = await deliver(body);
      t.equal(again.json.status, 'duplicate', `${kind} repeat is a duplicate`);
      const changed = await deliver({ ...body, list_name: 'changed' });
      t.equal(changed.status, 409, `${kind} changed payload under its key`);
    }
    t.equal(events.length, 4, 'each published once');
  });

  t.test(`${store}: a missing or malformed required member is 422`, async (t) => {
    const { deliver, events } = await setup(t, memory);
    for (const [kind, body, member] of bodies()) {
      const { [member]: _, ...missing } = body;
      const res = await deliver(missing);
      t.equal(res.status, 422, `${kind} without ${member}`);
      t.equal(res.json.error.code, 'missing_envelope_fields');
      t.same(res.json.error.fields, [member]);
      const { idempotency_key: __, ...noKey } = body;
      t.equal((await deliver(noKey)).json.error.code, 'missing_idempotency_key');
      const bad = await deliver({ ...body, [member]: 42 });
      t.equal(bad.status, 422, `${kind} with a non-string ${member}`);
      t.equal(bad.json.error.code, 'invalid_envelope');
    }
    const shortKey = { ...bodies()[0]![1], idempotency_key: 'short' };
    t.same((await deliver(shortKey)).json.error.fields, ['idempotency_key']);
    const badTime = { ...bodies()[3]![1], effective_at: 'yesterday' };
    t.same((await deliver(badTime)).json.error.fields, ['effective_at']);
    const unknownEvent = { ...bodies()[0]![1], event: 'list_exploded' };
    t.equal((await deliver(unknownEvent)).status, 422, 'an unknown event is not a list change');
    t.equal(events.length, 0, 'nothing published');
  });
}
