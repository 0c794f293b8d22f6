/**
 * Checks beyond the signing vectors, each a signed delivery a conformant receiver answers
 * in one way: the HTTP gates (content type, size, method), the envelope rules of
 * supplement §5.7, deduplication on the delivery key (§5.2, spec reliability rules 7
 * and 9) and, where the receiver registered one, legacy HMAC-SHA256 (§6.8).
 */
import { randomBytes } from 'node:crypto';
import { CheckRecorder, type CheckResult } from '../report/report.js';
import { signHmac } from '../../shared/legacy/hmac.js';
import { challengeCode, describe, is2xx, type ReceiverRun } from './context.js';
import type { Answer } from './http-client.js';
import { bytesOf, deliveryReportEnvelope, deliveryReportResult, taskEnvelope } from './payloads.js';

const ONE_MB = 1024 * 1024;

function mentions(a: Answer, id: string): boolean {
  return a.text.includes(id);
}

/** Status is a 4xx that is not an authentication, conflict or rate answer. */
function isRejection(status: number | undefined): boolean {
  return status !== undefined && status >= 400 && status < 500 && ![401, 409, 429].includes(status);
}

export async function gateChecks(run: ReceiverRun): Promise<CheckResult[]> {
  const out: CheckResult[] = [];

  {
    const rec = new CheckRecorder(
      'gate.content-type',
      'gates',
      'Content-Type other than application/json is refused before verification',
      '415 (any 4xx but 401; the spec leaves the code open)',
    );
    const req = run.signed(bytesOf(taskEnvelope()), { contentType: 'text/plain' });
    const a = await run.deliver(req);
    rec.add(a.exchange);
    if (a.status === 415) out.push(rec.pass(describe(a)));
    else if (isRejection(a.status)) out.push(rec.pass(`${describe(a)} (415 recommended)`));
    else if (a.status === 401)
      out.push(rec.fail(`${describe(a)}: content type not gated before verification`));
    else out.push(rec.fail(describe(a)));
  }

  {
    const rec = new CheckRecorder(
      'gate.body-size',
      'gates',
      'A body over 1 MB is refused before any digest',
      '413',
    );
    const env = taskEnvelope();
    const skeleton = bytesOf({ ...env, padding: '' }).length;
    const body = bytesOf({ ...env, padding: 'x'.repeat(ONE_MB + 1 - skeleton) });
    const a = await run.deliver(run.signed(body));
    rec.add(a.exchange);
    out.push(a.status === 413 ? rec.pass(describe(a)) : rec.fail(describe(a)));
  }

  {
    const rec = new CheckRecorder(
      'gate.method',
      'gates',
      'A method other than POST is refused',
      '405 (any 4xx but 401)',
    );
    const a = await run.deliver(run.signed(bytesOf(taskEnvelope()), { method: 'PUT' }));
    rec.add(a.exchange);
    if (a.status === 405) out.push(rec.pass(describe(a)));
    else if (isRejection(a.status)) out.push(rec.pass(`${describe(a)} (405 recommended)`));
    else out.push(rec.fail(describe(a)));
  }
  return out;
}

export async function envelopeChecks(run: ReceiverRun): Promise<CheckResult[]> {
  const cases: Array<{
    id: string;
    title: string;
    body: Record<string, unknown>;
    errorId: string;
  }> = [
    {
      id: 'envelope.bare-delivery-result',
      title: 'A bare delivery report (no envelope) is rejected before dispatch',
      body: deliveryReportResult(),
      errorId: 'missing_envelope_fields',
    },
    {
      id: 'envelope.missing-idempotency-key',
      title: 'An envelope without idempotency_key is rejected',
      body: (() => {
        const e = deliveryReportEnvelope();
        delete e.idempotency_key;
        return e;
      })(),
      errorId: 'missing_idempotency_key',
    },
    {
      id: 'envelope.unsupported-status',
      title: 'A top-level status outside the task statuses ("active") is rejected',
      body: deliveryReportEnvelope({ status: 'active' }),
      errorId: 'invalid_envelope_status',
    },
  ];
  const out: CheckResult[] = [];
  for (const c of cases) {
    const rec = new CheckRecorder(
      c.id,
      'envelope',
      c.title,
      `non-2xx (4xx, not 401) before dispatch, naming ${c.errorId}`,
    );
    const before = await run.dispatchCount();
    const a = await run.deliver(run.signed(bytesOf(c.body)));
    rec.add(a.exchange);
    const after = await run.dispatchCount();
    const dispatched = typeof before === 'number' && typeof after === 'number' && after > before;
    if (!isRejection(a.status)) {
      out.push(
        rec.fail(
          describe(a),
          a.status === 401 ? (challengeCode(a.headers) ?? undefined) : undefined,
        ),
      );
    } else if (dispatched) {
      out.push(
        rec.fail(`${describe(a)} but the event was dispatched (count ${before} -> ${after})`),
      );
    } else {
      const named = mentions(a, c.errorId)
        ? `, names ${c.errorId}`
        : `; the body does not name ${c.errorId}`;
      out.push(rec.pass(`${describe(a)}${named}`));
    }
  }
  return out;
}

type DispatchCount = Awaited<ReturnType<ReceiverRun['dispatchCount']>>;

export async function dedupChecks(run: ReceiverRun): Promise<CheckResult[]> {
  return [
    ...(await exactDuplicateChecks(run)),
    await changedPayloadCheck(run),
    await staleStatusCheck(run),
  ];
}

/** The same delivery twice: acknowledged both times, and (with a count URL) dispatched once. */
async function exactDuplicateChecks(run: ReceiverRun): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  const rec = new CheckRecorder(
    'dedup.exact-duplicate',
    'dedup',
    'The same delivery again (same key, same body, fresh signature) is acknowledged and not dispatched twice',
    '2xx both times (never 409); dispatched once where a count URL is given',
  );
  const body = bytesOf(deliveryReportEnvelope());
  const c0 = await run.dispatchCount();
  const first = await run.deliver(run.signed(body), 'first');
  rec.add(first.exchange);
  const c1 = await run.dispatchCount();
  const second = await run.deliver(run.signed(body), 'duplicate');
  rec.add(second.exchange);
  const c2 = await run.dispatchCount();
  if (!is2xx(first.status)) out.push(rec.fail(`first delivery ${describe(first)}`));
  else if (!is2xx(second.status)) out.push(rec.fail(`duplicate ${describe(second)}`));
  else {
    out.push(rec.pass(`both acknowledged (${first.status}, ${second.status})`));
    out.push(dispatchedOnceCheck(c0, c1, c2));
  }
  if (out.length === 1 && out[0]!.status === 'failed') {
    out.push(
      new CheckRecorder(
        'dedup.not-dispatched-twice',
        'dedup',
        'The duplicate is not dispatched a second time',
        'dispatch count +1 then +0',
      ).notApplicable('the duplicate was not acknowledged'),
    );
  }
  return out;
}

/** The dispatch counts around the two deliveries: +1 after the first, +0 after the duplicate. */
function dispatchedOnceCheck(c0: DispatchCount, c1: DispatchCount, c2: DispatchCount): CheckResult {
  const count = new CheckRecorder(
    'dedup.not-dispatched-twice',
    'dedup',
    'The duplicate is not dispatched a second time',
    'dispatch count +1 after the first delivery, +0 after the duplicate',
  );
  if (typeof c0 !== 'number' || typeof c1 !== 'number' || typeof c2 !== 'number') {
    const why = [c0, c1, c2].find((c) => typeof c === 'string');
    return count.notApplicable(`dispatch count not available (${why})`);
  }
  if (c1 - c0 !== 1) return count.fail(`first delivery moved the count by ${c1 - c0}`);
  if (c2 !== c1) return count.fail(`dispatched again: count ${c1} -> ${c2}`, 'duplicate_dispatch');
  return count.pass(`count ${c0} -> ${c1} -> ${c2}`);
}

/** The same delivery key with another payload: 409 in 3.2, the first copy wins in 3.1. */
async function changedPayloadCheck(run: ReceiverRun): Promise<CheckResult> {
  const later = run.o.protocolVersion === '3.2';
  const rec = new CheckRecorder(
    'dedup.changed-payload',
    'dedup',
    'The same delivery key with a different payload',
    later ? '409 (3.2: the key is bound to its payload)' : '2xx (3.1: first copy wins silently)',
  );
  const env = taskEnvelope();
  const first = await run.deliver(run.signed(bytesOf(env)), 'first');
  rec.add(first.exchange);
  const changed = {
    ...env,
    result: {
      media_buy_id: `${String((env.result as Record<string, unknown>).media_buy_id)}_changed`,
    },
  };
  const second = await run.deliver(run.signed(bytesOf(changed)), 'changed');
  rec.add(second.exchange);
  if (!is2xx(first.status)) return rec.fail(`first delivery ${describe(first)}`);
  if (later ? second.status === 409 : is2xx(second.status)) return rec.pass(describe(second));
  return rec.fail(describe(second), later ? 'payload_conflict_not_detected' : undefined);
}

/** An older status after a newer one for the same task is answered 200. */
async function staleStatusCheck(run: ReceiverRun): Promise<CheckResult> {
  const rec = new CheckRecorder(
    'dedup.stale-status',
    'dedup',
    'An older status for a task (by timestamp) after a newer one is answered 200',
    '200 for the stale event',
  );
  const base = taskEnvelope({ status: 'working', result: { percentage: 60 } });
  const newer = new Date(Date.now() - 1000).toISOString();
  const older = new Date(Date.now() - 60_000).toISOString();
  const first = await run.deliver(run.signed(bytesOf({ ...base, timestamp: newer })), 'newer');
  rec.add(first.exchange);
  const stale = {
    ...base,
    idempotency_key: `whk_conformance_${randomBytes(16).toString('hex')}`,
    status: 'submitted',
    timestamp: older,
    result: {},
  };
  const second = await run.deliver(run.signed(bytesOf(stale)), 'stale');
  rec.add(second.exchange);
  if (!is2xx(first.status)) return rec.fail(`newer delivery ${describe(first)}`);
  return second.status === 200 ? rec.pass(describe(second)) : rec.fail(describe(second));
}

function hmacHeaders(
  run: ReceiverRun,
  body: Buffer,
  secret: string,
  timestamp: number,
): Record<string, string> {
  const signed = signHmac({ secret, body, timestamp });
  return {
    'content-type': 'application/json',
    [run.profile.hmacSignatureHeader.toLowerCase()]: signed.signature,
    [run.profile.hmacTimestampHeader.toLowerCase()]: signed.timestamp,
  };
}

export async function legacyHmacChecks(run: ReceiverRun): Promise<CheckResult[]> {
  const defs = [
    {
      id: 'legacy.hmac.good',
      title: 'A correct HMAC-SHA256 signature is accepted',
      expected: '2xx',
    },
    { id: 'legacy.hmac.skew', title: 'A timestamp 400 s old is refused', expected: '401' },
    { id: 'legacy.hmac.bad-hex', title: 'A signature that is not hex is refused', expected: '401' },
  ];
  const hmac = run.o.hmac;
  if (!hmac) {
    return defs.map((d) =>
      new CheckRecorder(d.id, 'legacy', d.title, d.expected).notApplicable(
        'no legacy HMAC registration given (--hmac-secret and --hmac-path)',
      ),
    );
  }
  const url = new URL(hmac.path, run.o.target).toString();
  const out: CheckResult[] = [];
  const now = run.now();
  const attempts: Array<(b: Buffer) => Record<string, string>> = [
    (b) => hmacHeaders(run, b, hmac.secret, now),
    (b) => hmacHeaders(run, b, hmac.secret, now - 400),
    (b) => ({
      ...hmacHeaders(run, b, hmac.secret, now),
      [run.profile.hmacSignatureHeader.toLowerCase()]: `sha256=${'zz'.repeat(32)}`,
    }),
  ];
  for (const [i, d] of defs.entries()) {
    const rec = new CheckRecorder(d.id, 'legacy', d.title, d.expected);
    const body = bytesOf(taskEnvelope());
    const a = await run.deliver({ method: 'POST', url, headers: attempts[i]!(body), body });
    rec.add(a.exchange);
    const ok = i === 0 ? is2xx(a.status) : a.status === 401;
    out.push(ok ? rec.pass(describe(a)) : rec.fail(describe(a)));
  }
  return out;
}
