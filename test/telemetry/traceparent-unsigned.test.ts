/**
 * The attempt's `traceparent` / `tracestate` ride outside the RFC 9421 signature: the signer
 * covers a fixed component list without them, so a signature verifies with them added,
 * changed or removed, and an attempt's headers (`attemptHeaders` + the carrier) keep the
 * same covered list. Also: with no tracing registered, the receiver hands a well-formed
 * incoming traceparent to the app unchanged and drops a malformed one.
 */
import t from 'tap';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { attemptHeaders } from '../../sender/delivery/authenticate.js';
import { traceForApp } from '../../receiver/pipeline/tracing.js';
import { eventHeaders, eventFlags, type ReceivedEvent } from '../../receiver/publish/types.js';
import { brandProfile } from '../../shared/brand.js';
import { generateSigningKey } from '../../shared/signing/keys.js';
import { jwksKeyResolver } from '../../shared/signing/jwks-resolver.js';
import { publishedJwk } from '../../shared/signing/keys.js';
import { WEBHOOK_COMPONENTS } from '../../shared/signing/signature-base.js';
import { verifyWebhookSignature } from '../../shared/signing/verify.js';
import { traceCarrier } from '../../shared/telemetry/trace-context.js';

const profile = brandProfile('svc');
const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

t.test('a signature verifies with traceparent added or changed; it is not covered', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const url = 'https://buyer.example/hooks';
  const body = '{"idempotency_key":"whk_0123456789abcdef"}';
  const signed = attemptHeaders(url, Buffer.from(body), { mode: 'rfc9421' }, { key, profile });
  t.notOk(WEBHOOK_COMPONENTS.includes('traceparent' as never), 'not in the covered list');
  const covered = /^sig1=\(([^)]*)\)/.exec(signed['signature-input']!)?.[1] ?? '';
  t.same(
    covered.split(' ').map((c) => JSON.parse(c)),
    [...WEBHOOK_COMPONENTS],
    'the covered components are the fixed list',
  );
  t.notMatch(signed['signature-input'], /traceparent|tracestate/);
  const keys = jwksKeyResolver({ keys: [publishedJwk(key, profile)] }, 'seller');
  for (const extra of [
    { traceparent: TP, tracestate: 'vendor=x' },
    { traceparent: TP.replace('b7ad', '0000') },
    { traceparent: 'not even a traceparent' },
  ]) {
    const v = await verifyWebhookSignature(
      { method: 'POST', url, headers: { ...signed, ...extra }, body: Buffer.from(body) },
      { profile, keys },
    );
    t.equal(v.senderId, 'seller', `verifies with ${JSON.stringify(extra)}`);
  }
});

t.test('no tracing registered: nothing injected, the sender context handed on', async (t) => {
  t.equal(traceCarrier(), undefined, 'no propagator: nothing to carry (the no-op path)');
  t.same(traceForApp({ traceparent: TP, tracestate: 'a=1' }, ROOT_CONTEXT), {
    traceparent: TP,
    tracestate: 'a=1',
  });
  t.same(traceForApp({ traceparent: [TP] }, ROOT_CONTEXT), { traceparent: TP });
  for (const bad of [
    'garbage',
    TP.toUpperCase(),
    `ff${TP.slice(2)}`,
    '00-00000000000000000000000000000000-b7ad6b7169203331-01',
    '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
    [TP, TP],
  ]) {
    t.equal(
      traceForApp({ traceparent: bad }, ROOT_CONTEXT),
      undefined,
      `dropped: ${JSON.stringify(bad)}`,
    );
  }
  t.same(
    traceForApp({ traceparent: TP, tracestate: 'x\u0000y' }, ROOT_CONTEXT),
    { traceparent: TP },
    'a tracestate with control characters is dropped, the traceparent kept',
  );
});

t.test('the trace context goes into every mode’s metadata', async (t) => {
  const e = {
    sender: 's',
    idempotencyKey: 'whk_0123456789abcdef',
    kind: 'task',
    notificationId: null,
    taskId: 't',
    operationId: null,
    taskType: null,
    status: 'completed',
    timestamp: null,
    format: 'mcp',
    payload: {},
    body: Buffer.from('{}'),
    stale: false,
    reEmission: false,
    terminal: true,
    redelivery: false,
    auth: { mode: 'rfc9421', keyid: 'k' },
  } satisfies ReceivedEvent;
  t.notOk('traceparent' in eventHeaders(e, 'svc'), 'none without a trace context');
  const traced = { ...e, trace: { traceparent: TP, tracestate: 'a=1' } };
  const h = eventHeaders(traced, 'svc');
  t.equal(h.traceparent, TP, 'forward / NATS / AMQP / Redis stream header');
  t.equal(h.tracestate, 'a=1');
  t.equal(h['x-svc-task-id'], 't', 'beside the event headers');
  t.match(eventFlags(traced), { traceparent: TP, tracestate: 'a=1' }, 'queue rows too');
});
