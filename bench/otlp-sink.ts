/**
 * A stand-in OTLP/HTTP collector for the tracing-on runs of the benches: accepts every
 * export (200), counts requests and bytes, keeps nothing. The spans really are serialised
 * and sent over loopback, so "tracing on" costs what it costs in production, minus a real
 * collector's own CPU. `tracingModes` reads `--tracing=off|on|both` (or BENCH_TRACING).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpSink {
  url: string;
  requests(): number;
  bytes(): number;
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let requests = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    bytes: () => bytes,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The tracing runs asked for, in order: `off`, `on`, or both (off first). */
export function tracingModes(args: string[]): { modes: Array<'off' | 'on'>; rest: string[] } {
  let value = process.env.BENCH_TRACING ?? 'off';
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const m = /^--tracing(?:=(.*))?$/.exec(a);
    if (!m) rest.push(a);
    else value = m[1] ?? args[++i] ?? '';
  }
  if (value === 'both') return { modes: ['off', 'on'], rest };
  if (value === 'off' || value === 'on') return { modes: [value], rest };
  throw new Error(`--tracing must be off, on or both, not ${JSON.stringify(value)}`);
}

/** Environment that turns tracing on in a bench child (the standard variables only). */
export function tracingEnv(sink: OtlpSink): Record<string, string> {
  return { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_SERVICE_NAME: 'bench' };
}

/** `+x.x %` of `on` over `off` (positive: tracing costs that much more). */
export function overhead(off: number, on: number, higherIsBetter: boolean): string {
  if (!(off > 0) || !Number.isFinite(on)) return '-';
  const d = higherIsBetter ? (off - on) / off : (on - off) / off;
  return `${d >= 0 ? '+' : ''}${(d * 100).toFixed(1)} %`;
}
