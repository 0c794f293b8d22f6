/** Idempotency keys: one per event from a CSPRNG, never derived from the operation. */
import { randomUUID } from 'node:crypto';

export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_.:-]{16,255}$/;

/** `whk_` + a UUID v4 without dashes (36 characters, 122 random bits). */
export function newIdempotencyKey(): string {
  return `whk_${randomUUID().replaceAll('-', '')}`;
}

/** The first characters of a key: all a log line may carry. */
export function keyPrefix(key: string): string {
  return key.slice(0, 12);
}
