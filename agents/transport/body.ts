/** Reads a JSON request body with a size cap (no body parser in the stack). */
import type { IncomingMessage } from 'node:http';

export const MAX_REQUEST_BYTES = 1024 * 1024;

export type JsonBodyResult =
  { ok: true; value: unknown } | { ok: false; status: 400 | 413 | 415; message: string };

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
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    return { ok: false, status: 400, message: 'request body is not valid JSON' };
  }
}
