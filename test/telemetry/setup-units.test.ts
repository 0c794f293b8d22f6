/**
 * The set-up parts in process (the child-process test, worker-export, is left out of
 * coverage): `--metrics-listen` parsing and its server, and `startTracing`'s choice of
 * endpoint, with a real export to a loopback collector.
 */
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidArgumentError } from 'commander';
import { parseMetricsListen, serveMetrics } from '../../sender/cli/metrics-server.js';
import { SenderMetrics } from '../../sender/metrics.js';
import { inSpan } from '../../shared/telemetry/trace-context.js';
import {
  BATCH_DEFAULTS,
  batchDefaults,
  shutdownTracing,
  startTracing,
  tracesUrl,
  tracingEndpoint,
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

t.test('startTracing exports to the endpoint over loopback; shutdown flushes', async (t) => {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let b = '';
    req.on('data', (c: Buffer) => (b += c));
    req.on('end', () => {
      if (req.url === '/v1/traces') bodies.push(b);
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const tracing = startTracing('unit-test', { OTEL_EXPORTER_OTLP_ENDPOINT: url });
  t.ok(tracing, 'started');
  t.equal(startTracing('again', { OTEL_EXPORTER_OTLP_ENDPOINT: url }), tracing, 'once');
  await inSpan('webhook.unit', {}, async () => {});
  await shutdownTracing();
  await shutdownTracing();
  t.match(bodies.join(''), /"webhook\.unit"/, 'the span reached the collector');
  t.match(bodies.join(''), /"unit-test"/, 'under the service name');
});
