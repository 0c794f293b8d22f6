/** Reads a small request body (form or JSON) with a size cap; anything else is refused. */
import type Koa from 'koa';
import { ConsoleInputError } from './errors.js';

const MAX_BYTES = 16 * 1024;

export async function readBody(ctx: Koa.Context): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BYTES) throw new ConsoleInputError('body', `at most ${MAX_BYTES} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  const type = (ctx.get('content-type') || '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    return Object.fromEntries(new URLSearchParams(text));
  }
  if (type === 'application/json') {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw new ConsoleInputError('body', 'not valid JSON');
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) {
      throw new ConsoleInputError('body', 'a JSON object');
    }
    return v as Record<string, unknown>;
  }
  throw new ConsoleInputError('content-type', 'application/json or a form');
}
