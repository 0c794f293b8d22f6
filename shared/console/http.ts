/**
 * What both consoles (the seller's, the sidecar's) answer with on every response: a strict
 * Content-Security-Policy (scripts and styles only from our origin, no inline ones, nothing
 * from anywhere else), no sniffing, no framing, no caching; and the shared stylesheet.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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

/** Both consoles' chart script (charts.js: draws [data-chart] elements with uPlot). */
export const CHARTS_JS = {
  type: 'text/javascript; charset=utf-8',
  body: readFileSync(new URL('./charts.js', import.meta.url)),
};

// The charting library (uPlot, MIT), served by each console from the installed package:
// never a CDN, and the CSP's script-src 'self' holds.
const uplot = (file: string) =>
  readFileSync(createRequire(import.meta.url).resolve(`uplot/dist/${file}`));
export const UPLOT_JS = {
  type: 'text/javascript; charset=utf-8',
  body: uplot('uPlot.iife.min.js'),
};
export const UPLOT_CSS = { type: 'text/css; charset=utf-8', body: uplot('uPlot.min.css') };

/** The static files every console serves under /static/. */
export const SHARED_STATIC: Record<string, { type: string; body: Buffer }> = {
  'console.css': CONSOLE_CSS,
  'charts.js': CHARTS_JS,
  'uplot.js': UPLOT_JS,
  'uplot.css': UPLOT_CSS,
};
