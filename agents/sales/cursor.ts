/**
 * Cursor pagination in the published form (core/pagination-request.json and
 * pagination-response.json): `{max_results, cursor}` in, `{has_more, cursor?,
 * total_count}` out. The cursor is opaque to the buyer; here it carries the offset of the
 * next page, so a list that changes between pages may repeat or skip an item (as with
 * the offset paging it replaces).
 */
import { z } from 'zod';
import { taskError } from '../runtime/errors.js';

export const PaginationRequestSchema = z.looseObject({
  max_results: z.number().int().min(1).max(100).optional(),
  cursor: z.string().min(1).max(200).optional(),
});

export function encodeCursor(offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset })).toString('base64url');
}

/** The offset a cursor stands for; VALIDATION_ERROR naming `field` when it is not ours. */
export function decodeCursor(cursor: string | undefined, field = 'pagination.cursor'): number {
  if (cursor === undefined) return 0;
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { o?: unknown };
    if (typeof v.o === 'number' && Number.isInteger(v.o) && v.o >= 0) return v.o;
  } catch {
    // falls through to the refusal
  }
  throw taskError('VALIDATION_ERROR', `${field} is not a cursor this agent returned`, { field });
}

/**
 * The response's `pagination` for a page of `returned` items starting at `offset`.
 * `withTotal: false` leaves the optional `total_count` out (where the list can grow under
 * the buyer between pages, e.g. accounts others provision).
 */
export function pageInfo(offset: number, returned: number, total: number, withTotal = true) {
  const hasMore = offset + returned < total;
  return {
    has_more: hasMore,
    ...(hasMore ? { cursor: encodeCursor(offset + returned) } : {}),
    ...(withTotal ? { total_count: total } : {}),
  };
}
