/**
 * `svc conformance sender`: host a grading receiver, make the sender under test deliver
 * to it step by step (through a driver), and judge what arrives (supplement §5.5, §5.6):
 * signatures under the full verifier with one run-scoped replay store, envelope fields,
 * echoes, delivery-key shape and randomness, retries on 503, no retries after 409, no
 * webhook after a terminal initial response, and the published keys.
 */
import { randomBytes } from 'node:crypto';
import type { BrandProfile } from '../../shared/brand.js';
import {
  buildReport,
  CheckRecorder,
  excerpt,
  type CheckResult,
  type ConformanceReport,
  type Exchange,
} from '../report/report.js';
import { EnvelopeError } from '../../shared/envelope/errors.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../shared/envelope/mcp.js';
import { parseWebhookPayload } from '../../shared/envelope/parse.js';
import { canonicalJson } from '../../shared/json/canonical.js';
import type { SenderDriver, StepRequest } from './driver.js';
import { acceptVerified, GradingServer, type Capture, type StepScript } from './grading-server.js';
import { judgeKeyRandomness } from './key-randomness.js';
import { SenderKeyError, SenderKeys, type SenderKeyOptions } from './sender-keys.js';

export interface SenderGradeOptions {
  profile: BrandProfile;
  protocolVersion: '3.1' | '3.2';
  driver: SenderDriver;
  keys: SenderKeyOptions;
  listenHost?: string;
  listenPort?: number;
  publicUrl?: string;
  /** How long a step waits for deliveries (default 90 s, the runner's step timeout). */
  stepTimeoutMs?: number;
  /** How long silence must last to count as "nothing more came" (default 10 s). */
  quietMs?: number;
  /** 5xx answers before the 2xx in the retry step (1-10, default 3). */
  retryCount?: number;
  /** Status of those answers (429, 500, 502, 503 or 504; default 503). */
  retryStatus?: number;
  /** Called with each step's URL once the server listens (for logs). */
  onStep?: (step: StepRequest) => void;
}

interface StepPlan {
  id: string;
  initial: 'async' | 'terminal';
  script: StepScript;
  instructions: string;
}

interface StepRun {
  plan: StepPlan;
  request: StepRequest;
  /** Why the step could not run; null when it ran. */
  notApplicable: string | null;
  captures: Capture[];
}

function header(c: Capture, name: string): string {
  const v = c.headers[name];
  return Array.isArray(v) ? v.join(', ') : (v ?? '');
}

function exchangeOf(c: Capture): Exchange {
  const headers: Record<string, string> = {};
  for (const name of ['content-type', 'content-digest', 'signature-input', 'signature']) {
    const v = header(c, name);
    if (v) headers[name] = v;
  }
  return {
    label: `${c.stepId}#${c.index + 1}`,
    received: {
      method: c.method,
      url: c.url,
      headers,
      body: excerpt(c.body),
      bodyBytes: c.body.length,
    },
    sent: { status: c.answered },
  };
}

function field(c: Capture, name: string): unknown {
  return typeof c.json === 'object' && c.json !== null
    ? (c.json as Record<string, unknown>)[name]
    : undefined;
}

function withoutKey(json: unknown): string | null {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return null;
  const { idempotency_key: _k, ...rest } = json as Record<string, unknown>;
  return canonicalJson(rest);
}

/**
 * Whether two bodies are deliveries of one event: the same delivery key, or the same
 * payload under another key (a sender that re-keys its retries). Distinct events of one
 * operation (working, then completed) differ in both and are told apart.
 */
export function sameEvent(a: unknown, b: unknown): boolean {
  const ka = (a as Record<string, unknown> | null)?.idempotency_key;
  const kb = (b as Record<string, unknown> | null)?.idempotency_key;
  if (typeof ka === 'string' && ka === kb) return true;
  const wa = withoutKey(a);
  return wa !== null && wa === withoutKey(b);
}

/** 5xx to the first `n` deliveries of the step's first event, then 200 (others: 200). */
function retryScript(n: number, status: number): StepScript {
  let first: unknown;
  let seen = 0;
  return (_i, _v, json) => {
    if (seen === 0) first = json;
    else if (!sameEvent(json, first)) return 200;
    seen++;
    return seen <= n ? status : 200;
  };
}

function nonceOf(c: Capture): string | null {
  return /;nonce="([^"]*)"/.exec(header(c, 'signature-input'))?.[1] ?? null;
}

export async function gradeSender(o: SenderGradeOptions): Promise<ConformanceReport> {
  const startedAt = new Date().toISOString();
  const stepTimeout = o.stepTimeoutMs ?? 90_000;
  const quiet = o.quietMs ?? 10_000;
  const retries = o.retryCount ?? 3;
  const retryStatus = o.retryStatus ?? 503;
  if (!Number.isInteger(retries) || retries < 1 || retries > 10) {
    throw new RangeError('retryCount is 1-10');
  }
  if (![429, 500, 502, 503, 504].includes(retryStatus)) {
    throw new RangeError('retryStatus is one of 429, 500, 502, 503, 504');
  }
  const keys = new SenderKeys(o.keys, o.profile);
  await keys.load();
  // A key file is the tester's own input: a bad one is a usage error, not a grade.
  if (o.keys.jwksFile && keys.loadError) throw new SenderKeyError(keys.loadError);
  const server = new GradingServer({
    profile: o.profile,
    keys,
    host: o.listenHost,
    port: o.listenPort,
    publicUrl: o.publicUrl,
  });
  await server.start();
  const checks: CheckResult[] = [];
  let undriven: string | null = null;
  try {
    const plans: StepPlan[] = [
      {
        id: 'echo',
        initial: 'async',
        script: acceptVerified,
        instructions:
          'Register this push_notification_config and context on an operation that answers working or submitted, then let it complete.',
      },
      {
        id: 'retry',
        initial: 'async',
        script: retryScript(retries, retryStatus),
        instructions: `Same again on a new operation. The kit answers ${retryStatus} to the first ${retries} deliveries, then 200.`,
      },
      {
        id: 'conflict',
        initial: 'async',
        script: (i) => (i === 0 ? 409 : 200),
        instructions:
          'Same again on a new operation. The kit answers 409 to the first delivery: the sender must not retry it.',
      },
      {
        id: 'terminal',
        initial: 'terminal',
        script: acceptVerified,
        instructions:
          'Register this config on an operation that completes in its initial response (terminal): no webhook is due.',
      },
    ];
    const driverProblem = await o.driver.prepare();
    const runs: StepRun[] = [];
    let triggered = 0; // async steps the driver started
    for (const plan of plans) {
      const run = `${plan.id}_${randomBytes(6).toString('hex')}`;
      const request: StepRequest = {
        stepId: plan.id,
        url: server.openStep(plan.id, plan.script),
        operationId: `op_conformance_${run}`,
        context: { correlation_id: `conformance-${run}`, nested: { step: plan.id, n: 1 } },
        initial: plan.initial,
        instructions: plan.instructions,
      };
      o.onStep?.(request);
      const step: StepRun = { plan, request, notApplicable: driverProblem, captures: [] };
      runs.push(step);
      if (driverProblem) continue;
      const outcome = await o.driver.trigger(request);
      if ('notApplicable' in outcome) {
        step.notApplicable = outcome.notApplicable;
        continue;
      }
      if (plan.initial === 'async') triggered++;
      if (plan.id === 'echo') {
        step.captures = await server.waitFor(plan.id, (c) => c.length >= 1, stepTimeout);
        // A short grace for an extra delivery the sender should not have made.
        await new Promise((r) => setTimeout(r, Math.min(quiet, 1000)));
      } else if (plan.id === 'retry') {
        step.captures = await server.waitFor(
          plan.id,
          (c) => c.some((x) => x.answered < 300 && sameEvent(x.json, c[0]!.json)),
          stepTimeout,
        );
      } else if (plan.id === 'conflict') {
        const first = await server.waitFor(plan.id, (c) => c.length >= 1, stepTimeout);
        if (first.length > 0) await new Promise((r) => setTimeout(r, quiet));
      } else {
        await new Promise((r) => setTimeout(r, quiet));
      }
      step.captures = server.captures(plan.id);
    }
    checks.push(...judgeSteps(runs, o, { stepTimeout, quiet, retries, retryStatus }));
    checks.push(await keys.publishedCheck());
    // Not one delivering step could be driven: nothing the sender delivers was graded (the
    // terminal step's "no webhook" holds for a sender that sends nothing).
    if (triggered === 0) {
      const why = runs
        .filter((r) => r.notApplicable)
        .map((r) => `[${r.plan.id}] ${r.notApplicable}`);
      undriven = driverProblem ?? `${o.driver.name}: no step could be driven: ${why.join('; ')}`;
    }
  } finally {
    await o.driver.close?.();
    await server.close();
  }
  return buildReport({
    graded: 'sender',
    target:
      o.driver.name === 'manual'
        ? `manual (${keys.description})`
        : `${o.driver.name} (${keys.description})`,
    brand: o.profile.brand,
    protocolVersion: o.protocolVersion,
    startedAt,
    checks,
    undriven,
  });
}

function judgeSteps(
  runs: StepRun[],
  o: SenderGradeOptions,
  t: { stepTimeout: number; quiet: number; retries: number; retryStatus: number },
): CheckResult[] {
  const out: CheckResult[] = [];
  const step = (id: string) => runs.find((r) => r.plan.id === id)!;
  const asyncRuns = runs.filter((r) => r.plan.initial === 'async' && r.notApplicable === null);
  const delivered = asyncRuns.flatMap((r) => r.captures);
  const naAll = (rec: CheckRecorder) =>
    rec.notApplicable(runs[0]?.notApplicable ?? 'no step could be driven');

  // Presence: a webhook arrives for an async operation.
  {
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
  }

  const perDelivery = (
    id: string,
    group: string,
    title: string,
    expected: string,
    judge: (c: Capture, r: StepRun) => string | null,
    code?: (c: Capture) => string | undefined,
  ) => {
    const rec = new CheckRecorder(id, group, title, expected);
    if (asyncRuns.length === 0) return naAll(rec);
    if (delivered.length === 0) return rec.notApplicable('no delivery arrived to judge');
    const bad: string[] = [];
    let firstCode: string | undefined;
    for (const r of asyncRuns) {
      for (const c of r.captures) {
        const problem = judge(c, r);
        if (problem) {
          bad.push(`${c.stepId}#${c.index + 1}: ${problem}`);
          rec.add(exchangeOf(c));
          firstCode ??= code?.(c);
        }
      }
    }
    return bad.length === 0
      ? rec.pass(`${delivered.length} deliveries checked`)
      : rec.fail(bad.join('; '), firstCode);
  };

  out.push(
    perDelivery(
      'signature.every-delivery',
      'signature',
      `Every delivery, retries included, passes the full verifier (tag ${o.profile.webhookTag}, one replay store for the run)`,
      'verified; no nonce seen twice in the run',
      (c) => (c.verification.ok ? null : `${c.verification.code} (${c.verification.message})`),
      (c) => (c.verification.ok ? undefined : c.verification.code.replace(/^webhook_/, '')),
    ),
  );
  out.push(
    perDelivery(
      'envelope.schema',
      'envelope',
      'The body is an MCP webhook envelope with every required field of the right type',
      'idempotency_key, operation_id, task_id, task_type, status, timestamp; valid types',
      (c) => {
        if (c.json === null) return 'body is not strict JSON';
        try {
          parseWebhookPayload(c.json, { prefer: 'mcp' });
          return null;
        } catch (err) {
          if (err instanceof EnvelopeError) return `${err.code}: ${err.fields.join(', ')}`;
          throw err;
        }
      },
      () => 'schema_violation',
    ),
  );
  out.push(
    perDelivery(
      'envelope.operation-id-echo',
      'envelope',
      'operation_id is echoed exactly as registered (not parsed from the URL)',
      'operation_id equal to the registered one',
      (c, r) => {
        const got = field(c, 'operation_id');
        return got === r.request.operationId ? null : `operation_id ${JSON.stringify(got)}`;
      },
      () => 'operation_id_mismatch',
    ),
  );
  out.push(
    perDelivery(
      'envelope.context-echo',
      'envelope',
      "The request's top-level context is echoed verbatim",
      'context equal (RFC 8785) to the one sent',
      (c, r) => {
        const got = field(c, 'context');
        if (got === undefined) return 'no context';
        return canonicalJson(got) === canonicalJson(r.request.context)
          ? null
          : `context ${excerpt(JSON.stringify(got))}`;
      },
      () => 'context_mismatch',
    ),
  );
  out.push(
    perDelivery(
      'idempotency-key.format',
      'idempotency-key',
      'idempotency_key matches ^[A-Za-z0-9_.:-]{16,255}$',
      'a key of 16-255 characters of [A-Za-z0-9_.:-]',
      (c) => {
        const k = field(c, 'idempotency_key');
        if (typeof k !== 'string') return 'missing idempotency_key';
        return IDEMPOTENCY_KEY_PATTERN.test(k) ? null : `key ${JSON.stringify(k)}`;
      },
      (c) =>
        typeof field(c, 'idempotency_key') === 'string'
          ? 'invalid_idempotency_key_format'
          : 'missing_idempotency_key',
    ),
  );
  {
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
  }

  // Retry: N answers of 5xx, then 200.
  {
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
  }

  // 409 stops retries of that key.
  {
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
  }

  // Terminal initial response: nothing to send.
  {
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
  }
  return out;
}
