/**
 * Published cursor pagination (`core/pagination-request.json` / `-response.json`):
 * `{max_results?, cursor?}` in, `{has_more, cursor? (only when has_more), total_count}`
 * out. The cursor is opaque to buyers: base64url of `{o: offset}`; one that does not
 * decode is a VALIDATION_ERROR naming `pagination.cursor`.
 */
import { z } from 'zod';
import { taskError } from '../runtime/errors.js';

export const PaginationRequestSchema = z.looseObject({
  max_results: z.number().int().min(1).max(100).optional(),
  cursor: z.string().min(1).max(512).optional(),
});
export type PaginationRequest = z.output<typeof PaginationRequestSchema>;

export function encodeCursor(offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset })).toString('base64url');
}

export function decodeCursor(cursor: string, field = 'pagination.cursor'): number {
  let offset: unknown;
  try {
    offset = (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { o?: unknown }).o;
  } catch {
    offset = undefined;
  }
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) {
    throw taskError('VALIDATION_ERROR', 'pagination.cursor is not a cursor this agent issued', {
      field,
      suggestion: 'pass the cursor from the previous page unchanged, or omit it to start over',
    });
  }
  return offset;
}

/** One page of `items` and its published pagination block. */
export function paginate<T>(
  items: T[],
  request: PaginationRequest | undefined,
  defaultSize: number,
): { page: T[]; pagination: { has_more: boolean; cursor?: string; total_count: number } } {
  const offset = request?.cursor ? decodeCursor(request.cursor) : 0;
  const size = request?.max_results ?? defaultSize;
  const page = items.slice(offset, offset + size);
  const next = offset + page.length;
  const has_more = next < items.length;
  return {
    page,
    pagination: {
      has_more,
      ...(has_more ? { cursor: encodeCursor(next) } : {}),
      total_count: items.length,
    },
  };
}
