/**
 * Tracing set-up of a command (`svc start`, `svc worker`, `svc receiver`): OpenTelemetry
 * with OTLP/HTTP export when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
 * is set, and nothing at all when neither is: the code's spans then go to the API's no-op
 * tracer (no provider, no context manager, no propagator), which costs a few calls each.
 * The encoding is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
 * `http/protobuf` by default, as the OTLP exporter specification says, or `http/json`
 * (`tracingProtocol`); `grpc` is refused naming the variable (no gRPC client in the package).
 *
 * Everything else comes from the standard OTEL_* variables, read by the SDK itself:
 * OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES (the resource), OTEL_EXPORTER_OTLP_HEADERS,
 * OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_* (the batch processor,
 * whose delay and batch size default shorter here: `batchDefaults`), OTEL_PROPAGATORS (for other instrumentation: this package's own carriers are always W3C,
 * trace-context.ts). OTEL_SDK_DISABLED=true turns it off even with an endpoint set.
 *
 * A library user who embeds the sender or the receiver does not call this: they register
 * their own provider on the API's global (`trace.setGlobalTracerProvider`, or the SDK's
 * `provider.register()`), and the spans of this package join it.
 */
import { SvcError } from '../errors/base.js';
import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { PACKAGE_NAME, PACKAGE_VERSION } from './trace-context.js';

export class TracingConfigError extends SvcError {
  static override readonly code = 'ERR_TRACING_CONFIG';
}

const ENDPOINT_VARIABLES = [
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
] as const;

/** The variable that turns export on and its value, or null: tracing stays off. */
export function tracingEndpoint(
  env: NodeJS.ProcessEnv = process.env,
): { variable: string; url: string } | null {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return null;
  for (const variable of ENDPOINT_VARIABLES) {
    const value = env[variable]?.trim();
    if (!value) continue;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new TracingConfigError(`${variable} must be an http(s) URL, got "${value}"`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TracingConfigError(`${variable} must be an http(s) URL, got "${value}"`);
    }
    return { variable, url: value };
  }
  return null;
}

/** The traces URL of an endpoint variable's value (OTLP exporter specification). */
export function tracesUrl(endpoint: { variable: string; url: string }): string {
  return endpoint.variable === 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
    ? endpoint.url
    : `${endpoint.url.replace(/\/+$/, '')}/v1/traces`;
}

export type TracingProtocol = 'http/protobuf' | 'http/json';

const PROTOCOL_VARIABLES = [
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
] as const;

/**
 * The OTLP encoding: the traces variable wins over the generic one, and neither set means
 * `http/protobuf`, the specification's default (its bodies are about 2.3 times smaller than
 * JSON's for our spans, at the same CPU to encode). `grpc` and anything else stop the
 * command naming the variable and what it takes, instead of exporting in another protocol
 * than the collector's port expects and losing every span.
 */
export function tracingProtocol(env: NodeJS.ProcessEnv = process.env): TracingProtocol {
  for (const variable of PROTOCOL_VARIABLES) {
    const value = env[variable]?.trim();
    if (!value) continue;
    if (value === 'http/protobuf' || value === 'http/json') return value;
    throw new TracingConfigError(
      value === 'grpc'
        ? `${variable}=grpc is not supported: this package exports over OTLP/HTTP; use http/protobuf (the default) or http/json and the collector's OTLP/HTTP endpoint (port 4318 by default)`
        : `${variable} must be http/protobuf or http/json, got "${value}"`,
    );
  }
  return 'http/protobuf';
}

/**
 * The batch processor's export delay and batch size when OTEL_BSP_SCHEDULE_DELAY and
 * OTEL_BSP_MAX_EXPORT_BATCH_SIZE are not set: 100 ms and 128 spans, not the specification's
 * 5,000 ms and 512. Why: a span held for seconds in the queue outlives V8's young
 * generation and is promoted, and marking the old generation's spans is then the largest
 * part of what tracing costs. Measured on the seller's worker (`npm run bench -- sender
 * 10000 0 0 --tracing=on`, CPU profile): garbage collection 1,089 ms with tracing off,
 * 2,347 ms on with 5 s / 512, 1,100 ms on with 100 ms / 128. A shorter delay costs an
 * export request per 128 spans at most (about 8 a second at 1,000 deliveries/s).
 */
export const BATCH_DEFAULTS = {
  OTEL_BSP_SCHEDULE_DELAY: 100,
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 128,
} as const;

/**
 * Our defaults (`BATCH_DEFAULTS`) for the batch variables not set in `env`; a set one must
 * be a whole number of at least 1 (TracingConfigError naming it, not the SDK's warning and
 * silent fallback), and is then used as given.
 */
export function batchDefaults(env: NodeJS.ProcessEnv = process.env): {
  scheduledDelayMillis?: number;
  maxExportBatchSize?: number;
} {
  for (const variable of [
    'OTEL_BSP_SCHEDULE_DELAY',
    'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
    'OTEL_BSP_MAX_QUEUE_SIZE',
    'OTEL_BSP_EXPORT_TIMEOUT',
  ]) {
    const value = env[variable]?.trim();
    if (value && !/^[1-9][0-9]*$/.test(value)) {
      throw new TracingConfigError(
        `${variable} must be a whole number of at least 1, got "${value}"`,
      );
    }
  }
  const set = (v: string) => Boolean(env[v]?.trim());
  const num = (v: keyof typeof BATCH_DEFAULTS) => (set(v) ? Number(env[v]) : BATCH_DEFAULTS[v]);
  // A flush (at shutdown) sends the whole queue at once, a batch per request, and the OTLP
  // exporter refuses more than 30 concurrent requests ("Concurrent export limit reached",
  // the spans lost): our smaller default batch grows with a larger OTEL_BSP_MAX_QUEUE_SIZE
  // to keep a full queue's flush under that.
  const queue = set('OTEL_BSP_MAX_QUEUE_SIZE') ? Number(env.OTEL_BSP_MAX_QUEUE_SIZE) : 2048;
  const batch = set('OTEL_BSP_MAX_EXPORT_BATCH_SIZE')
    ? num('OTEL_BSP_MAX_EXPORT_BATCH_SIZE')
    : Math.max(BATCH_DEFAULTS.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, Math.ceil(queue / 24));
  return {
    scheduledDelayMillis: num('OTEL_BSP_SCHEDULE_DELAY'),
    maxExportBatchSize: batch,
  };
}

export interface Tracing {
  /** Where spans go (the endpoint variable's value). */
  endpoint: string;
  /** How they are encoded. */
  protocol: TracingProtocol;
  /** Sends what is buffered (the batch processor exports every OTEL_BSP_SCHEDULE_DELAY). */
  flush(): Promise<void>;
  /** Flushes, stops the provider and puts the API back to its no-op state. */
  shutdown(): Promise<void>;
}

let started: Tracing | null = null;

/**
 * Starts OTLP export for this process when an endpoint variable is set (once; a second call
 * returns the first's handle); null when tracing stays off. Throws TracingConfigError on
 * an endpoint that is not an http(s) URL, so a typo stops the command instead of losing
 * every span in silence.
 */
export function startTracing(
  serviceName: string,
  env: NodeJS.ProcessEnv = process.env,
): Tracing | null {
  if (started) return started;
  const endpoint = tracingEndpoint(env);
  if (!endpoint) return null;
  const batch = batchDefaults(env);
  const Exporter = tracingProtocol(env) === 'http/json' ? OtlpJsonExporter : OtlpProtobufExporter;
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        [ATTR_SERVICE_NAME]: serviceName,
        [ATTR_SERVICE_VERSION]: PACKAGE_VERSION,
        'telemetry.instrumentation': PACKAGE_NAME,
      }),
    )
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the command's own name.
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    // The URL as the specification derives it from the variable found in `env` (the
    // generic endpoint gets /v1/traces appended); headers, timeout and compression the
    // exporter reads from OTEL_EXPORTER_OTLP_* itself.
    spanProcessors: [new BatchSpanProcessor(new Exporter({ url: tracesUrl(endpoint) }), batch)],
  });
  // The W3C trace-context + baggage propagators (or OTEL_PROPAGATORS' choice), and no
  // context manager: this package hands span contexts on explicitly (trace-context.ts
  // inSpan), and Node 20's AsyncLocalStorage would put promise hooks on every promise of
  // the process, the largest part of what tracing would otherwise cost.
  provider.register({ contextManager: null });
  const handle: Tracing = {
    endpoint: endpoint.url,
    protocol: tracingProtocol(env),
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      if (started !== handle) return;
      started = null;
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
  started = handle;
  return handle;
}

/** Flushes and stops the tracing `startTracing` started, if any; never throws. */
export async function shutdownTracing(): Promise<void> {
  await started?.shutdown().catch(() => {});
}
