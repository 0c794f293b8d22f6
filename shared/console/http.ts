/**
 * What both consoles (the seller's, the sidecar's) answer with on every response: a strict
 * Content-Security-Policy (scripts and styles only from our origin, no inline ones, nothing
 * from anywhere else), no sniffing, no framing, no caching; and the shared stylesheet.
 */
import { readFileSync } from 'node:fs';
import type Koa from 'koa';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export function setSecurityHeaders(ctx: Koa.Context): void {
  ctx.set('content-security-policy', CONTENT_SECURITY_POLICY);
  ctx.set('x-content-type-options', 'nosniff');
  ctx.set('referrer-policy', 'same-origin');
  ctx.set('x-frame-options', 'DENY');
  ctx.set('cache-control', 'no-store');
}

export const CONSOLE_CSS = {
  type: 'text/css; charset=utf-8',
  body: readFileSync(new URL('./console.css', import.meta.url)),
};

/** Our own origin from the Host header (Koa 3's ctx.origin echoes the Origin header). */
export function ownOrigin(ctx: Koa.Context): string {
  return `${ctx.protocol}://${ctx.host}`;
}
