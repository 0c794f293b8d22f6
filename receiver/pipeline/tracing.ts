/**
 * The receiver's part of a delivery's trace: the request's W3C `traceparent` is continued
 * (a missing or malformed one starts a new trace, never an error), each stage group of
 * `run()` records its duration on that span (`webhook.gate_ms`, `webhook.verify_ms`,
 * `webhook.claim_ms`, `webhook.publish_ms`), and the trace context goes on to the app with the event (`ReceivedEvent.trace`: forward headers, broker message headers).
 */
import {
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import {
  contextOf,
  inSpan,
  isTraceparent,
  traceCarrier,
  type TraceCarrier,
} from '../../shared/telemetry/trace-context.js';
import { headerValue, type Headers } from './gates.js';
import type { ReceiverResponse } from './responses.js';
import { Halt } from './stages.js';

/**
 * The stage timings of one delivery, gathered while it runs and written on its span once,
 * at its end; null when the span is not recording (tracing off, or not sampled).
 */
export type StageTimes = Attributes | null;

/** The whole delivery in one server span, a child of the sender's attempt span if it sent one. */
export function receiveSpan(
  headers: Headers,
  method: string,
  fn: (ctx: Context, times: StageTimes) => Promise<ReceiverResponse>,
): Promise<ReceiverResponse> {
  return inSpan(
    'webhook.receive',
    {
      kind: SpanKind.SERVER,
      parent: contextOf(headers),
      attributes: { 'http.request.method': method },
    },
    async (span: Span, ctx: Context) => {
      const times: StageTimes = span.isRecording() ? {} : null;
      const res = await fn(ctx, times);
      if (times) {
        times['http.response.status_code'] = res.status;
        span.setAttributes(times);
      }
      if (res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      return res;
    },
  );
}

/** Each stage group's attribute, spelled once (no key built per delivery). */
const STAGE_ATTRIBUTES = {
  'webhook.gate': 'webhook.gate_ms',
  'webhook.verify': 'webhook.verify_ms',
  'webhook.claim': 'webhook.claim_ms',
  'webhook.publish': 'webhook.publish_ms',
} as const;

export type StageGroup = keyof typeof STAGE_ATTRIBUTES;

/**
 * One stage group, timed for the delivery's `webhook.receive` span: `<name>_ms`, and for a
 * `Halt` that ends the delivery `webhook.halt_stage` and `webhook.halt_status`. Attributes,
 * not child spans or events: one span per delivery is what tracing costs here; a child span
 * per stage put it at +28 % (`npm run bench -- tracing`). Gathered in `times` and set on the
 * span in one call at its end: a `setAttribute` per stage (each validated by the SDK) and the
 * key built per call were a quarter of what tracing cost the sidecar in a CPU profile.
 */
export async function timedStage<T>(
  name: StageGroup,
  ctx: Context,
  times: StageTimes,
  fn: (ctx: Context) => Promise<T | Halt>,
): Promise<T | Halt> {
  if (!times) return fn(ctx);
  const started = performance.now();
  const out = await fn(ctx);
  times[STAGE_ATTRIBUTES[name]] = performance.now() - started;
  if (out instanceof Halt) {
    times['webhook.halt_stage'] = name;
    times['webhook.halt_status'] = out.res.status;
  }
  return out;
}

/**
 * The trace context the app receives with the event: the active span's (the publish stage)
 * when tracing is on; with it off, the sender's own well-formed `traceparent` (and its
 * `tracestate`) unchanged, as W3C Trace Context lets a non-participating hop do; else none.
 */
export function traceForApp(headers: Headers, ctx: Context): TraceCarrier | undefined {
  const own = traceCarrier(ctx);
  if (own) return own;
  const incoming = headerValue(headers, 'traceparent');
  if (!isTraceparent(incoming)) return undefined;
  const state = headerValue(headers, 'tracestate');
  return state && /^[\x20-\x7e]{1,512}$/.test(state)
    ? { traceparent: incoming, tracestate: state }
    : { traceparent: incoming };
}
