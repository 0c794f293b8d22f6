/**
 * Koa middleware as the package's public types describe it: structurally, the few context
 * members the package's middleware uses, so no `koa` (`@types/koa`) type reaches a user's
 * compiler. A consumer on `skipLibCheck: false` otherwise type-checks whatever @types/koa and
 * its own dependencies resolve to that day, which has failed to compile (issue 22). Koa's
 * own context has every member below, so these functions mount with `app.use(...)` as they are.
 */
import type { IncomingMessage } from 'node:http';

/** The members of Koa's `ctx` that the package's middleware reads and sets. */
export interface KoaContextLike {
  readonly req: IncomingMessage;
  readonly path: string;
  status: number;
  body: unknown;
  set(field: string, value: string): void;
}

/** Koa middleware: `(ctx, next)`, as `app.use()` takes it. */
export type KoaMiddlewareLike = (
  ctx: KoaContextLike,
  next: () => Promise<unknown>,
) => Promise<unknown>;
