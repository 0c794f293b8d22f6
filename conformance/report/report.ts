/**
 * The conformance report both kits produce: one result per named check, each either
 * passed, failed or not applicable (a check that could not run is never a pass), with
 * what was sent and what came back, so a tester can reproduce a failure by hand.
 */

export type CheckStatus = 'passed' | 'failed' | 'not_applicable';

/** One HTTP message as the report shows it: headers whole, the body cut short. */
export interface MessageRecord {
  method?: string;
  url?: string;
  status?: number;
  headers?: Record<string, string>;
  /** The first bytes of the body as text (see BODY_EXCERPT_BYTES). */
  body?: string;
  bodyBytes?: number;
}

export interface Exchange {
  /** What this exchange is for, when a check makes several (e.g. "first", "duplicate"). */
  label?: string;
  sent?: MessageRecord;
  received?: MessageRecord;
  /** Transport failure instead of a response (timeout, refused connection). */
  error?: string;
}

export interface CheckResult {
  /** Stable machine name, e.g. `vector.negative.009-content-digest-mismatch`. */
  id: string;
  /** Section of the report, e.g. `signing`, `gates`, `dedup`. */
  group: string;
  title: string;
  status: CheckStatus;
  /** What a passing peer does. */
  expected: string;
  /** What was observed, or why the check could not run. */
  detail?: string;
  /** Machine-readable failure code (e.g. `insufficient_retries`), when the check names one. */
  code?: string;
  exchanges: Exchange[];
}

export interface ReportSummary {
  total: number;
  passed: number;
  failed: number;
  notApplicable: number;
}

export interface ConformanceReport {
  /** `receiver` (the kit acted as a sender) or `sender` (the kit acted as a receiver). */
  graded: 'receiver' | 'sender';
  target: string;
  brand: string;
  protocolVersion: string;
  startedAt: string;
  finishedAt: string;
  checks: CheckResult[];
  summary: ReportSummary;
  /**
   * Set when the kit could not drive the graded party at all (the agent refused every
   * step, the receiver could not be reached): the full error, never cut. Such a run fails.
   */
  undriven?: string;
}

export const BODY_EXCERPT_BYTES = 512;

export function excerpt(body: Uint8Array | string | undefined): string | undefined {
  if (body === undefined) return undefined;
  const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body);
  if (bytes.length <= BODY_EXCERPT_BYTES) return bytes.toString('utf8');
  return `${bytes.subarray(0, BODY_EXCERPT_BYTES).toString('utf8')}… (${bytes.length} bytes)`;
}

export function summarize(checks: readonly CheckResult[]): ReportSummary {
  const count = (s: CheckStatus) => checks.filter((c) => c.status === s).length;
  return {
    total: checks.length,
    passed: count('passed'),
    failed: count('failed'),
    notApplicable: count('not_applicable'),
  };
}

export function buildReport(
  fields: Omit<ConformanceReport, 'summary' | 'finishedAt' | 'undriven'> & {
    finishedAt?: string;
    undriven?: string | null;
  },
): ConformanceReport {
  const { undriven, ...rest } = fields;
  return {
    ...rest,
    finishedAt: fields.finishedAt ?? new Date().toISOString(),
    summary: summarize(fields.checks),
    ...(undriven ? { undriven } : {}),
  };
}

/**
 * 0 only when every applicable check passed, at least one ran and the graded party could
 * be driven: a run where nothing could be graded proves nothing, so it does not count as a
 * pass either (a CI gate must not pass a sender that sent nothing).
 */
export function exitCodeOf(report: ConformanceReport): 0 | 1 {
  if (report.undriven !== undefined) return 1;
  return report.summary.failed === 0 && report.summary.passed > 0 ? 0 : 1;
}

/** Builder for a check's result, so each check reads as "expect this, saw that". */
export class CheckRecorder {
  readonly exchanges: Exchange[] = [];
  constructor(
    readonly id: string,
    readonly group: string,
    readonly title: string,
    readonly expected: string,
  ) {}

  add(exchange: Exchange): this {
    this.exchanges.push(exchange);
    return this;
  }

  private result(status: CheckStatus, detail?: string, code?: string): CheckResult {
    const r: CheckResult = {
      id: this.id,
      group: this.group,
      title: this.title,
      status,
      expected: this.expected,
      exchanges: this.exchanges,
    };
    if (detail !== undefined) r.detail = detail;
    if (code !== undefined) r.code = code;
    return r;
  }

  pass(detail?: string): CheckResult {
    return this.result('passed', detail);
  }

  fail(detail: string, code?: string): CheckResult {
    return this.result('failed', detail, code);
  }

  notApplicable(reason: string): CheckResult {
    return this.result('not_applicable', reason);
  }
}
