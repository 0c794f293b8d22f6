/**
 * The set-up parts in process (the child-process test, worker-export, is left out of
 * coverage): `--metrics-listen` parsing and its server, and `startTracing`'s choice of
 * endpoint and encoding, with a real export in each to a loopback collector.
 */
import t from 'tap';
import { InvalidArgumentError } from 'commander';
import { parseMetricsListen, serveMetrics } from '../../sender/cli/metrics-server.js';
import { SenderMetrics } from '../../sender/metrics.js';
import { inSpan } from '../../shared/telemetry/trace-context.js';
import { otlpCollector } from '../helpers/otlp-collector.js';
import {
  BATCH_DEFAULTS,
  batchDefaults,
  shutdownTracing,
  startTracing,
  tracesUrl,
  tracingEndpoint,
  tracingProtocol,
  TracingConfigError,
} from '../../shared/telemetry/tracing.js';

t.test(
  '--metrics-listen: host:port, [v6]:port, a bare port on loopback; else refused',
  async (t) => {
    t.same(parseMetricsListen('9464'), { host: '127.0.0.1', port: 9464 });
    t.same(parseMetricsListen('0.0.0.0:9464'), { host: '0.0.0.0', port: 9464 });
    t.same(parseMetricsListen('[::1]:9464'), { host: '::1', port: 9464 });
    for (const bad of ['', 'host', 'host:', ':9464', 'host:70000', '99999', 'a b:1', '[::1]']) {
      t.throws(() => parseMetricsListen(bad), InvalidArgumentError, JSON.stringify(bad));
    }
  },
);

t.test('the metrics server: GET /metrics only', async (t) => {
  const metrics = new SenderMetrics();
  metrics.deliveries.inc({ outcome: 'delivered' });
  const { server, url } = await serveMetrics(metrics.registry, { host: '127.0.0.1', port: 0 });
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const ok = await fetch(url);
  t.equal(ok.status, 200);
  t.match(await ok.text(), /webhook_deliveries_total\{outcome="delivered"\} 1/);
  t.equal((await fetch(url, { method: 'POST' })).status, 405);
  t.equal((await fetch(url.replace('/metrics', '/other'))).status, 404);
  const port = Number(new URL(url).port);
  await t.rejects(
    serveMetrics(metrics.registry, { host: '127.0.0.1', port }),
    { code: 'EADDRINUSE' },
    'a port taken is an error, not a silent no-op',
  );
});

t.test('the endpoint: which variable, malformed refused, disabled honoured', async (t) => {
  t.equal(tracingEndpoint({}), null, 'nothing set: no tracing');
  t.same(tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), {
    variable: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    url: 'http://c:4318',
  });
  t.equal(
    tracingEndpoint({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://t/x',
    })?.variable,
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    'the signal-specific one wins',
  );
  t.equal(
    tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }),
    null,
  );
  t.throws(() => tracingEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'c:4318x' }), TracingConfigError);
  t.throws(
    () => tracingEndpoint({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/' }),
    /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http\(s\) URL/,
  );
  t.equal(
    tracesUrl({ variable: 'OTEL_EXPORTER_OTLP_ENDPOINT', url: 'http://c:4318/' }),
    'http://c:4318/v1/traces',
  );
  t.equal(
    tracesUrl({ variable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', url: 'http://c/t' }),
    'http://c/t',
  );
  t.equal(startTracing('x', {}), null, 'startTracing without an endpoint does nothing');
});

t.test(
  'the batch processor: short defaults, OTEL_BSP_* as set, a malformed one refused',
  async (t) => {
    t.same(
      batchDefaults({}),
      {
        scheduledDelayMillis: BATCH_DEFAULTS.OTEL_BSP_SCHEDULE_DELAY,
        maxExportBatchSize: BATCH_DEFAULTS.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
      },
      'unset: our defaults, not the 5 s / 512 that keep spans long enough to be promoted',
    );
    t.ok(
      BATCH_DEFAULTS.OTEL_BSP_SCHEDULE_DELAY < 5000 &&
        BATCH_DEFAULTS.OTEL_BSP_MAX_EXPORT_BATCH_SIZE < 512,
    );
    t.same(
      batchDefaults({ OTEL_BSP_SCHEDULE_DELAY: ' 5000 ', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '512' }),
      { scheduledDelayMillis: 5000, maxExportBatchSize: 512 },
      'set: the operator wins',
    );
    t.equal(
      batchDefaults({ OTEL_BSP_MAX_QUEUE_SIZE: '12000' }).maxExportBatchSize,
      500,
      'a larger queue: the default batch grows so a full flush stays under 30 requests',
    );
    t.equal(batchDefaults({ OTEL_BSP_MAX_QUEUE_SIZE: '512' }).maxExportBatchSize, 128);
    for (const [variable, bad] of [
      ['OTEL_BSP_SCHEDULE_DELAY', 'soon'],
      ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE', '0'],
      ['OTEL_BSP_MAX_QUEUE_SIZE', '-5'],
      ['OTEL_BSP_EXPORT_TIMEOUT', '1.5'],
    ] as const) {
      t.throws(
        () => batchDefaults({ [variable]: bad }),
        new RegExp(
          `${variable} must be a whole number of at least 1, got "${bad.replace('.', '\\.')}"`,
        ),
        `${variable}=${bad}`,
      );
    }
    t.throws(
      () =>
        startTracing('x', {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
          OTEL_BSP_SCHEDULE_DELAY: 'x',
        }),
      TracingConfigError,
      'startTracing refuses it before starting anything',
    );
  },
);

t.test(
  'OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: http/protobuf by default, http/json; else refused',
  async (t) => {
    t.equal(tracingProtocol({}), 'http/protobuf', 'the specification default');
    t.equal(tracingProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), 'http/json');
    t.equal(
      tracingProtocol({
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      }),
      'http/protobuf',
      'the traces variable wins',
    );
    t.equal(
      tracingProtocol({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: ' ' }),
      'http/protobuf',
      'blank is unset',
    );
    t.throws(
      () => tracingProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      /OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: .*use http\/protobuf \(the default\) or http\/json/,
      'grpc: what to use instead',
    );
    for (const bad of ['http', 'json', 'HTTP/JSON', 'http/protobuf2']) {
      t.throws(
        () => tracingProtocol({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: bad }),
        new RegExp(
          `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http/protobuf or http/json, got "${bad}"`,
        ),
        bad,
      );
    }
    t.throws(
      () =>
        startTracing('x', {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        }),
      TracingConfigError,
      'startTracing refuses it before starting anything',
    );
  },
);

for (const protocol of ['http/protobuf', 'http/json'] as const) {
  t.test(
    `startTracing exports ${protocol} to the endpoint over loopback; shutdown flushes`,
    async (t) => {
      const otlp = await otlpCollector(t);
      const env = {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        ...(protocol === 'http/json' ? { OTEL_EXPORTER_OTLP_PROTOCOL: protocol } : {}),
      };
      const tracing = startTracing('unit-test', env);
      t.ok(tracing, 'started');
      t.equal(tracing?.protocol, protocol);
      t.equal(startTracing('again', env), tracing, 'once');
      let traceId = '';
      await inSpan(
        'webhook.unit',
        { attributes: { 'webhook.n': 7, 'webhook.ok': true } },
        async (span) => {
          traceId = span.spanContext().traceId;
        },
      );
      await shutdownTracing();
      await shutdownTracing();
      t.same(
        [...new Set(otlp.contentTypes)],
        [protocol === 'http/json' ? 'application/json' : 'application/x-protobuf'],
        'in that encoding',
      );
      const body = JSON.parse(otlp.bodies[0]!) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
          scopeSpans: Array<{ spans: Array<Record<string, unknown>> }>;
        }>;
      };
      const rs = body.resourceSpans[0]!;
      t.match(
        rs.resource.attributes.find((a) => a.key === 'service.name'),
        { value: { stringValue: 'unit-test' } },
        'under the service name',
      );
      t.match(
        rs.scopeSpans[0]!.spans[0],
        {
          name: 'webhook.unit',
          traceId,
          attributes: [
            { key: 'webhook.n', value: { intValue: /^7$/ } },
            { key: 'webhook.ok', value: { boolValue: true } },
          ],
        },
        'the span reached the collector, its trace id and attributes intact',
      );
    },
  );
}
