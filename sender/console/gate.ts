/**
 * The seller console's gate (README.md, "Sign-in" and "Security"), as three Koa
 * middlewares server.ts puts before the routes: errors in the caller's language (JSON for
 * the API, a page for a session) with every answer's security headers; the public part
 * (static files, the token sign-in, OIDC's redirect and callback); and the session or
 * bearer check, with the origin check and CSRF token on every POST from a browser.
 */
import type Koa from 'koa';
import type { ConsoleAuth } from '../../shared/console/auth.js';
import { SESSION_COOKIE } from '../../shared/console/auth.js';
import { readBody } from '../../shared/console/body.js';
import { ownOrigin, setSecurityHeaders } from '../../shared/console/http.js';
import { OidcSignInError, type OidcSignIn } from '../../shared/console/oidc.js';
import type { Logger } from '../../shared/infra/logger.js';
import { ConsoleActionError } from './actions.js';
import { ConsoleInputError } from './filters.js';
import { errorPage, loginPage } from './pages/layout.js';
import { localPath, type Ctx, type State } from './route-kit.js';

type Middleware = Koa.Middleware<State>;
/** What answering with the sign-in page touches (any Koa context of this app). */
type LoginCtx = Pick<Ctx, 'status' | 'type' | 'body' | 'set' | 'ip'>;

/** OIDC sign-in: the issuer, and its client once registered (null until then: 503). */
export interface OidcSetting {
  issuer: string;
  signIn: OidcSignIn | null;
}

export interface GateOptions {
  auth: ConsoleAuth;
  brand: string;
  logger: Logger;
  oidc: OidcSetting | null;
  statics: Record<string, { type: string; body: Buffer }>;
}

/** Headers on every answer; errors as JSON for the API (and no session), else a page. */
export function errorAnswers({ brand, logger }: GateOptions): Middleware {
  return async (ctx, next) => {
    setSecurityHeaders(ctx);
    try {
      await next();
    } catch (err) {
      const input = err instanceof ConsoleInputError;
      const action = err instanceof ConsoleActionError;
      if (!input && !action) logger.error({ err, path: ctx.path }, 'console request failed');
      const status = input ? 400 : action ? err.status : 500;
      const code = input ? err.code : action ? err.code : 'INTERNAL_ERROR';
      const message = input || action ? err.message : 'internal error (see the console log)';
      ctx.status = status;
      if (ctx.path.startsWith('/api/') || !ctx.state.session) {
        ctx.body = { error: { code, message, ...(input ? { field: err.field } : {}) } };
      } else {
        const session = ctx.state.session;
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = errorPage(
          {
            title: 'Error',
            operator: ctx.state.operator.name,
            csrf: session.csrf,
            nav: null,
            brand,
          },
          status,
          message,
        ).value;
      }
    }
  };
}

/** The sign-in page's answers: the page itself, and 429 while an address is locked out. */
function signInAnswers({ auth, brand, oidc }: GateOptions) {
  const loginAnswer = (ctx: LoginCtx, status: number, error: string | null, next: string) => {
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = loginPage(brand, error, next, oidc?.issuer ?? null).value;
  };
  const lockedOut = (ctx: LoginCtx): boolean => {
    const wait = auth.retryAfter(ctx.ip);
    if (wait <= 0) return false;
    ctx.set('retry-after', String(wait));
    loginAnswer(ctx, 429, `Too many failed sign-ins: try again in ${wait} s.`, '/deliveries');
    return true;
  };
  return { loginAnswer, lockedOut };
}

/** OIDC: /login/oidc sends the browser to the provider, /auth/callback takes it back. */
async function oidcStep(o: GateOptions, ctx: Ctx): Promise<void> {
  const { auth, logger } = o;
  const { loginAnswer, lockedOut } = signInAnswers(o);
  const signIn = o.oidc!.signIn;
  if (!signIn) {
    ctx.status = 503;
    ctx.set('retry-after', '5');
    ctx.body = { error: { code: 'OIDC_NOT_READY', message: 'OIDC sign-in is starting' } };
    return;
  }
  if (ctx.path === '/login/oidc') {
    ctx.redirect(signIn.begin(localPath(ctx.query.next), ctx.ip));
    return;
  }
  if (lockedOut(ctx)) return;
  try {
    const { operator, next } = await signIn.finish(ctx.query);
    const id = auth.open(operator);
    ctx.cookies.set(SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: 'lax', // the provider's redirect back is a cross-site top-level GET
      path: '/',
      overwrite: true,
    });
    logger.info({ operator, via: 'oidc', address: ctx.ip }, 'console: signed in');
    ctx.redirect(next);
  } catch (err) {
    if (!(err instanceof OidcSignInError)) throw err;
    auth.failed(ctx.ip);
    logger.warn({ address: ctx.ip, code: err.code }, 'console: failed OIDC sign-in');
    loginAnswer(ctx, err.status, err.message, '/deliveries');
  }
}

/** Public: the stylesheet and scripts, and signing in (token form or OIDC). */
export function publicPart(o: GateOptions): Middleware {
  const { auth, logger, oidc, statics } = o;
  const { loginAnswer, lockedOut } = signInAnswers(o);
  return async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path.startsWith('/static/')) {
      const file = statics[ctx.path.slice('/static/'.length)];
      if (!file) return void (ctx.status = 404);
      ctx.type = file.type;
      ctx.set('cache-control', 'public, max-age=300');
      ctx.body = file.body;
      return;
    }
    if (ctx.path === '/favicon.ico') return void (ctx.status = 204);
    if (oidc && (ctx.path === '/login/oidc' || ctx.path === '/auth/callback')) {
      if (ctx.method !== 'GET') return void (ctx.status = 405);
      return oidcStep(o, ctx as unknown as Ctx);
    }
    if (ctx.path !== '/login') return next();
    if (ctx.method === 'GET') return loginAnswer(ctx, 200, null, localPath(ctx.query.next));
    if (ctx.method !== 'POST') return next();
    if (oidc) {
      const only = 'This console signs operators in through the OpenID provider only.';
      return loginAnswer(ctx, 403, only, '/deliveries');
    }
    if (lockedOut(ctx)) return;
    const form = await readBody(ctx);
    const id = auth.login(ctx.ip, typeof form.token === 'string' ? form.token : '');
    if (!id) {
      loginAnswer(ctx, 401, 'That token is not valid.', localPath(form.next));
      logger.warn({ address: ctx.ip }, 'console: failed sign-in');
      return;
    }
    ctx.cookies.set(SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      overwrite: true,
    });
    logger.info({ operator: auth.operator, address: ctx.ip }, 'console: signed in');
    ctx.redirect(localPath(form.next));
  };
}

/** A bearer caller: one limiter for every channel, so a wrong bearer counts as a failure. */
function bearerCaller(o: GateOptions, ctx: Parameters<Middleware>[0], bearer: string): boolean {
  const verdict = o.auth.bearer(ctx.ip, bearer);
  if (verdict === 'locked') {
    ctx.status = 429;
    ctx.set('Retry-After', String(o.auth.retryAfter(ctx.ip)));
    ctx.body = {
      error: { code: 'RATE_LIMITED', message: 'too many failed credentials from this address' },
    };
    return false;
  }
  if (verdict === 'invalid') {
    o.logger.warn({ address: ctx.ip }, 'console: wrong bearer token');
    ctx.status = 401;
    ctx.body = { error: { code: 'UNAUTHENTICATED', message: 'the bearer token is not valid' } };
    return false;
  }
  ctx.state.session = null;
  ctx.state.operator = { name: o.auth.operator, via: 'api' };
  return true;
}

/** Everything else needs a session (cookie) or the token (Authorization: Bearer). */
export function sessionGate(o: GateOptions): Middleware {
  const { auth } = o;
  return async (ctx, next) => {
    const bearer = /^Bearer (.+)$/.exec(ctx.get('authorization'))?.[1];
    ctx.state.api = ctx.path.startsWith('/api/') || ctx.path === '/api';
    if (bearer !== undefined) return bearerCaller(o, ctx, bearer) ? next() : undefined;
    const sid = ctx.cookies.get(SESSION_COOKIE);
    const session = auth.session(sid);
    if (!session) {
      if (ctx.state.api || ctx.method !== 'GET') {
        ctx.status = 401;
        ctx.body = {
          error: {
            code: 'UNAUTHENTICATED',
            message: 'sign in at /login or send Authorization: Bearer <console token>',
          },
        };
      } else {
        ctx.redirect(`/login?next=${encodeURIComponent(ctx.originalUrl)}`);
      }
      return;
    }
    ctx.state.session = session;
    ctx.state.sessionId = sid;
    ctx.state.operator = { name: session.operator, via: ctx.state.api ? 'api' : 'console' };
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      const origin = ctx.get('origin');
      if (origin && origin !== ownOrigin(ctx)) {
        throw new ConsoleActionError(403, 'CSRF_REJECTED', 'the request came from another origin');
      }
      ctx.state.form = await readBody(ctx);
      const echoed = ctx.get('x-csrf-token') || ctx.state.form._csrf;
      if (!auth.csrfMatches(session, echoed)) {
        throw new ConsoleActionError(
          403,
          'CSRF_REJECTED',
          'the form is stale or did not come from this console: reload the page',
        );
      }
    }
    return next();
  };
}
