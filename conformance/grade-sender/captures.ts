/**
 * What the grading receiver captured, as the judges read it (supplement §5.5): the steps
 * run and their deliveries, a delivery's header, body member and nonce, its exchange for
 * the report, and whether two bodies are one event.
 */
import { excerpt, type Exchange } from '../report/report.js';
import { canonicalJson } from '../../shared/json/canonical.js';
import type { StepRequest } from './driver.js';
import type { Capture, StepScript } from './grading-server.js';

export interface StepPlan {
  id: string;
  initial: 'async' | 'terminal';
  script: StepScript;
  instructions: string;
}

export interface StepRun {
  plan: StepPlan;
  request: StepRequest;
  /** Why the step could not run; null when it ran. */
  notApplicable: string | null;
  captures: Capture[];
}

export function header(c: Capture, name: string): string {
  const v = c.headers[name];
  return Array.isArray(v) ? v.join(', ') : (v ?? '');
}

export function exchangeOf(c: Capture): Exchange {
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

export function field(c: Capture, name: string): unknown {
  return typeof c.json === 'object' && c.json !== null
    ? (c.json as Record<string, unknown>)[name]
    : undefined;
}

export function withoutKey(json: unknown): string | null {
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

export function nonceOf(c: Capture): string | null {
  return /;nonce="([^"]*)"/.exec(header(c, 'signature-input'))?.[1] ?? null;
}
