import t from 'tap';
import {
  EnvelopeError,
  a2a10State,
  buildA2aStatusUpdate,
  buildA2aTask,
  buildMcpEnvelope,
  isTerminalStatus,
  normalizeA2aState,
  parseWebhookPayload,
  TASK_STATUSES,
} from '../../../shared/envelope/index.js';
import type { A2aVersion } from '../../../shared/envelope/index.js';

type Obj = Record<string, unknown>;

t.test('status helpers', async (t) => {
  t.same(
    TASK_STATUSES.filter((s) => isTerminalStatus(s)),
    ['completed', 'canceled', 'failed', 'rejected'],
  );
  t.notOk(isTerminalStatus('unknown'));
  t.notOk(isTerminalStatus(undefined));
  const cases: [unknown, string | null][] = [
    ['TASK_STATE_COMPLETED', 'completed'],
    ['TASK_STATE_INPUT_REQUIRED', 'input-required'],
    ['TASK_STATE_AUTH_REQUIRED', 'auth-required'],
    ['input-required', 'input-required'],
    ['INPUT_REQUIRED', 'input-required'],
    ['Working', 'working'],
    ['TASK_STATE_UNSPECIFIED', null],
    ['TASK_STATE_', null],
    ['completed ', null],
    ['complete', null],
    ['task_state_completed', null],
    ['', null],
    [7, null],
  ];
  for (const [input, expected] of cases) t.equal(normalizeA2aState(input), expected, String(input));
  for (const s of TASK_STATUSES) t.equal(normalizeA2aState(a2a10State(s)), s);
});

t.test('buildMcpEnvelope emits a valid envelope and parses back', async (t) => {
  const env = buildMcpEnvelope({
    idempotencyKey: 'whk_a1b2c3d4e5f6a7b8',
    operationId: 'op_9',
    taskId: 'tsk_9',
    taskType: 'media_buy_delivery',
    status: 'completed',
    timestamp: '2026-04-01T00:00:00.000Z',
    result: { notification_type: 'final' },
    notificationId: undefined,
    context: { correlation_id: 'c1' },
  });
  t.same(env, {
    idempotency_key: 'whk_a1b2c3d4e5f6a7b8',
    operation_id: 'op_9',
    task_id: 'tsk_9',
    task_type: 'media_buy_delivery',
    status: 'completed',
    timestamp: '2026-04-01T00:00:00.000Z',
    context: { correlation_id: 'c1' },
    result: { notification_type: 'final' },
  });
  t.notOk('notification_id' in env, 'absent optionals are omitted, not null');
  const e = parseWebhookPayload(JSON.parse(JSON.stringify(env)));
  t.match(e, {
    format: 'mcp',
    idempotencyKey: 'whk_a1b2c3d4e5f6a7b8',
    taskId: 'tsk_9',
    status: 'completed',
  });
  const good = {
    idempotencyKey: 'whk_a1b2c3d4e5f6a7b8',
    operationId: 'op_9',
    taskId: 'tsk_9',
    taskType: 'create_media_buy' as const,
    status: 'working' as const,
    timestamp: '2026-04-01T00:00:00.000Z',
  };
  t.ok(buildMcpEnvelope(good));
  const bad: [Obj, string][] = [
    [{ idempotencyKey: 'k1' }, 'idempotency_key'],
    [{ timestamp: 'now' }, 'timestamp'],
    [{ status: 'active' }, 'status'],
    [{ taskType: 'nope' }, 'task_type'],
    [{ token: 'x' }, 'token'],
    [{ notificationId: 'a b' }, 'notification_id'],
  ];
  for (const [over, field] of bad) {
    const err = t.throws(() => buildMcpEnvelope({ ...good, ...over } as never)) as unknown;
    t.type(err, EnvelopeError);
    t.equal((err as EnvelopeError).code, 'invalid_envelope');
    t.same((err as EnvelopeError).fields, [field]);
  }
});

function walkParts(v: unknown, visit: (part: Obj) => void): void {
  if (Array.isArray(v)) v.forEach((x) => walkParts(x, visit));
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k === 'parts' && Array.isArray(x)) x.forEach((p) => visit(p as Obj));
      walkParts(x, visit);
    }
  }
}

t.test('A2A builders for both versions round-trip through the parser', async (t) => {
  const versions: A2aVersion[] = ['0.3', '1.0'];
  for (const version of versions) {
    const common = {
      version,
      taskId: 'tsk_a',
      contextId: 'ctx_a',
      timestamp: '2026-04-01T00:00:00.000Z',
    };
    const finalTask = buildA2aTask({
      ...common,
      status: 'completed',
      text: 'done',
      data: { media_buy_id: 'mb' },
    });
    const working = buildA2aStatusUpdate({
      ...common,
      status: 'working',
      data: { percentage: 5 },
      messageId: 'm1',
    });
    const ir = buildA2aStatusUpdate({
      ...common,
      status: 'input-required',
      text: 'approve?',
      data: { reason: 'r' },
    });
    const failed = buildA2aTask({
      ...common,
      status: 'failed',
      data: { adcp_error: { code: 'X' } },
    });
    const bare = buildA2aStatusUpdate({ ...common, status: 'working' });

    t.match(parseWebhookPayload(finalTask), {
      a2aVersion: version,
      a2aKind: 'task',
      status: 'completed',
      result: { media_buy_id: 'mb' },
    });
    t.match(parseWebhookPayload(working), {
      a2aVersion: version,
      a2aKind: 'status-update',
      status: 'working',
      result: { percentage: 5 },
    });
    t.match(parseWebhookPayload(ir), { status: 'input-required', result: { reason: 'r' } });
    t.match(parseWebhookPayload(failed), {
      status: 'failed',
      result: { adcp_error: { code: 'X' } },
    });
    t.match(parseWebhookPayload(bare), { status: 'working', result: null });

    if (version === '0.3') {
      t.equal(finalTask.kind, 'task');
      t.match(finalTask, { id: 'tsk_a', status: { state: 'completed' } });
      t.match(working, {
        kind: 'status-update',
        final: false,
        status: { state: 'working', message: { kind: 'message', role: 'agent', messageId: 'm1' } },
      });
      t.equal(buildA2aStatusUpdate({ ...common, status: 'completed' }).final, true);
      walkParts([finalTask, working, ir], (p) =>
        t.ok(p.kind === 'text' || p.kind === 'data', 'kind on 0.3 parts'),
      );
    } else {
      t.same(Object.keys(finalTask), ['task']);
      t.same(Object.keys(working), ['statusUpdate']);
      t.match(finalTask, {
        task: { id: 'tsk_a', contextId: 'ctx_a', status: { state: 'TASK_STATE_COMPLETED' } },
      });
      t.match(ir, {
        statusUpdate: {
          status: {
            state: 'TASK_STATE_INPUT_REQUIRED',
            message: { role: 'ROLE_AGENT', taskId: 'tsk_a' },
          },
        },
      });
      t.notOk('final' in (working.statusUpdate as Obj), 'no final in 1.0');
      t.notOk('kind' in (finalTask.task as Obj));
      walkParts([finalTask, working, ir], (p) => t.notOk('kind' in p, 'no kind on 1.0 parts'));
    }
  }
  // a non-final Task carries its data in status.message
  const wt = buildA2aTask({
    version: '1.0',
    taskId: 't',
    contextId: 'c',
    status: 'working',
    data: { p: 1 },
  });
  t.notOk('artifacts' in (wt.task as Obj));
  t.match(parseWebhookPayload(wt), { status: 'working', result: { p: 1 } });
  // default timestamps are ISO 8601 UTC with milliseconds
  const ts = (
    (buildA2aTask({ version: '1.0', taskId: 't', contextId: 'c', status: 'completed' }).task as Obj)
      .status as Obj
  ).timestamp;
  t.match(ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});
