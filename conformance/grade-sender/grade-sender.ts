/**
 * `svc conformance sender`: host a grading receiver, make the sender under test deliver
 * to it step by step (through a driver), and judge what arrives (supplement §5.5, §5.6):
 * signatures under the full verifier with one run-scoped replay store, envelope fields,
 * echoes, delivery-key shape and randomness, retries on 503, no retries after 409, no
 * webhook after a terminal initial response, and the published keys.
 */
import { randomBytes } from 'node:crypto';
import type { BrandProfile } from '../../shared/brand.js';
import { buildReport, type CheckResult, type ConformanceReport } from '../report/report.js';
import type { SenderDriver, StepRequest } from './driver.js';
import { acceptVerified, GradingServer, type StepScript } from './grading-server.js';
import { SenderKeyError, SenderKeys, type SenderKeyOptions } from './sender-keys.js';
import { sameEvent, type StepPlan, type StepRun } from './captures.js';
import { judgeSteps, type StepTimes } from './judge-steps.js';

export { sameEvent } from './captures.js';

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

/** The grade's timings and retry script, defaulted and range-checked (a bad one is a usage error). */
function stepTimes(o: SenderGradeOptions): StepTimes {
  const retries = o.retryCount ?? 3;
  const retryStatus = o.retryStatus ?? 503;
  if (!Number.isInteger(retries) || retries < 1 || retries > 10) {
    throw new RangeError('retryCount is 1-10');
  }
  if (![429, 500, 502, 503, 504].includes(retryStatus)) {
    throw new RangeError('retryStatus is one of 429, 500, 502, 503, 504');
  }
  return {
    stepTimeout: o.stepTimeoutMs ?? 90_000,
    quiet: o.quietMs ?? 10_000,
    retries,
    retryStatus,
  };
}

/** The four steps, in the order they run, with the answers the grading receiver gives. */
function stepPlans(t: StepTimes): StepPlan[] {
  return [
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
      script: retryScript(t.retries, t.retryStatus),
      instructions: `Same again on a new operation. The kit answers ${t.retryStatus} to the first ${t.retries} deliveries, then 200.`,
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
}

export async function gradeSender(o: SenderGradeOptions): Promise<ConformanceReport> {
  const startedAt = new Date().toISOString();
  const t = stepTimes(o);
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
    const driven = await driveSteps(o, server, stepPlans(t), t);
    checks.push(...judgeSteps(driven.runs, o, t));
    checks.push(await keys.publishedCheck());
    undriven = undrivenReason(o, driven);
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

/** What driving the steps gave: each step's run, and how many async steps the driver started. */
interface Driven {
  runs: StepRun[];
  triggered: number;
  /** Why the driver could not run at all; null when it prepared. */
  driverProblem: string | null;
}

/** Opens each step on the server, has the driver trigger it, and collects what arrived. */
async function driveSteps(
  o: SenderGradeOptions,
  server: GradingServer,
  plans: StepPlan[],
  t: StepTimes,
): Promise<Driven> {
  const driverProblem = await o.driver.prepare();
  const runs: StepRun[] = [];
  let triggered = 0;
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
    await awaitDeliveries(server, plan.id, t);
    step.captures = server.captures(plan.id);
  }
  return { runs, triggered, driverProblem };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the step's deliveries are in: what each step expects, then its quiet period. */
async function awaitDeliveries(server: GradingServer, id: string, t: StepTimes): Promise<void> {
  if (id === 'echo') {
    await server.waitFor(id, (c) => c.length >= 1, t.stepTimeout);
    // A short grace for an extra delivery the sender should not have made.
    await sleep(Math.min(t.quiet, 1000));
  } else if (id === 'retry') {
    await server.waitFor(
      id,
      (c) => c.some((x) => x.answered < 300 && sameEvent(x.json, c[0]!.json)),
      t.stepTimeout,
    );
  } else if (id === 'conflict') {
    const first = await server.waitFor(id, (c) => c.length >= 1, t.stepTimeout);
    if (first.length > 0) await sleep(t.quiet);
  } else {
    await sleep(t.quiet);
  }
}

/**
 * Not one delivering step could be driven: nothing the sender delivers was graded (the
 * terminal step's "no webhook" holds for a sender that sends nothing).
 */
function undrivenReason(o: SenderGradeOptions, d: Driven): string | null {
  if (d.triggered > 0) return null;
  const why = d.runs.filter((r) => r.notApplicable).map((r) => `[${r.plan.id}] ${r.notApplicable}`);
  return d.driverProblem ?? `${o.driver.name}: no step could be driven: ${why.join('; ')}`;
}
