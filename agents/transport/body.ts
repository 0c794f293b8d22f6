/**
 * Reads a JSON request body with a size cap (no body parser in the stack). A string (or
 * member name) holding U+0000 is refused here as VALIDATION_ERROR naming where (issue 21
 * item 6): PostgreSQL text cannot hold it, and its error text must never reach a caller.
 */
import type { IncomingMessage } from 'node:http';

export const MAX_REQUEST_BYTES = 1024 * 1024;

export type JsonBodyResult =
  | { ok: true; value: unknown }
  | {
      ok: false;
      status: 400 | 413 | 415;
      message: string;
      /** Set when the JSON parsed but holds what no task accepts (U+0000). */
      code?: 'VALIDATION_ERROR';
      field?: string;
    };

/** Where the first string or member name holding U+0000 is (`params.message.parts[0]`), or null. */
export function nulPath(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path || '(body)' : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const at = nulPath(value[i], `${path}[${i}]`);
      if (at !== null) return at;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const name = k.split('\u0000').join('\\u0000');
      const here = path ? `${path}.${name}` : name;
      if (k.includes('\u0000')) return here;
      const at = nulPath(v, here);
      if (at !== null) return at;
    }
  }
  return null;
}

export async function readJsonBody(
  req: IncomingMessage,
  maxBytes = MAX_REQUEST_BYTES,
): Promise<JsonBodyResult> {
  const type = String(req.headers['content-type'] ?? 'application/json').toLowerCase();
  if (!type.includes('json')) {
    return { ok: false, status: 415, message: 'content-type must be application/json' };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      return { ok: false, status: 413, message: `request body over ${maxBytes} bytes` };
    }
    chunks.push(chunk as Buffer);
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return { ok: false, status: 400, message: 'request body is not valid JSON' };
  }
  const at = nulPath(value);
  if (at !== null) {
    return {
      ok: false,
      status: 400,
      code: 'VALIDATION_ERROR',
      field: at.slice(0, 200),
      message: `VALIDATION_ERROR: strings must not contain U+0000 (at ${at.slice(0, 200)})`,
    };
  }
  return { ok: true, value };
}
