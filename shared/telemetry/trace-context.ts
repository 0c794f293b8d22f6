/**
 * The spans of this package and the trace context they carry across processes: the tracer
 * (the API's global, so a provider registered by `startTracing` or by a library user is
 * used, and none at all costs only no-op calls), the W3C `traceparent` / `tracestate` pair
 * as a small carrier (BullMQ job data, attempt headers, a published event's headers), and
 * one helper that runs a function inside a span.
 */
import { createRequire } from 'node:module';
import {
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanKind,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

export const PACKAGE_NAME = 'svc-webhooks';

/** package.json's version: two levels up from shared/telemetry/, three from dist/. */
export const PACKAGE_VERSION = ((): string => {
  const require = createRequire(import.meta.url);
  for (const path of ['../../package.json', '../../../package.json']) {
    try {
      const m = require(path) as { name?: string; version?: string };
      if (m.name === PACKAGE_NAME && m.version) return m.version;
    } catch {
      // not at this level
    }
  }
  return 'unknown';
})();

/** The W3C trace context of one span, as headers (`tracestate` only when there is one). */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

let cachedFor: TracerProvider | null = null;
let cachedTracer: Tracer | null = null;

/**
 * This package's tracer from the API's global provider, looked up again only when that
 * provider changes (registered, or disabled and registered anew, as tests do): the lookup
 * builds a key string and reads a map per span otherwise.
 */
export function tracer(): Tracer {
  const provider = trace.getTracerProvider();
  if (provider !== cachedFor || !cachedTracer) {
    cachedFor = provider;
    cachedTracer = provider.getTracer(PACKAGE_NAME, PACKAGE_VERSION);
  }
  return cachedTracer;
}

/**
 * W3C Trace Context, always: the spec's attempts send a `traceparent`, the app gets one, and
 * the job data carries one, whatever propagators a process registered (OTEL_PROPAGATORS
 * applies to a library user's own instrumentation, not to these carriers). Called directly,
 * not through the API's composite propagator: one carrier per attempt and per delivery.
 */
const W3C = new W3CTraceContextPropagator();

/**
 * The active (or given) context as a carrier; undefined when there is nothing to carry (no
 * valid span: tracing off, or a context without one).
 */
export function traceCarrier(ctx: Context = context.active()): TraceCarrier | undefined {
  const out: Record<string, string> = {};
  W3C.inject(ctx, out, defaultTextMapSetter);
  if (!out.traceparent) return undefined;
  return out.tracestate
    ? { traceparent: out.traceparent, tracestate: out.tracestate }
    : { traceparent: out.traceparent };
}

/**
 * The context a carrier (or a request's headers) names, for a span to continue; a missing
 * or malformed `traceparent` gives the root context (a new trace), never an error.
 */
export function contextOf(
  carrier: Readonly<Record<string, string | string[] | undefined>> | undefined,
): Context {
  if (!carrier) return ROOT_CONTEXT;
  return W3C.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
}

/** `version-traceid-spanid-flags` as W3C Trace Context level 1 defines it (not all-zero ids). */
const TRACEPARENT = /^([0-9a-f]{2})-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Whether a header value is a well-formed `traceparent` (version ff is invalid). */
export function isTraceparent(value: unknown): value is string {
  return typeof value === 'string' && TRACEPARENT.test(value) && !value.startsWith('ff');
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; default the active context. */
  parent?: Context;
}

/**
 * Runs `fn` inside a new span and ends it: a throw is recorded on the span (status error)
 * and rethrown. `fn` gets the span's context to hand to its children explicitly: this
 * package never relies on a context manager to find a parent (on Node 20 the
 * AsyncLocalStorage one turns on promise hooks for every promise in the process, a cost
 * `startTracing` avoids). The span is also made active for a context manager a library
 * user registered, so their own instrumentation nests under it. With tracing off the span
 * is the API's non-recording one and the call costs a few function calls.
 */
export function inSpan<T>(
  name: string,
  options: SpanOptions,
  fn: (span: Span, ctx: Context) => Promise<T>,
): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(
    name,
    { kind: options.kind, attributes: options.attributes },
    parent,
  );
  const ctx = trace.setSpan(parent, span);
  return context.with(ctx, async () => {
    try {
      return await fn(span, ctx);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `fn` and records its duration on the span of `parent` as the attribute
 * `<name>_ms` (plus `more(out)`), when that span is recording; else just runs it. For the
 * steps inside one span that need no span of their own. Attributes, not span events: an
 * event costs its own object, timestamp and about twice the OTLP bytes of its span's other
 * members, and these steps are per delivery on both ends (sender/README.md "Traces and
 * metrics" has what tracing costs).
 */
export async function timedOnSpan<T>(
  name: string,
  parent: Context,
  fn: () => Promise<T>,
  more?: (out: T) => Attributes,
): Promise<T> {
  const span = trace.getSpan(parent);
  if (!span?.isRecording()) return fn();
  const started = performance.now();
  const out = await fn();
  span.setAttribute(`${name}_ms`, performance.now() - started);
  if (more) span.setAttributes(more(out));
  return out;
}
