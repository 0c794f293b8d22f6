/**
 * `svc conformance receiver`: the kit acts as a sender and grades the receiver at a URL,
 * group by group, into one report.
 */
import { buildReport, type CheckResult, type ConformanceReport } from '../report/report.js';
import { ReceiverRun, type ReceiverGradeOptions } from './context.js';
import { dedupChecks, envelopeChecks, gateChecks, legacyHmacChecks } from './receiver-checks.js';
import { kindChecks } from './kind-checks.js';
import { signingVectorChecks } from './signing-checks.js';

export type { ReceiverGradeOptions };

export async function gradeReceiver(options: ReceiverGradeOptions): Promise<ConformanceReport> {
  const startedAt = new Date().toISOString();
  const run = new ReceiverRun(options);
  // One plain GET first: a target that does not answer at all is reported as such, once,
  // with its whole error, instead of as every check failing the same way.
  const probe = await run.deliver({ method: 'GET', url: options.target, headers: {} }, 'probe');
  if (probe.status === undefined) {
    return buildReport({
      graded: 'receiver',
      target: options.target,
      brand: options.profile.brand,
      protocolVersion: options.protocolVersion,
      startedAt,
      checks: [],
      undriven: `the receiver at ${options.target} cannot be reached: ${probe.exchange.error ?? 'no response'}`,
    });
  }
  const checks: CheckResult[] = [
    ...(await signingVectorChecks(run)),
    ...(await gateChecks(run)),
    ...(await envelopeChecks(run)),
    ...(await dedupChecks(run)),
    ...(await kindChecks(run)),
    ...(await legacyHmacChecks(run)),
  ];
  return buildReport({
    graded: 'receiver',
    target: options.target,
    brand: options.profile.brand,
    protocolVersion: options.protocolVersion,
    startedAt,
    checks,
  });
}
