import t from 'tap';
import fc from 'fast-check';
import {
  DuplicateKeyInputError,
  TASK_ERROR_CODES,
  TASK_ERROR_STATUS,
  TaskError,
  isTaskErrorCode,
  parseSenderPayload,
  readErrorBody,
  signalErrorsBody,
} from '../../shared/errors/task-errors.js';
import { JsonParseError } from '../../shared/json/strict-parse.js';

t.test('every spec error code has its status', async (t) => {
  const expected: Record<string, number> = {
    AUTH_REQUIRED: 401,
    AUTH_INVALID: 401,
    INSUFFICIENT_PERMISSIONS: 403,
    VALIDATION_ERROR: 400,
    INVALID_FORMAT_ID: 400,
    INVALID_REQUEST: 400,
    IDEMPOTENCY_CONFLICT: 409,
    SIGNAL_AGENT_SEGMENT_NOT_FOUND: 404,
    ACTIVATION_FAILED: 422,
    ALREADY_ACTIVATED: 409,
    DEPLOYMENT_UNAUTHORIZED: 403,
    AGENT_NOT_FOUND: 404,
    AGENT_ACCESS_DENIED: 403,
  };
  for (const [code, status] of Object.entries(expected)) {
    t.ok(isTaskErrorCode(code), code);
    t.equal(TASK_ERROR_STATUS[code as keyof typeof TASK_ERROR_STATUS], status, code);
    t.equal(new TaskError(code as never, 'm').status, status);
  }
  t.ok(TASK_ERROR_CODES.includes('UNSUPPORTED_GRANULARITY'));
  for (const s of Object.values(TASK_ERROR_STATUS)) t.ok(s >= 400 && s < 500, 'all 4xx');
  t.notOk(isTaskErrorCode('toString'), 'no prototype keys');
  t.notOk(isTaskErrorCode('webhook_signature_invalid'));
  t.notOk(isTaskErrorCode(401));
});

t.test('TaskError serialises to both shapes', async (t) => {
  const e = new TaskError('VALIDATION_ERROR', 'budget must be greater than 0', {
    field: 'packages[0].budget',
    suggestion: 'send a positive budget',
  });
  t.type(e, Error);
  t.equal(e.name, 'TaskError');
  t.same(e.toErrorBody(), {
    error: {
      code: 'VALIDATION_ERROR',
      message: 'budget must be greater than 0',
      field: 'packages[0].budget',
    },
  });
  t.same(e.toSignalErrorsBody(), {
    errors: [
      {
        code: 'VALIDATION_ERROR',
        message: 'budget must be greater than 0',
        field: 'packages[0].budget',
        suggestion: 'send a positive budget',
      },
    ],
  });
  const bare = new TaskError('AUTH_REQUIRED', 'credentials required');
  t.same(bare.toErrorBody(), { error: { code: 'AUTH_REQUIRED', message: 'credentials required' } });
  t.notOk('field' in bare.toErrorBody().error, 'absent field omitted, not null');
  t.same(JSON.parse(JSON.stringify(bare.toSignalErrorsBody())), {
    errors: [{ code: 'AUTH_REQUIRED', message: 'credentials required' }],
  });
  t.equal(new TaskError('VALIDATION_ERROR', 'schema', { status: 422 }).status, 422);
  const cause = new Error('inner');
  t.equal(new TaskError('ACTIVATION_FAILED', 'x', { cause }).cause, cause);
  t.same(
    signalErrorsBody([
      new TaskError('SIGNAL_AGENT_SEGMENT_NOT_FOUND', 'no such segment', {
        field: 'signal_agent_segment_id',
      }),
      new TaskError('DEPLOYMENT_UNAUTHORIZED', 'not on this platform', { field: 'deployments[1]' }),
    ]).errors.map((x) => x.code),
    ['SIGNAL_AGENT_SEGMENT_NOT_FOUND', 'DEPLOYMENT_UNAUTHORIZED'],
  );
});

t.test('error bodies read back, malformed ones give null', async (t) => {
  const e = new TaskError('INVALID_FORMAT_ID', 'format_id must be an object', {
    field: 'format_id',
  });
  t.same(readErrorBody(e.toErrorBody()), [
    { code: 'INVALID_FORMAT_ID', message: 'format_id must be an object', field: 'format_id' },
  ]);
  t.same(readErrorBody(e.toSignalErrorsBody())?.[0]?.code, 'INVALID_FORMAT_ID');
  for (const bad of [
    null,
    'x',
    {},
    { error: 'x' },
    { error: { code: '', message: 'm' } },
    { errors: [] },
    { errors: [{ code: 1 }] },
    { error: { message: 'm' } },
  ]) {
    t.equal(readErrorBody(bad), null, JSON.stringify(bad));
  }
  fc.assert(
    fc.property(fc.anything(), (v) => {
      const r = readErrorBody(v);
      return r === null || Array.isArray(r);
    }),
    { numRuns: 300 },
  );
});

t.test('duplicate_key_input on the sender', async (t) => {
  t.same(parseSenderPayload('{"a":[{"b":1}]}'), { a: [{ b: 1 }] });
  const err = t.throws(() =>
    parseSenderPayload('{"a":[{"b":1,"b":2}],"c":{"d":{"e":1,"e":1}}}'),
  ) as unknown;
  t.type(err, DuplicateKeyInputError);
  const d = err as DuplicateKeyInputError;
  t.equal(d.id, 'duplicate_key_input');
  t.same(d.duplicateKeys, ['b', 'e']);
  t.equal(d.status, 400);
  t.same(d.toErrorBody().error.code, 'duplicate_key_input');
  // other defects stay JSON errors
  t.throws(() => parseSenderPayload('{"a":1,}'), JsonParseError);
  t.throws(() => parseSenderPayload(Buffer.from([0xff])), JsonParseError);
  // the message never carries raw control characters
  const ctl = t.throws(() =>
    parseSenderPayload('{"a\\u0000b":1,"a\\u0000b":2}'),
  ) as DuplicateKeyInputError;
  t.same(ctl.duplicateKeys, ['a\u0000b']);
  t.notOk(ctl.message.includes('\u0000'), 'no NUL in message');
});
