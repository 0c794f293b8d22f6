/**
 * A stand-in OTLP/HTTP collector on loopback for the tracing tests: keeps every request posted
 * to /v1/traces and answers 200. A body in either OTLP/HTTP encoding is kept as OTLP JSON
 * text, so a test reads both alike: JSON as sent (`http/json`), protobuf (`http/protobuf`,
 * the exporters' default) decoded here into the same shape (ids as hex, as OTLP JSON has
 * them). `contentTypes` says which encoding each request came in.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

interface T {
  teardown(fn: () => unknown): void;
}

export interface OtlpCollector {
  url: string;
  /** Each export's body as OTLP JSON text. */
  bodies: string[];
  /** Each export's content-type, in the same order. */
  contentTypes: string[];
}

export async function otlpCollector(t: T): Promise<OtlpCollector> {
  const bodies: string[] = [];
  const contentTypes: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const type = String(req.headers['content-type'] ?? '');
        const body = Buffer.concat(chunks);
        contentTypes.push(type);
        bodies.push(
          type.startsWith('application/x-protobuf')
            ? JSON.stringify(decodeTraceRequest(body))
            : body.toString('utf8'),
        );
      }
      // An empty ExportTraceServiceResponse in the request's encoding, as a collector answers.
      if (String(req.headers['content-type']).startsWith('application/x-protobuf')) {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    contentTypes,
  };
}

// -- a protobuf reader for the OTLP trace request (opentelemetry/proto, trace/v1) ----------

type Field = { no: number; wire: number; value: bigint | Buffer };

/** The fields of one message, in order; throws on a truncated or malformed buffer. */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (i >= buf.length) throw new Error('protobuf: truncated varint');
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  };
  while (i < buf.length) {
    const tag = Number(varint());
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) out.push({ no, wire, value: varint() });
    else if (wire === 1) out.push({ no, wire, value: buf.subarray(i, (i += 8)) });
    else if (wire === 5) out.push({ no, wire, value: buf.subarray(i, (i += 4)) });
    else if (wire === 2) {
      const len = Number(varint());
      out.push({ no, wire, value: buf.subarray(i, (i += len)) });
    } else throw new Error(`protobuf: wire type ${wire} not in OTLP traces`);
    if (i > buf.length) throw new Error('protobuf: truncated field');
  }
  return out;
}

const all = (fs: Field[], no: number) => fs.filter((f) => f.no === no).map((f) => f.value);
const one = (fs: Field[], no: number) => all(fs, no)[0];
const text = (v: unknown) => (Buffer.isBuffer(v) ? v.toString('utf8') : undefined);
const hex = (v: unknown) => (Buffer.isBuffer(v) && v.length ? v.toString('hex') : undefined);

function anyValue(buf: Buffer): Record<string, unknown> {
  const f = fields(buf)[0];
  if (!f) return {};
  if (f.no === 1) return { stringValue: text(f.value) };
  if (f.no === 2) return { boolValue: f.value === 1n };
  if (f.no === 3) return { intValue: String(BigInt.asIntN(64, f.value as bigint)) };
  if (f.no === 4) return { doubleValue: (f.value as Buffer).readDoubleLE(0) };
  if (f.no === 5)
    return {
      arrayValue: { values: all(fields(f.value as Buffer), 1).map((v) => anyValue(v as Buffer)) },
    };
  if (f.no === 6) return { kvlistValue: { values: attributes(fields(f.value as Buffer), 1) } };
  return { bytesValue: (f.value as Buffer).toString('base64') };
}

function attributes(fs: Field[], no: number): Array<{ key?: string; value: unknown }> {
  return all(fs, no).map((kv) => {
    const k = fields(kv as Buffer);
    const v = one(k, 2);
    return { key: text(one(k, 1)), value: Buffer.isBuffer(v) ? anyValue(v) : {} };
  });
}

function span(buf: Buffer): Record<string, unknown> {
  const s = fields(buf);
  const status = one(s, 15);
  return {
    traceId: hex(one(s, 1)),
    spanId: hex(one(s, 2)),
    parentSpanId: hex(one(s, 4)),
    name: text(one(s, 5)),
    kind: Number(one(s, 6) ?? 0),
    attributes: attributes(s, 9),
    status: Buffer.isBuffer(status) ? { code: Number(one(fields(status), 3) ?? 0) } : {},
  };
}

/** ExportTraceServiceRequest, in the shape OTLP JSON gives it. */
export function decodeTraceRequest(body: Buffer): Record<string, unknown> {
  return {
    resourceSpans: all(fields(body), 1).map((rs) => {
      const r = fields(rs as Buffer);
      const resource = one(r, 1);
      return {
        resource: { attributes: Buffer.isBuffer(resource) ? attributes(fields(resource), 1) : [] },
        scopeSpans: all(r, 2).map((ss) => {
          const s = fields(ss as Buffer);
          const scope = one(s, 1);
          const sc = Buffer.isBuffer(scope) ? fields(scope) : [];
          return {
            scope: { name: text(one(sc, 1)), version: text(one(sc, 2)) },
            spans: all(s, 2).map((sp) => span(sp as Buffer)),
          };
        }),
      };
    }),
  };
}
