/**
 * The kit's HTTP client: one request, a bounded wait, and a record of both sides for the
 * report. A transport failure is returned, not thrown, so a check can say what happened.
 */
import { request } from 'undici';
import { excerpt, type Exchange, type MessageRecord } from '../report/report.js';

export interface OutgoingRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: Uint8Array | string;
}

export interface Answer {
  exchange: Exchange;
  /** Undefined when no response came back (see exchange.error). */
  status?: number;
  headers: Record<string, string>;
  text: string;
}

/** Response bodies are read up to this many bytes (the report keeps an excerpt). */
const MAX_RESPONSE_BYTES = 64 * 1024;

function flatHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export function sentRecord(req: OutgoingRequest): MessageRecord {
  const body = req.body === undefined ? undefined : Buffer.from(req.body);
  const rec: MessageRecord = { method: req.method, url: req.url, headers: { ...req.headers } };
  if (body) {
    rec.body = excerpt(body);
    rec.bodyBytes = body.length;
  }
  return rec;
}

export async function send(
  req: OutgoingRequest,
  timeoutMs: number,
  label?: string,
): Promise<Answer> {
  const exchange: Exchange = { sent: sentRecord(req) };
  if (label) exchange.label = label;
  try {
    const res = await request(req.url, {
      method: req.method as 'POST',
      headers: req.headers,
      body: req.body === undefined ? undefined : Buffer.from(req.body),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      const c = chunk as Buffer;
      if (size < MAX_RESPONSE_BYTES) chunks.push(c);
      size += c.length;
    }
    const text = Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8');
    const headers = flatHeaders(res.headers);
    exchange.received = { status: res.statusCode, headers, body: excerpt(text), bodyBytes: size };
    return { exchange, status: res.statusCode, headers, text };
  } catch (err) {
    exchange.error = `${(err as Error).name}: ${(err as Error).message}`;
    return { exchange, headers: {}, text: '' };
  }
}
