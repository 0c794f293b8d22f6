/**
 * The sender grade's judges (supplement §5.5, §5.6): one function per step or property,
 * each turning the captured deliveries into check results for the report.
 */
import { CheckRecorder, excerpt, type CheckResult } from '../report/report.js';
import { EnvelopeError } from '../../shared/envelope/errors.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../shared/envelope/mcp.js';
import { parseWebhookPayload } from '../../shared/envelope/parse.js';
import { canonicalJson } from '../../shared/json/canonical.js';
import { exchangeOf, field, nonceOf, sameEvent, withoutKey, type StepRun } from './captures.js';
import type { Capture } from './grading-server.js';
import { judgeKeyRandomness } from './key-randomness.js';
import type { BrandProfile } from '../../shared/brand.js';

/** What the judges need of the grade's options (the tag the signatures must carry). */
export interface JudgedSender {
  profile: BrandProfile;
}

export interface StepTimes {
  stepTimeout: number;
  quiet: number;
  retries: number;
  retryStatus: number;
}

interface Judging {
  runs: StepRun[];
  o: JudgedSender;
  t: StepTimes;
  step(id: string): StepRun;
  asyncRuns: StepRun[];
  delivered: Capture[];
  naAll(rec: CheckRecorder): CheckResult;
}

export function judgeSteps(runs: StepRun[], o: JudgedSender, t: StepTimes): CheckResult[] {
  const step = (id: string) => runs.find((r) => r.plan.id === id)!;
  const asyncRuns = runs.filter((r) => r.plan.initial === 'async' && r.notApplicable === null);
  const j: Judging = {
    runs,
    o,
    t,
    step,
    asyncRuns,
    delivered: asyncRuns.flatMap((r) => r.captures),
    naAll: (rec) => rec.notApplicable(runs[0]?.notApplicable ?? 'no step could be driven'),
  };
  return [
    ...judgePresence(j),
    ...judgeEachDelivery(j),
    ...judgeKeyRandomnessCheck(j),
    ...judgeRetry(j),
    ...judgeConflict(j),
    ...judgeTerminal(j),
  ];
}

/** Presence: a webhook arrives for an async operation. */
function judgePresence(j: Judging): CheckResult[] {
  const out: CheckResult[] = [];
  const { step, t } = j;
  const echo = step('echo');
  const rec = new CheckRecorder(
    'delivery.received',
    'delivery',
    'A webhook arrives after an operation answered working/submitted',
    `a POST to the step URL within ${t.stepTimeout / 1000} s`,
  );
  if (echo.notApplicable) out.push(rec.notApplicable(echo.notApplicable));
  else if (echo.captures.length === 0)
    out.push(rec.fail('no webhook received', 'no_webhook_received'));
  else {
    echo.captures.forEach((c) => rec.add(exchangeOf(c)));
    out.push(rec.pass(`${echo.captures.length} delivery(ies)`));
  }
  return out;
}

/** One property every delivery of the async steps must have, and how a delivery breaks it. */
interface DeliveryProperty {
  id: string;
  group: string;
  title: string;
  expected: string;
  /** The problem with this delivery, or null when it holds. */
  judge: (c: Capture, r: StepRun) => string | null;
  /** The report code of the first delivery that broke it. */
  code?: (c: Capture) => string | undefined;
}

/** Properties every delivery of the async steps must have (signature, envelope, echoes, key). */
function judgeEachDelivery(j: Judging): CheckResult[] {
  return [signatureProperty(j.o), ENVELOPE_SCHEMA, OPERATION_ID_ECHO, CONTEXT_ECHO, KEY_FORMAT].map(
    (p) => judgeProperty(j, p),
  );
}

/** One property over every delivery of the async steps: each breach recorded with its exchange. */
function judgeProperty(j: Judging, p: DeliveryProperty): CheckResult {
  const { asyncRuns, delivered, naAll } = j;
  const rec = new CheckRecorder(p.id, p.group, p.title, p.expected);
  if (asyncRuns.length === 0) return naAll(rec);
  if (delivered.length === 0) return rec.notApplicable('no delivery arrived to judge');
  const bad: string[] = [];
  let firstCode: string | undefined;
  for (const r of asyncRuns) {
    for (const c of r.captures) {
      const problem = p.judge(c, r);
      if (problem) {
        bad.push(`${c.stepId}#${c.index + 1}: ${problem}`);
        rec.add(exchangeOf(c));
        firstCode ??= p.code?.(c);
      }
    }
  }
  return bad.length === 0
    ? rec.pass(`${delivered.length} deliveries checked`)
    : rec.fail(bad.join('; '), firstCode);
}

function signatureProperty(o: JudgedSender): DeliveryProperty {
  return {
    id: 'signature.every-delivery',
    group: 'signature',
    title: `Every delivery, retries included, passes the full verifier (tag ${o.profile.webhookTag}, one replay store for the run)`,
    expected: 'verified; no nonce seen twice in the run',
    judge: (c) => (c.verification.ok ? null : `${c.verification.code} (${c.verification.message})`),
    code: (c) => (c.verification.ok ? undefined : c.verification.code.replace(/^webhook_/, '')),
  };
}

const ENVELOPE_SCHEMA: DeliveryProperty = {
  id: 'envelope.schema',
  group: 'envelope',
  title: 'The body is an MCP webhook envelope with every required field of the right type',
  expected: 'idempotency_key, operation_id, task_id, task_type, status, timestamp; valid types',
  judge: (c) => {
    if (c.json === null) return 'body is not strict JSON';
    try {
      parseWebhookPayload(c.json, { prefer: 'mcp' });
      return null;
    } catch (err) {
      if (err instanceof EnvelopeError) return `${err.code}: ${err.fields.join(', ')}`;
      throw err;
    }
  },
  code: () => 'schema_violation',
};

const OPERATION_ID_ECHO: DeliveryProperty = {
  id: 'envelope.operation-id-echo',
  group: 'envelope',
  title: 'operation_id is echoed exactly as registered (not parsed from the URL)',
  expected: 'operation_id equal to the registered one',
  judge: (c, r) => {
    const got = field(c, 'operation_id');
    return got === r.request.operationId ? null : `operation_id ${JSON.stringify(got)}`;
  },
  code: () => 'operation_id_mismatch',
};

const CONTEXT_ECHO: DeliveryProperty = {
  id: 'envelope.context-echo',
  group: 'envelope',
  title: "The request's top-level context is echoed verbatim",
  expected: 'context equal (RFC 8785) to the one sent',
  judge: (c, r) => {
    const got = field(c, 'context');
    if (got === undefined) return 'no context';
    return canonicalJson(got) === canonicalJson(r.request.context)
      ? null
      : `context ${excerpt(JSON.stringify(got))}`;
  },
  code: () => 'context_mismatch',
};

const KEY_FORMAT: DeliveryProperty = {
  id: 'idempotency-key.format',
  group: 'idempotency-key',
  title: 'idempotency_key matches ^[A-Za-z0-9_.:-]{16,255}$',
  expected: 'a key of 16-255 characters of [A-Za-z0-9_.:-]',
  judge: (c) => {
    const k = field(c, 'idempotency_key');
    if (typeof k !== 'string') return 'missing idempotency_key';
    return IDEMPOTENCY_KEY_PATTERN.test(k) ? null : `key ${JSON.stringify(k)}`;
  },
  code: (c) =>
    typeof field(c, 'idempotency_key') === 'string'
      ? 'invalid_idempotency_key_format'
      : 'missing_idempotency_key',
};

/** Delivery keys look cryptographically random. */
function judgeKeyRandomnessCheck(j: Judging): CheckResult[] {
  const out: CheckResult[] = [];
  const { asyncRuns, delivered, naAll } = j;
  const rec = new CheckRecorder(
    'idempotency-key.randomness',
    'idempotency-key',
    'Delivery keys look cryptographically random (no clock readings, no counters)',
    'no timestamp in a key; keys of distinct events share no counter; ≥ 64 bits vary',
  );
  const seen = new Map<string, number>();
  for (const c of delivered) {
    const k = field(c, 'idempotency_key');
    if (typeof k === 'string' && !seen.has(k)) seen.set(k, c.at);
  }
  if (asyncRuns.length === 0) out.push(naAll(rec));
  else if (seen.size === 0) out.push(rec.notApplicable('no delivery key to judge'));
  else {
    const v = judgeKeyRandomness([...seen].map(([key, at]) => ({ key, at })));
    const bits = v.estimatedBits === null ? 'one key only' : `~${v.estimatedBits} bits vary`;
    out.push(
      v.problems.length
        ? rec.fail(v.problems.join('; '), 'idempotency_key_not_random')
        : rec.pass(`${seen.size} distinct keys, ${bits}`),
    );
  }
  return out;
}

/** Retry: N answers of 5xx, then 200. */
function judgeRetry(j: Judging): CheckResult[] {
  const out: CheckResult[] = [];
  const { step, t } = j;
  const r = step('retry');
  // The retries of the step's first event; later events of the operation are not retries.
  const caps = r.captures.filter((c) => sameEvent(c.json, r.captures[0]!.json));
  const mk = (id: string, title: string, expected: string) => {
    const rec = new CheckRecorder(id, 'retry', title, expected);
    caps.forEach((c) => rec.add(exchangeOf(c)));
    return rec;
  };
  const first = caps[0];
  const recs = {
    count: mk(
      'retry.deliveries',
      `Answered ${t.retryStatus} ${t.retries} times then 200, the sender retries`,
      `at least 2 deliveries within 90 s of the first`,
    ),
    key: mk(
      'retry.key-stable',
      'Every retry carries the same idempotency_key',
      'byte-identical idempotency_key',
    ),
    body: mk(
      'retry.body-stable',
      'Every retry carries the same payload',
      'byte-identical body (RFC 8785-equivalent accepted: member order and whitespace may change)',
    ),
    nonce: mk(
      'retry.fresh-nonces',
      'Every retry is signed anew (fresh nonce, verifies)',
      'distinct nonces; each retry verifies',
    ),
  };
  if (r.notApplicable) {
    for (const rec of Object.values(recs)) out.push(rec.notApplicable(r.notApplicable));
  } else if (!first) {
    for (const rec of Object.values(recs))
      out.push(rec.fail('no webhook received', 'no_webhook_received'));
  } else {
    const within = caps.filter((c) => c.at - first.at <= 90_000);
    out.push(
      within.length >= 2
        ? recs.count.pass(
            `${within.length} deliveries in ${Math.round((within.at(-1)!.at - first.at) / 100) / 10} s`,
          )
        : recs.count.fail(`${within.length} delivery within 90 s`, 'insufficient_retries'),
    );
    if (caps.length < 2) {
      for (const rec of [recs.key, recs.body, recs.nonce])
        out.push(rec.notApplicable('fewer than two deliveries to compare'));
    } else {
      const keysSeen = caps.map((c) => field(c, 'idempotency_key'));
      const k0 = keysSeen[0];
      if (keysSeen.every((k) => k === k0))
        out.push(recs.key.pass(`${caps.length} deliveries, one key`));
      else {
        // Shape: the runs of [A-Za-z0-9] by length, separators as they are.
        const shape = (k: unknown) =>
          typeof k === 'string' ? k.replace(/[A-Za-z0-9]+/g, (m) => `<${m.length}>`) : typeof k;
        const changedShape = keysSeen.some((k) => shape(k) !== shape(k0));
        out.push(
          recs.key.fail(
            `keys: ${keysSeen.map((k) => JSON.stringify(k)).join(', ')}`,
            changedShape ? 'idempotency_key_format_changed' : 'idempotency_key_rotated',
          ),
        );
      }
      const b0 = caps[0]!.body;
      if (caps.every((c) => c.body.equals(b0))) out.push(recs.body.pass('byte-identical'));
      else {
        // The key has its own check: compare the rest, so a rotated key is named once.
        const jcs = (c: Capture) => withoutKey(c.json);
        const same = caps.every((c) => jcs(c) !== null && jcs(c) === jcs(caps[0]!));
        const keyOnly = keysSeen.some((k) => k !== k0);
        out.push(
          same
            ? recs.body.pass(
                keyOnly
                  ? 'the same apart from idempotency_key (see retry.key-stable)'
                  : 'RFC 8785-equivalent, bytes differ (member order or whitespace)',
              )
            : recs.body.fail('the payload changed between retries', 'payload_changed_on_retry'),
        );
      }
      const nonces = caps.map(nonceOf);
      const dup = nonces.find((n, i) => n !== null && nonces.indexOf(n) !== i);
      const unverified = caps.filter((c) => !c.verification.ok);
      if (dup) out.push(recs.nonce.fail(`nonce ${dup} reused`, 'signature_replayed'));
      else if (unverified.length) {
        const v = unverified[0]!.verification;
        out.push(
          recs.nonce.fail(`a retry does not verify: ${v.ok ? '' : v.code}`, 'signature_invalid'),
        );
      } else out.push(recs.nonce.pass(`${caps.length} distinct nonces`));
    }
  }
  return out;
}

/** 409 stops retries of that key. */
function judgeConflict(j: Judging): CheckResult[] {
  const out: CheckResult[] = [];
  const { step, t } = j;
  const r = step('conflict');
  const rec = new CheckRecorder(
    'conflict.stops-retries',
    'retry',
    '409 is final for that delivery key',
    `one delivery, nothing more under that key for ${t.quiet / 1000} s`,
  );
  r.captures.forEach((c) => rec.add(exchangeOf(c)));
  const k0 = r.captures[0] ? field(r.captures[0], 'idempotency_key') : undefined;
  const again = r.captures.slice(1).filter((c) => field(c, 'idempotency_key') === k0);
  if (r.notApplicable) out.push(rec.notApplicable(r.notApplicable));
  else if (r.captures.length === 0)
    out.push(rec.fail('no webhook received', 'no_webhook_received'));
  else if (again.length)
    out.push(rec.fail(`retried ${again.length} time(s) after 409`, 'retried_after_conflict'));
  else out.push(rec.pass(`no retry within ${t.quiet / 1000} s`));
  return out;
}

/** Terminal initial response: nothing to send. */
function judgeTerminal(j: Judging): CheckResult[] {
  const out: CheckResult[] = [];
  const { step, t } = j;
  const r = step('terminal');
  const rec = new CheckRecorder(
    'terminal-initial.no-webhook',
    'delivery',
    'No webhook after a terminal initial response',
    `no delivery to the step URL for ${t.quiet / 1000} s`,
  );
  r.captures.forEach((c) => rec.add(exchangeOf(c)));
  if (r.notApplicable) out.push(rec.notApplicable(r.notApplicable));
  else if (r.captures.length)
    out.push(rec.fail(`${r.captures.length} webhook(s) received`, 'unexpected_webhook_received'));
  else out.push(rec.pass(`silence for ${t.quiet / 1000} s`));
  return out;
}
