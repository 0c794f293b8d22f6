/**
 * A stand-in OTLP/HTTP collector for the tracing-on runs of the benches: accepts every
 * export (200), counts requests and bytes, keeps nothing. The spans really are serialised
 * and sent over loopback, so "tracing on" costs what it costs in production, minus a real
 * collector's own CPU. `tracingModes` reads `--tracing=off|on|both` (or BENCH_TRACING),
 * `roundsOf` how many times to alternate them.
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
      // An empty ExportTraceServiceResponse in the request's encoding.
      if (String(req.headers['content-type']).startsWith('application/x-protobuf')) {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
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

/**
 * `--rounds N` out of the arguments (1 to 9; default 1): with `--tracing both`, how many
 * times off and on alternate (without --base, which takes its own --rounds).
 */
export function roundsOf(args: string[]): { rounds: number; rest: string[] } {
  const i = args.findIndex((a) => a === '--rounds' || a.startsWith('--rounds='));
  if (i < 0) return { rounds: 1, rest: args };
  const eq = args[i]!.includes('=');
  const value = eq ? args[i]!.slice('--rounds='.length) : args[i + 1];
  const rounds = Number(value);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 9) {
    throw new Error(`--rounds must be a whole number from 1 to 9, not ${JSON.stringify(value)}`);
  }
  return { rounds, rest: [...args.slice(0, i), ...args.slice(i + (eq ? 1 : 2))] };
}

/** The middle value (the mean of the two middle ones for an even count); NaN when empty. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
