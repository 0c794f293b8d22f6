/**
 * The sidecar console's gate (same rules as the seller's console): errors in the caller's
 * language with the security headers on every answer; the public part (static files, the
 * token sign-in, rate-limited); then a session cookie, or the token as a Bearer on the
 * JSON API, with the origin check and the CSRF token on every POST from a session.
 */
import type Koa from 'koa';
import { SESSION_COOKIE, type ConsoleAuth, type Session } from '../../shared/console/auth.js';
import { readBody } from '../../shared/console/body.js';
import { ownOrigin, setSecurityHeaders, SHARED_STATIC } from '../../shared/console/http.js';
import type { Logger } from '../../shared/infra/logger.js';
import { ConsoleActionFailure, ConsoleInputFailure } from './errors.js';
import { layout, loginPage } from './pages.js';
import { html } from '../../shared/console/html.js';

export interface State {
  /** Null for a bearer call of the JSON API. */
  session: Session | null;
  sessionId: string;
  operator: { name: string; via: 'console' | 'api' };
  /** A session POST's form, read for its CSRF token. */
  form?: Record<string, unknown>;
}

type Middleware = Koa.Middleware<State>;

/** Security headers; refusals with their status and code, JSON on the API, else a page. */
export function errorAnswers(log: Logger): Middleware {
  return async (ctx, next) => {
    setSecurityHeaders(ctx);
    try {
      await next();
    } catch (err) {
      const known = err instanceof ConsoleActionFailure || err instanceof ConsoleInputFailure;
      if (!known) log.error({ err, path: ctx.path }, 'receiver console request failed');
      const legacy400 = !known && (err as { status?: number }).status === 400;
      ctx.status = known ? err.status : legacy400 ? 400 : 500;
      const code = known ? err.code : legacy400 ? 'INVALID_REQUEST' : 'INTERNAL_ERROR';
      const message = (err as Error).message;
      const field = err instanceof ConsoleInputFailure ? { field: err.field } : {};
      if (ctx.path.startsWith('/api/') || !ctx.state.session) {
        ctx.body = { error: { code, message, ...field } };
        return;
      }
      const s = ctx.state.session;
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = layout(
        'Error',
        '',
        s.operator,
        s.csrf,
        html`<h1>Error ${ctx.status}</h1>
          <p class="flash error">${code}: ${message}</p>`,
      ).value;
    }
  };
}

/** Static files and the token sign-in. */
export function publicPart(auth: ConsoleAuth): Middleware {
  return async (ctx, next) => {
    const file = ctx.path.startsWith('/static/')
      ? SHARED_STATIC[ctx.path.slice('/static/'.length)]
      : undefined;
    if (file) {
      ctx.type = file.type;
      ctx.body = file.body;
      return;
    }
    if (ctx.path === '/favicon.ico') return void (ctx.status = 204);
    if (ctx.path !== '/login') return next();
    ctx.type = 'text/html; charset=utf-8';
    if (ctx.method !== 'POST') {
      ctx.body = loginPage(null).value;
      return;
    }
    const wait = auth.retryAfter(ctx.ip);
    if (wait > 0) {
      ctx.status = 429;
      ctx.set('retry-after', String(wait));
      ctx.body = loginPage(`Too many failed sign-ins: try again in ${wait} s.`).value;
      return;
    }
    const form = await readBody(ctx);
    const id = auth.login(ctx.ip, typeof form.token === 'string' ? form.token : '');
    if (!id) {
      ctx.status = 401;
      ctx.body = loginPage('That token is not valid.').value;
      return;
    }
    ctx.cookies.set(SESSION_COOKIE, id, { httpOnly: true, sameSite: 'strict', path: '/' });
    ctx.redirect('/');
  };
}

/** A bearer call of the JSON API: one limiter for every channel (a wrong one counts). */
function bearerCall(auth: ConsoleAuth, ctx: Parameters<Middleware>[0], bearer: string): boolean {
  const verdict = auth.bearer(ctx.ip, bearer);
  if (verdict === 'ok') {
    ctx.state.session = null;
    ctx.state.operator = { name: auth.operator, via: 'api' };
    return true;
  }
  ctx.status = verdict === 'locked' ? 429 : 401;
  if (verdict === 'locked') ctx.set('Retry-After', String(auth.retryAfter(ctx.ip)));
  ctx.body = {
    error: {
      code: verdict === 'locked' ? 'RATE_LIMITED' : 'UNAUTHENTICATED',
      message:
        verdict === 'locked'
          ? 'too many failed credentials from this address'
          : 'the bearer token is not valid',
    },
  };
  return false;
}

/** Everything else: a session (CSRF-checked POSTs) or, on /api/, the bearer token. */
export function sessionGate(auth: ConsoleAuth): Middleware {
  return async (ctx, next) => {
    const bearer = /^Bearer (.+)$/.exec(ctx.get('authorization'))?.[1];
    if (bearer !== undefined && ctx.path.startsWith('/api/')) {
      return bearerCall(auth, ctx, bearer) ? next() : undefined;
    }
    const sid = ctx.cookies.get(SESSION_COOKIE);
    const session = auth.session(sid);
    if (!session) {
      if (ctx.method === 'GET' && !ctx.path.startsWith('/api/')) return ctx.redirect('/login');
      ctx.status = 401;
      ctx.body = {
        error: {
          code: 'UNAUTHENTICATED',
          message: 'sign in at /login or send Authorization: Bearer <console token>',
        },
      };
      return;
    }
    ctx.state.session = session;
    ctx.state.sessionId = sid!;
    const api = ctx.path.startsWith('/api/');
    ctx.state.operator = { name: session.operator, via: api ? 'api' : 'console' };
    if (ctx.method === 'POST') {
      const origin = ctx.get('origin');
      const form = await readBody(ctx);
      ctx.state.form = form;
      if (
        (origin && origin !== ownOrigin(ctx)) ||
        !auth.csrfMatches(session, form._csrf ?? ctx.get('x-csrf-token'))
      ) {
        ctx.status = 403;
        ctx.body = {
          error: {
            code: 'CSRF_REJECTED',
            message: 'the form is stale or did not come from this console',
          },
        };
        return;
      }
    }
    return next();
  };
}
