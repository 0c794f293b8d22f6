/**
 * The receiver's part of a delivery's trace: the request's W3C `traceparent` is continued
 * (a missing or malformed one starts a new trace, never an error), each stage group of
 * `run()` records its duration on that span (`webhook.gate_ms`, `webhook.verify_ms`,
 * `webhook.claim_ms`, `webhook.publish_ms`), and the trace context goes on to the app with the event (`ReceivedEvent.trace`: forward headers, broker message headers).
 */
import { SpanKind, SpanStatusCode, type Context, type Span } from '@opentelemetry/api';
import {
  contextOf,
  timedOnSpan,
  inSpan,
  isTraceparent,
  traceCarrier,
  type TraceCarrier,
} from '../../shared/telemetry/trace-context.js';
import { headerValue, type Headers } from './gates.js';
import type { ReceiverResponse } from './responses.js';
import { Halt } from './stages.js';

/** The whole delivery in one server span, a child of the sender's attempt span if it sent one. */
export function receiveSpan(
  headers: Headers,
  method: string,
  fn: (ctx: Context) => Promise<ReceiverResponse>,
): Promise<ReceiverResponse> {
  return inSpan(
    'webhook.receive',
    {
      kind: SpanKind.SERVER,
      parent: contextOf(headers),
      attributes: { 'http.request.method': method },
    },
    async (span: Span, ctx: Context) => {
      const res = await fn(ctx);
      span.setAttribute('http.response.status_code', res.status);
      if (res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      return res;
    },
  );
}

/**
 * One stage group, timed on the delivery's `webhook.receive` span: `<name>_ms`, and for a
 * `Halt` that ends the delivery `webhook.halt_stage` and `webhook.halt_status`. Attributes,
 * not child spans or events: one span per delivery is what tracing costs here (about 4 %
 * of the pipeline's CPU, `npm run bench -- tracing`); a child span per stage put it at +28 %.
 */
export function timedStage<T>(
  name: string,
  parent: Context,
  fn: (ctx: Context) => Promise<T | Halt>,
): Promise<T | Halt> {
  return timedOnSpan(
    name,
    parent,
    () => fn(parent),
    (out) =>
      out instanceof Halt
        ? { 'webhook.halt_stage': name, 'webhook.halt_status': out.res.status }
        : {},
  );
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
