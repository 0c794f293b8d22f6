/**
 * Koa middleware for a buyer's app. It reads the raw request stream itself, so mount it
 * before any body parser (or on a route the parser does not touch): the signature covers
 * the exact bytes, which must never be re-serialised. Its type is Koa's middleware shape,
 * declared structurally (shared/http/koa-like.ts): no Koa types on the package's surface.
 */
import type { KoaMiddlewareLike } from '../shared/http/koa-like.js';
import { receiverRequest, type AdapterOptions } from './http.js';
import type { WebhookReceiver } from './pipeline/receiver.js';

export interface KoaReceiverOptions extends AdapterOptions {
  /** Only requests whose path matches are handled; others go to `next()`. Default: all. */
  path?: string | RegExp;
}

export function webhookMiddleware(
  receiver: WebhookReceiver,
  options: KoaReceiverOptions = {},
): KoaMiddlewareLike {
  const match =
    options.path === undefined
      ? () => true
      : typeof options.path === 'string'
        ? (p: string) => p === options.path
        : (p: string) => (options.path as RegExp).test(p);
  return async (ctx, next) => {
    if (!match(ctx.path)) return next();
    const r = await receiver.handle(receiverRequest(ctx.req, options));
    ctx.status = r.status;
    for (const [k, v] of Object.entries(r.headers)) ctx.set(k, v);
    if (!ctx.req.complete) ctx.set('connection', 'close');
    ctx.body = r.body;
  };
}
