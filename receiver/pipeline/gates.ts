/**
 * The HTTP gates that run before any crypto (supplement §1 pre-checks): method, media type,
 * and the body cap enforced while the body streams in, so an oversized body is refused
 * without ever being held whole or digested.
 */
import type { Readable } from 'node:stream';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export type Headers = Record<string, string | string[] | undefined>;

/** The single value of a header, or null when absent; arrays of one are unwrapped. */
export function headerValue(headers: Headers, name: string): string | null {
  const v = headers[name];
  if (v === undefined) return null;
  if (Array.isArray(v)) return v.length === 1 ? (v[0] as string) : v.join(', ');
  return v;
}

/**
 * `application/json`, optionally with parameters (`; charset=utf-8`). A header sent twice
 * or listing two media types is refused: the signed value must be unambiguous.
 */
export function isJsonContentType(value: string | string[] | undefined): boolean {
  if (value === undefined) return false;
  if (Array.isArray(value)) {
    if (value.length !== 1) return false;
    value = value[0] as string;
  }
  if (value.includes(',')) return false;
  const [type, ...params] = value.split(';');
  if (type?.trim().toLowerCase() !== 'application/json') return false;
  for (const p of params) {
    const eq = p.indexOf('=');
    if (eq <= 0 || p.slice(0, eq).trim() === '') return false;
    if (p.slice(0, eq).trim().toLowerCase() === 'charset') {
      const cs = p
        .slice(eq + 1)
        .trim()
        .replace(/^"|"$/g, '')
        .toLowerCase();
      if (cs !== 'utf-8' && cs !== 'utf8') return false;
    }
  }
  return true;
}

export class BodyTooLargeError extends Error {
  constructor(limit: number) {
    super(`body larger than ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

export class BodyReadError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BodyReadError';
  }
}

/**
 * Reads a body up to `limit` bytes. A declared Content-Length over the limit fails at
 * once; a stream that crosses it fails at the chunk that crosses, and reading stops there.
 * `idleMs` bounds the wait for each chunk so a stalled sender cannot hold the request.
 */
export async function readBodyCapped(
  body: Buffer | Readable,
  limit: number,
  declaredLength: string | null,
  idleMs = 10_000,
): Promise<Buffer> {
  if (declaredLength !== null) {
    const n = /^\d{1,15}$/.test(declaredLength.trim()) ? Number(declaredLength) : NaN;
    if (!Number.isNaN(n) && n > limit) throw new BodyTooLargeError(limit);
  }
  if (Buffer.isBuffer(body)) {
    if (body.length > limit) throw new BodyTooLargeError(limit);
    return body;
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let timer: NodeJS.Timeout | null = null;
    const arm = () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => finish(new BodyReadError('body stalled')), idleMs);
    };
    const finish = (err: Error | null) => {
      if (timer) clearTimeout(timer);
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
      if (err) {
        body.pause();
        reject(err);
      } else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer | string) => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += buf.length;
      if (size > limit) {
        finish(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(buf);
      arm();
    };
    const onEnd = () => finish(null);
    const onError = (err: Error) => finish(new BodyReadError(err.message, { cause: err }));
    const onClose = () => finish(new BodyReadError('connection closed before the body ended'));
    body.on('data', onData);
    body.once('end', onEnd);
    body.once('error', onError);
    body.once('close', onClose);
    arm();
    if (body.readableEnded) finish(null);
  });
}
