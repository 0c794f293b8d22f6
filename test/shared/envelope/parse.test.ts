import t from 'tap';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import {
  EnvelopeError,
  MCP_REQUIRED_FIELDS,
  detectWebhookFormat,
  extractWebhookData,
  parseWebhookPayload,
} from '../../../shared/envelope/index.js';
import type { EnvelopeErrorId, WebhookEvent } from '../../../shared/envelope/index.js';
import { DeliveryReportSchema } from '../../../shared/envelope/index.js';
import { fingerprint } from '../../../shared/json/canonical.js';
import { parseStrictJson } from '../../../shared/json/strict-parse.js';

type Obj = Record<string, unknown>;

function fixture<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8')) as T;
}

function envelopeError(value: unknown, opts?: { prefer?: 'mcp' | 'a2a' }): EnvelopeError {
  try {
    parseWebhookPayload(value, opts);
  } catch (err) {
    if (err instanceof EnvelopeError) return err;
    throw err;
  }
  throw new Error(`expected an EnvelopeError for ${JSON.stringify(value)}`);
}

const mcp = (over: Obj = {}): Obj => ({
  idempotency_key: 'whk_0123456789abcdef',
  operation_id: 'op_1',
  task_id: 'tsk_1',
  task_type: 'create_media_buy',
  status: 'completed',
  timestamp: '2026-03-02T09:15:00.000Z',
  result: { media_buy_id: 'mb_1' },
  ...over,
});

interface ExtractionVector {
  id: string;
  payload: Obj;
  expected_format: 'mcp' | 'a2a';
  expected_data: unknown;
}

t.test('the 12 payload-extraction cases', async (t) => {
  const { vectors } = fixture<{ vectors: ExtractionVector[] }>('payload-extraction.json');
  t.equal(vectors.length, 12);
  for (const v of vectors) {
    t.equal(detectWebhookFormat(v.payload), v.expected_format, `${v.id} format`);
    const got = extractWebhookData(v.payload);
    t.equal(got.format, v.expected_format, `${v.id} extracted format`);
    t.same(got.data, v.expected_data, `${v.id} data`);
    // complete envelopes also pass full validation with the same data
    const complete =
      v.expected_format === 'a2a' || MCP_REQUIRED_FIELDS.every((f) => f in v.payload);
    if (complete) {
      const event = parseWebhookPayload(v.payload);
      t.equal(event.format, v.expected_format);
      t.same(event.result, v.expected_data, `${v.id} parsed result`);
    } else {
      t.equal(envelopeError(v.payload).code, 'missing_envelope_fields', `${v.id} is incomplete`);
    }
  }
});

interface ReceiverVector {
  id: string;
  kind: 'positive' | 'negative';
  payload?: Obj;
  same_as?: string;
  expected_error?: EnvelopeErrorId;
  expected_fields?: string[];
}

t.test('receiver envelope vectors', async (t) => {
  const { vectors } = fixture<{ vectors: ReceiverVector[] }>('receiver-envelope.json');
  const byId = new Map(vectors.map((v) => [v.id, v]));
  const events: WebhookEvent[] = [];
  for (const v of vectors) {
    const payload = v.payload ?? byId.get(v.same_as as string)?.payload;
    // the receiver sees bytes: go through the strict parser like it does
    const value = parseStrictJson(Buffer.from(JSON.stringify(payload)));
    if (v.kind === 'positive') {
      const event = parseWebhookPayload(value);
      t.equal(event.format, 'mcp', v.id);
      t.equal(event.taskType, 'media_buy_delivery');
      t.equal(event.status, 'completed');
      t.ok(DeliveryReportSchema.safeParse(event.result).success, 'result is a delivery report');
      events.push(event);
    } else {
      const err = envelopeError(value);
      t.equal(err.code, v.expected_error, v.id);
      t.same(err.fields, v.expected_fields, `${v.id} fields`);
      t.equal(err.status, 422);
      t.same(err.toJSON().error.code, v.expected_error);
    }
  }
  t.equal(events.length, 2);
  const [first, retry] = events as [WebhookEvent, WebhookEvent];
  t.equal(retry.idempotencyKey, first.idempotencyKey);
  t.equal(fingerprint(retry.payload), fingerprint(first.payload), 'same canonical payload');
});

t.test('MCP envelope: every required member missing, null or malformed', async (t) => {
  t.same(parseWebhookPayload(mcp()), {
    format: 'mcp',
    idempotencyKey: 'whk_0123456789abcdef',
    notificationId: null,
    taskId: 'tsk_1',
    operationId: 'op_1',
    taskType: 'create_media_buy',
    status: 'completed',
    timestamp: '2026-03-02T09:15:00.000Z',
    result: { media_buy_id: 'mb_1' },
    payload: mcp(),
  });
  for (const f of MCP_REQUIRED_FIELDS) {
    for (const absent of [undefined, null]) {
      const body = mcp({ [f]: absent });
      if (absent === undefined) delete body[f];
      // without task_id or status detection fails; MCP is still the default reading
      const err = envelopeError(body);
      if (f === 'idempotency_key') {
        t.equal(err.code, 'missing_idempotency_key');
      } else {
        t.equal(err.code, 'missing_envelope_fields', f);
      }
      t.same(err.fields, [f]);
    }
  }
  const bad: [Obj, EnvelopeErrorId, string[]][] = [
    [mcp({ idempotency_key: 'short' }), 'invalid_envelope', ['idempotency_key']],
    [mcp({ idempotency_key: 'x'.repeat(256) }), 'invalid_envelope', ['idempotency_key']],
    [mcp({ idempotency_key: 'has space 0123456789' }), 'invalid_envelope', ['idempotency_key']],
    [mcp({ idempotency_key: 1234567890123456 }), 'invalid_envelope', ['idempotency_key']],
    [mcp({ idempotency_key: '' }), 'invalid_envelope', ['idempotency_key']],
    [mcp({ operation_id: '' }), 'invalid_envelope', ['operation_id']],
    [mcp({ task_id: 7 }), 'invalid_envelope', ['task_id']],
    [mcp({ task_type: 'make_coffee' }), 'invalid_envelope', ['task_type']],
    [mcp({ status: 'active' }), 'invalid_envelope_status', ['status']],
    [mcp({ status: 'COMPLETED' }), 'invalid_envelope_status', ['status']],
    [mcp({ status: 3 }), 'invalid_envelope_status', ['status']],
    [mcp({ timestamp: 'yesterday' }), 'invalid_envelope', ['timestamp']],
    [mcp({ timestamp: '2026-03-02' }), 'invalid_envelope', ['timestamp']],
    [mcp({ notification_id: 'bad id' }), 'invalid_envelope', ['notification_id']],
    [mcp({ token: 'short' }), 'invalid_envelope', ['token']],
    [mcp({ result: 'done' }), 'invalid_envelope', ['result']],
    [mcp({ result: [1] }), 'invalid_envelope', ['result']],
    [mcp({ context: [] }), 'invalid_envelope', ['context']],
    [mcp({ protocol: 'ads' }), 'invalid_envelope', ['protocol']],
    [mcp({ message: 1 }), 'invalid_envelope', ['message']],
  ];
  for (const [body, id, fields] of bad) {
    const err = envelopeError(body);
    t.equal(err.code, id, JSON.stringify(fields));
    t.same(err.fields, fields);
  }
  // several missing members including the key: named together
  const partial = mcp();
  delete partial.idempotency_key;
  delete partial.timestamp;
  const err = envelopeError(partial);
  t.equal(err.code, 'missing_envelope_fields');
  t.same(err.fields, ['idempotency_key', 'timestamp']);
  // extra members are allowed and kept in the payload
  const extra = parseWebhookPayload(mcp({ domain: 'media-buy', context: { c: 1 }, x_ext: true }));
  t.same((extra.payload as Obj).x_ext, true);
  t.equal(parseWebhookPayload(mcp({ result: null })).result, null);
  t.equal(
    parseWebhookPayload(mcp({ notification_id: 'task_456.terminal' })).notificationId,
    'task_456.terminal',
  );
  t.equal(
    parseWebhookPayload(mcp({ timestamp: '2026-03-02T10:15:00+01:00' })).timestamp,
    '2026-03-02T10:15:00+01:00',
  );
});

t.test('__proto__ members stay data', async (t) => {
  const text =
    '{"__proto__":{"notification_id":"bad id","result":{"evil":1},"idempotency_key":"x"},' +
    '"operation_id":"o","task_id":"t","task_type":"create_media_buy","status":"completed",' +
    '"timestamp":"2026-03-02T09:15:00Z"}';
  // the key is not inherited: it is missing
  t.equal(envelopeError(parseStrictJson(text)).code, 'missing_idempotency_key');
  const withKey = text.replace(
    '"operation_id"',
    '"idempotency_key":"whk_0123456789abcdef","operation_id"',
  );
  const e = parseWebhookPayload(parseStrictJson(withKey));
  t.equal(e.notificationId, null);
  t.equal(e.result, null);
  t.equal(({} as Obj).evil, undefined);
  const a2a = parseWebhookPayload(
    parseStrictJson(
      '{"__proto__":{"artifacts":[{"parts":[{"kind":"data","data":{"x":1}}]}]},"id":"t","status":{"state":"completed"}}',
    ),
  );
  t.equal(a2a.result, null, 'artifacts are not read through __proto__');
});

t.test('bodies that are not objects', async (t) => {
  for (const v of [null, [], [mcp()], 'x', 1, true]) {
    const err = envelopeError(v);
    t.equal(err.code, 'invalid_envelope');
    t.same(extractWebhookData(v), { format: null, data: null });
  }
  t.same(extractWebhookData({ hello: 1 }), { format: null, data: null });
});

t.test('format detection and the configured preference', async (t) => {
  t.equal(detectWebhookFormat(mcp()), 'mcp');
  t.equal(detectWebhookFormat({ status: 'completed' }), null, 'string status without task_id');
  t.equal(detectWebhookFormat({ id: 't', status: { state: 'working' } }), 'a2a');
  t.equal(detectWebhookFormat({ task: { id: 't' } }), 'a2a');
  t.equal(detectWebhookFormat({ message: { parts: [] } }), 'a2a');
  t.equal(detectWebhookFormat({ message: 'hello' }), 'a2a');
  t.equal(detectWebhookFormat({ kind: 'status-update' }), 'a2a');
  t.equal(detectWebhookFormat({ kind: 'other' }), null);
  t.equal(detectWebhookFormat({ task: {}, extra: 1 }), 'a2a');
  t.equal(detectWebhookFormat({ status: { phase: 'x' } }), null);
  const a2a = { id: 't1', status: { state: 'completed' } };
  t.equal(parseWebhookPayload(a2a).format, 'a2a');
  // configured MCP: an A2A body is read as an MCP envelope and rejected as such
  t.equal(envelopeError(a2a, { prefer: 'mcp' }).code, 'missing_envelope_fields');
  t.equal(envelopeError(mcp(), { prefer: 'a2a' }).code, 'invalid_envelope');
  t.equal(parseWebhookPayload(mcp(), { prefer: 'mcp' }).format, 'mcp');
  t.equal(extractWebhookData(a2a, { prefer: 'mcp' }).data, null);
  t.same(extractWebhookData({ task: 'x' }), { format: 'a2a', data: null });
});

const dataPart03 = (data: unknown): Obj => ({ kind: 'data', data });
const textPart03 = (text: string): Obj => ({ kind: 'text', text });

t.test('A2A 1.0 StreamResponse: one key, unwrapped exactly once', async (t) => {
  const task = {
    id: 'tsk_20',
    contextId: 'ctx_20',
    status: { state: 'TASK_STATE_COMPLETED', timestamp: '2026-03-02T09:30:00.000Z' },
    artifacts: [
      { artifactId: 'r', parts: [{ text: 'ok' }, { data: { a: 1 } }, { data: { a: 2 } }] },
    ],
  };
  const e = parseWebhookPayload({ task });
  t.match(e, {
    format: 'a2a',
    a2aVersion: '1.0',
    a2aKind: 'task',
    taskId: 'tsk_20',
    status: 'completed',
  });
  t.same(e.result, { a: 2 }, 'final: last DataPart');
  t.equal(e.idempotencyKey, null);
  t.equal(e.timestamp, '2026-03-02T09:30:00.000Z');

  const statusUpdate = {
    taskId: 'tsk_21',
    contextId: 'ctx_21',
    status: {
      state: 'TASK_STATE_INPUT_REQUIRED',
      timestamp: '2026-03-02T09:31:00.000Z',
      message: {
        messageId: 'm1',
        role: 'ROLE_AGENT',
        parts: [{ text: 'need' }, { data: { first: true } }, { data: { first: false } }],
      },
    },
  };
  const u = parseWebhookPayload({ statusUpdate });
  t.match(u, { a2aKind: 'status-update', taskId: 'tsk_21', status: 'input-required' });
  t.same(u.result, { first: true }, 'interim: first DataPart');

  const art = parseWebhookPayload({
    artifactUpdate: {
      taskId: 't',
      artifact: { parts: [{ data: { x: 1 } }] },
      append: false,
      lastChunk: true,
    },
  });
  t.match(art, { a2aKind: 'artifact-update', status: null, result: { x: 1 } });

  const msg = parseWebhookPayload({
    message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] },
  });
  t.match(msg, { a2aKind: 'message', status: null, result: null, taskId: null });

  const rejects: [unknown, EnvelopeErrorId][] = [
    [{ task: { task } }, 'invalid_envelope'],
    [{ statusUpdate: { statusUpdate } }, 'invalid_envelope'],
    [{ task, message: { parts: [] } }, 'invalid_envelope'],
    [{ task: 'tsk' }, 'invalid_envelope'],
    [{ task: [] }, 'invalid_envelope'],
    [{ task: { ...task, id: undefined } }, 'invalid_envelope'],
    [{ task: { ...task, status: 'completed' } }, 'invalid_envelope'],
    [{ task: { ...task, status: { state: 'TASK_STATE_UNSPECIFIED' } } }, 'invalid_envelope_status'],
    [{ task: { ...task, status: { state: 'TASK_STATE_DONE' } } }, 'invalid_envelope_status'],
    [{ task: { ...task, artifacts: {} } }, 'invalid_envelope'],
    [{ statusUpdate: { ...statusUpdate, taskId: '' } }, 'invalid_envelope'],
    [{ artifactUpdate: { taskId: 't' } }, 'invalid_envelope'],
    [{ message: { parts: 'x' } }, 'invalid_envelope'],
  ];
  for (const [body, id] of rejects) {
    t.equal(envelopeError(body).code, id, JSON.stringify(body).slice(0, 80));
  }
  t.same(envelopeError({ task: { ...task, status: { state: 'nope' } } }).fields, [
    'task.status.state',
  ]);
  t.same(envelopeError({ task: { ...task, id: 5 } }).fields, ['task.id']);
});

t.test('A2A 0.3 bare objects', async (t) => {
  const task = {
    kind: 'task',
    id: 'tsk_30',
    contextId: 'ctx_30',
    status: { state: 'completed', timestamp: '2026-03-02T09:40:00Z' },
    artifacts: [
      { artifactId: 'r', parts: [dataPart03({ v: 1 }), textPart03('t'), dataPart03({ v: 2 })] },
    ],
  };
  t.match(parseWebhookPayload(task), {
    a2aVersion: '0.3',
    a2aKind: 'task',
    status: 'completed',
    result: { v: 2 },
  });
  const update = {
    kind: 'status-update',
    taskId: 'tsk_31',
    contextId: 'ctx_31',
    final: false,
    status: {
      state: 'working',
      message: {
        kind: 'message',
        role: 'agent',
        parts: [textPart03('x'), dataPart03({ p: 10 }), dataPart03({ p: 20 })],
      },
    },
  };
  t.match(parseWebhookPayload(update), {
    a2aKind: 'status-update',
    taskId: 'tsk_31',
    status: 'working',
    result: { p: 10 },
  });
  // without kind: members decide
  const { kind: _k, ...noKind } = update;
  t.match(parseWebhookPayload(noKind), { a2aKind: 'status-update' });
  t.match(
    parseWebhookPayload({
      kind: 'artifact-update',
      taskId: 't',
      artifact: { parts: [dataPart03({ z: 1 })] },
    }),
    {
      a2aKind: 'artifact-update',
      result: { z: 1 },
    },
  );
  t.match(
    parseWebhookPayload({
      kind: 'message',
      role: 'agent',
      parts: [],
      status: { state: 'working' },
    }),
    {
      a2aKind: 'message',
      status: null,
    },
  );
  t.equal(envelopeError({ ...task, kind: 'weird' }).code, 'invalid_envelope');
  t.equal(envelopeError({ ...task, status: { state: 'active' } }).code, 'invalid_envelope_status');
  t.equal(envelopeError({ ...update, status: { state: 5 } }).code, 'invalid_envelope');
  t.equal(envelopeError({ ...update, final: 'no' }).code, 'invalid_envelope');
});

t.test('A2A extraction edge cases', async (t) => {
  const base = { id: 't', status: { state: 'completed' } };
  // final without artifact data falls back to status.message (last DataPart)
  t.same(
    parseWebhookPayload({
      ...base,
      status: {
        state: 'completed',
        message: { parts: [dataPart03({ a: 1 }), dataPart03({ a: 2 })] },
      },
    }).result,
    { a: 2 },
  );
  // only artifacts[0] counts
  t.equal(
    parseWebhookPayload({
      ...base,
      artifacts: [{ parts: [textPart03('x')] }, { parts: [dataPart03({ b: 1 })] }],
    }).result,
    null,
  );
  // {response: {...}} wrapper bug is unwrapped
  t.same(
    parseWebhookPayload({ ...base, artifacts: [{ parts: [dataPart03({ response: { m: 1 } })] }] })
      .result,
    {
      m: 1,
    },
  );
  t.same(
    parseWebhookPayload({
      ...base,
      artifacts: [{ parts: [dataPart03({ response: { m: 1 }, other: 2 })] }],
    }).result,
    { response: { m: 1 }, other: 2 },
    'not a single-key wrapper',
  );
  // a file part is not a data part even if it has a data-like member
  t.equal(
    parseWebhookPayload({ ...base, artifacts: [{ parts: [{ kind: 'file', data: { f: 1 } }] }] })
      .result,
    null,
  );
  // canceled and rejected are finals; unknown gives null
  t.same(
    parseWebhookPayload({
      ...base,
      status: { state: 'canceled' },
      artifacts: [{ parts: [dataPart03(1)] }],
    }).result,
    1,
  );
  t.equal(
    parseWebhookPayload({
      ...base,
      status: { state: 'unknown', message: { parts: [dataPart03({ a: 1 })] } },
    }).result,
    null,
  );
  // interim with no message: null
  t.equal(
    parseWebhookPayload({ id: 't', status: { state: 'TASK_STATE_AUTH_REQUIRED' } }).result,
    null,
  );
});

t.test('property: random values never throw anything but EnvelopeError', async (t) => {
  const tryParse = (v: unknown, prefer?: 'mcp' | 'a2a'): boolean => {
    try {
      const e = parseWebhookPayload(v, prefer ? { prefer } : {});
      return e.format === 'mcp' || e.format === 'a2a';
    } catch (err) {
      if (!(err instanceof EnvelopeError)) throw err;
      return err.fields.every((f) => typeof f === 'string');
    } finally {
      extractWebhookData(v);
    }
  };
  fc.assert(
    fc.property(fc.anything({ withNullPrototype: true, withBigInt: true }), (v) => tryParse(v)),
    {
      numRuns: 500,
    },
  );
  fc.assert(
    fc.property(
      fc.jsonValue(),
      fc.constantFrom<'mcp' | 'a2a' | undefined>('mcp', 'a2a', undefined),
      tryParse,
    ),
    {
      numRuns: 500,
    },
  );
  // envelopes with members replaced by random values
  const shapes: Obj[] = [
    mcp(),
    {
      task: {
        id: 't',
        status: { state: 'TASK_STATE_WORKING', message: { parts: [{ data: {} }] } },
      },
    },
    { statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_WORKING' } } },
    { kind: 'status-update', taskId: 't', status: { state: 'working' }, final: false },
    {
      id: 't',
      status: { state: 'completed' },
      artifacts: [{ parts: [{ kind: 'data', data: {} }] }],
    },
  ];
  const mutated = fc
    .tuple(
      fc.constantFrom(...shapes),
      fc.array(fc.tuple(fc.nat(), fc.jsonValue({ maxDepth: 2 })), { maxLength: 3 }),
    )
    .map(([shape, edits]) => {
      const copy = structuredClone(shape);
      for (const [at, value] of edits) {
        // walk to a random object inside and overwrite one of its members
        let node: Obj = copy;
        for (let hops = at % 4; hops > 0; hops--) {
          const next = Object.values(node).find((x) => x !== null && typeof x === 'object');
          if (!next) break;
          node = next as Obj;
        }
        const keys = Object.keys(node);
        if (keys.length) node[keys[at % keys.length] as string] = value;
      }
      return copy;
    });
  fc.assert(
    fc.property(mutated, (v) => tryParse(v)),
    { numRuns: 1000 },
  );
  t.pass('held');
});
