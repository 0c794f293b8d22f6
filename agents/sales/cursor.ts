/**
 * Cursor pagination of the sales lists read page by page from PostgreSQL (`LIMIT/OFFSET`):
 * the published request schema and cursor codec are the agents' one
 * (`common/pagination.ts`); here, an absent cursor is the first page and `pageInfo` builds
 * the response's `pagination` from a page read at an offset.
 */
import { decodeCursor as decode, encodeCursor } from '../common/pagination.js';

export { PaginationRequestSchema } from '../common/pagination.js';

/** The offset a cursor stands for (0 without one); VALIDATION_ERROR naming `field` when not ours. */
export function decodeCursor(cursor: string | undefined, field = 'pagination.cursor'): number {
  return cursor === undefined ? 0 : decode(cursor, field);
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
