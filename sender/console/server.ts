/**
 * The seller's console: a Koa app with the pages and the JSON API they use (`/api/...`,
 * documented in README.md), behind `ConsoleAuth`. Every response carries a strict CSP (no
 * inline script or style, nothing from another origin); every POST from a browser session
 * must echo the session's CSRF token and come from this origin.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router, { type RouterContext } from '@koa/router';
import Koa from 'koa';
import { ownOrigin, setSecurityHeaders, SHARED_STATIC } from '../../shared/console/http.js';
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import { ConsoleActionError, type ConsoleActions, type Operator } from './actions.js';
import type { ConsoleAuth } from '../../shared/console/auth.js';
import { OidcSignInError, type OidcSignIn } from '../../shared/console/oidc.js';
import { SESSION_COOKIE, type Session } from '../../shared/console/auth.js';
import { readBody } from '../../shared/console/body.js';
import {
  ConsoleInputError,
  decodeCursor,
  parseFilter,
  parseLimit,
  parseOrigin,
  parseTime,
} from './filters.js';
import { LiveFeed } from './live.js';
import { oauthClientsBody, type ClientView } from './pages/oauth-clients.js';
import { auditBody } from './pages/audit.js';
import { deliveriesBody, deliveryRow } from './pages/deliveries.js';
import { deliveryBody, deliveryLive } from './pages/delivery.js';
import { destinationsBody, recoverPreviewBody } from './pages/destinations.js';
import { trendsBody } from './pages/trends.js';
import { parseRange, TrendStore } from './trends.js';
import { query, type Html } from '../../shared/console/html.js';
import { errorPage, layout, loginPage, type PageContext } from './pages/layout.js';
import type { ConsoleStore } from './store.js';

const STATIC: Record<string, { type: string; body: Buffer }> = {
  'console.js': {
    type: 'text/javascript; charset=utf-8',
    body: readFileSync(new URL('./static/console.js', import.meta.url)),
  },
  ...SHARED_STATIC,
};

export interface ConsoleAppOptions {
  store: ConsoleStore;
  actions: ConsoleActions;
  auth: ConsoleAuth;
  brand?: string;
  logger?: Logger;
  /** Live-update poll period; default 500 ms. */
  liveEveryMs?: number;
  /**
   * Browser sign-in through an OpenID provider instead of the token form (the token stays
   * valid as a Bearer token for scripts calling the JSON API).
   */
  oidc?: OidcSetting | null;
  /** The seller's OAuth client bindings (svc start hands them in; absent: 404). */
  oauthClients?: OAuthClientAdmin | null;
}

/**
 * Who a registered OAuth client acts as (agents/oauth/bindings.ts, behind this interface so
 * the console imports nothing of the agents): the operator lists, binds and unbinds; the
 * implementation audits each change with the operator's name and `via: console`.
 */
export interface OAuthClientAdmin {
  list(): Promise<unknown[]>;
  bind(input: Record<string, unknown>, operator: string): Promise<unknown>;
  unbind(input: Record<string, unknown>, operator: string): Promise<unknown>;
}

/** OIDC sign-in: the issuer, and its client once registered (null until then: 503). */
export interface OidcSetting {
  issuer: string;
  signIn: OidcSignIn | null;
}

interface State {
  session: Session | null;
  sessionId: string | undefined;
  operator: Operator;
  api: boolean;
  /** The parsed body of a browser session's POST (read for its CSRF token). */
  form?: Record<string, unknown>;
}

type Ctx = RouterContext<State>;
/** What answering with the sign-in page touches (any Koa context of this app). */
type LoginCtx = Pick<Ctx, 'status' | 'type' | 'body' | 'set' | 'ip'>;

/** An action's destination: an origin or `host:port`, never a search pattern. */
function actionOrigin(v: string): string {
  const origin = parseOrigin('origin', v);
  try {
    if (origin.includes('*')) throw new Error('a pattern');
    new URL(origin.includes('://') ? origin : `http://${origin}`);
  } catch {
    throw new ConsoleInputError(
      'origin',
      'one origin such as https://buyer.example, not a pattern',
    );
  }
  return origin;
}

/** The Destinations page's banner after an action (its outcome in the query). */
function destinationsFlash(q: Record<string, unknown>): { kind: 'ok'; text: string } | null {
  const n = q.recovered;
  if (typeof n === 'string' && /^\d+$/.test(n)) {
    return { kind: 'ok', text: `Recovered ${n} deliveries.` };
  }
  const origin = typeof q.origin === 'string' ? q.origin : '';
  switch (q.done) {
    case 'pause':
      return { kind: 'ok', text: `Paused ${origin}: its deliveries wait until you resume.` };
    case 'resume':
      return { kind: 'ok', text: `Resumed ${origin}.` };
    case 'test':
      return {
        kind: 'ok',
        text: `Test event sent to ${origin} as delivery ${typeof q.id === 'string' ? q.id : ''}.`,
      };
    default:
      return null;
  }
}

function localPath(v: unknown): string {
  return typeof v === 'string' && /^\/(?![/\\])[\w\-./?=&%]*$/.test(v) ? v : '/deliveries';
}

export function createConsoleApp(o: ConsoleAppOptions): { app: Koa<State>; live: LiveFeed } {
  const logger = o.logger ?? silentLogger;
  const brand = o.brand ?? 'svc';
  const { store, actions, auth } = o;
  const oidc = o.oidc ?? null;
  const live = new LiveFeed(store, logger, o.liveEveryMs);
  const trends = new TrendStore(store.pool, store.schema);
  const app = new Koa<State>();
  const router = new Router<State>();

  const page = (ctx: Ctx, p: Partial<PageContext> & { title: string }, body: Html | string) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = layout(
      {
        operator: ctx.state.operator.name,
        csrf: ctx.state.session?.csrf ?? '',
        nav: null,
        brand,
        oauthClients: !!o.oauthClients,
        ...p,
      },
      body,
    ).value;
  };

  // Headers on every answer, errors in the caller's language (JSON for the API).
  app.use(async (ctx, next) => {
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
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = errorPage(
          {
            title: 'Error',
            operator: ctx.state.operator.name,
            csrf: ctx.state.session.csrf,
            nav: null,
            brand,
          },
          status,
          message,
        ).value;
      }
    }
  });

  /** The sign-in page as the answer: the token form, or the provider's link under OIDC. */
  const loginAnswer = (ctx: LoginCtx, status: number, error: string | null, next: string) => {
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = loginPage(brand, error, next, oidc?.issuer ?? null).value;
  };
  /** 429 + Retry-After while the address is locked out for failed sign-ins; true if so. */
  const lockedOut = (ctx: LoginCtx): boolean => {
    const wait = auth.retryAfter(ctx.ip);
    if (wait <= 0) return false;
    ctx.set('retry-after', String(wait));
    loginAnswer(ctx, 429, `Too many failed sign-ins: try again in ${wait} s.`, '/deliveries');
    return true;
  };

  // Public: the stylesheet and script, and signing in.
  app.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path.startsWith('/static/')) {
      const file = STATIC[ctx.path.slice('/static/'.length)];
      if (!file) return void (ctx.status = 404);
      ctx.type = file.type;
      ctx.set('cache-control', 'public, max-age=300');
      ctx.body = file.body;
      return;
    }
    if (ctx.path === '/favicon.ico') return void (ctx.status = 204);
    if (oidc && (ctx.path === '/login/oidc' || ctx.path === '/auth/callback')) {
      if (ctx.method !== 'GET') return void (ctx.status = 405);
      return oidcStep(ctx as unknown as Ctx);
    }
    if (ctx.path === '/login') {
      if (ctx.method === 'GET') return loginAnswer(ctx, 200, null, localPath(ctx.query.next));
      if (ctx.method === 'POST' && oidc) {
        const only = 'This console signs operators in through the OpenID provider only.';
        return loginAnswer(ctx, 403, only, '/deliveries');
      }
      if (ctx.method === 'POST') {
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
        return;
      }
    }
    await next();
  });

  // OIDC: /login/oidc sends the browser to the provider, /auth/callback takes it back.
  async function oidcStep(ctx: Ctx): Promise<void> {
    const signIn = oidc!.signIn;
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

  // Everything else needs a session (cookie) or the token (Authorization: Bearer).
  app.use(async (ctx, next) => {
    const bearer = /^Bearer (.+)$/.exec(ctx.get('authorization'))?.[1];
    ctx.state.api = ctx.path.startsWith('/api/') || ctx.path === '/api';
    if (bearer !== undefined) {
      // One limiter for every channel: a wrong bearer counts as a failed sign-in.
      const verdict = auth.bearer(ctx.ip, bearer);
      if (verdict === 'locked') {
        ctx.status = 429;
        ctx.set('Retry-After', String(auth.retryAfter(ctx.ip)));
        ctx.body = {
          error: { code: 'RATE_LIMITED', message: 'too many failed credentials from this address' },
        };
        return;
      }
      if (verdict === 'invalid') {
        logger.warn({ address: ctx.ip }, 'console: wrong bearer token');
        ctx.status = 401;
        ctx.body = { error: { code: 'UNAUTHENTICATED', message: 'the bearer token is not valid' } };
        return;
      }
      ctx.state.session = null;
      ctx.state.operator = { name: auth.operator, via: 'api' };
      return next();
    }
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
  });

  const form = (ctx: Ctx): Record<string, unknown> => ctx.state.form ?? {};
  const body = async (ctx: Ctx): Promise<Record<string, unknown>> =>
    ctx.state.session ? form(ctx) : readBody(ctx);

  const listFrom = (ctx: Ctx) => {
    const filter = parseFilter(ctx.query);
    const c = ctx.query.cursor;
    const cursor = typeof c === 'string' && c !== '' ? decodeCursor(c) : null;
    return { filter, cursor, limit: parseLimit(ctx.query.limit) };
  };

  /** `?redelivered=N`: the attempt a Redeliver started, whose fate the page follows. */
  const redeliveredOf = (ctx: Ctx): number | null => {
    const v = ctx.query.redelivered;
    return typeof v === 'string' && /^\d{1,6}$/.test(v) ? Number(v) : null;
  };

  const detail = async (ctx: Ctx) => {
    const d = await store.get(ctx.params.id!);
    if (!d) throw new ConsoleActionError(404, 'NOT_FOUND', `no delivery ${ctx.params.id}`);
    return d;
  };

  const recoverInput = (b: Record<string, unknown>) => {
    if (typeof b.origin !== 'string' || b.origin === '') {
      throw new ConsoleInputError('origin', 'an origin such as https://buyer.example');
    }
    if (typeof b.since !== 'string' || b.since === '') {
      throw new ConsoleInputError('since', 'an ISO 8601 time, e.g. 2026-11-23T12:00:00Z');
    }
    return { origin: actionOrigin(b.origin), since: parseTime('since', b.since) };
  };

  const originInput = (b: Record<string, unknown>) => {
    if (typeof b.origin !== 'string' || b.origin.trim() === '') {
      throw new ConsoleInputError('origin', 'an origin such as https://buyer.example');
    }
    return actionOrigin(b.origin);
  };

  // Pages.
  router.get('/', (ctx) => ctx.redirect('/deliveries'));
  router.get('/deliveries', async (ctx) => {
    const { filter, cursor, limit } = listFrom(ctx);
    const result = await store.list(filter, cursor, limit);
    page(
      ctx,
      { title: 'Deliveries', nav: 'deliveries', live: 'deliveries' },
      deliveriesBody(filter, result),
    );
  });
  router.get('/deliveries/:id', async (ctx) => {
    const d = await detail(ctx);
    page(
      ctx,
      { title: `Delivery ${d.id}`, nav: 'deliveries', live: 'delivery' },
      deliveryBody(d, ctx.state.session?.csrf ?? '', redeliveredOf(ctx)),
    );
  });
  router.get('/deliveries/:id/live', async (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    const csrf = ctx.state.session?.csrf ?? '';
    ctx.body = deliveryLive(await detail(ctx), csrf, redeliveredOf(ctx)).value;
  });
  router.get('/deliveries/:id/row', async (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = deliveryRow(await detail(ctx)).value;
  });
  router.post('/deliveries/:id/redeliver', async (ctx) => {
    const r = await actions.redeliver(ctx.params.id!, ctx.state.operator);
    ctx.redirect(`/deliveries/${r.id}?redelivered=${r.attempt}`);
  });
  router.get('/destinations', async (ctx) => {
    page(
      ctx,
      { title: 'Destinations', nav: 'destinations', flash: destinationsFlash(ctx.query) },
      destinationsBody(await store.destinations(), ctx.state.session?.csrf ?? ''),
    );
  });
  // The bulk redeliver's preview and confirmation (GET: nothing happens yet).
  router.get('/destinations/recover', async (ctx) => {
    const { origin, since } = recoverInput(ctx.query);
    const preview = await actions.recoverPreview(origin, since);
    const done = ctx.query.recovered;
    page(
      ctx,
      {
        title: 'Recover',
        nav: 'destinations',
        flash:
          typeof done === 'string' && /^\d+$/.test(done)
            ? { kind: 'ok', text: `Recovered ${done} deliveries; the rest is counted below.` }
            : null,
      },
      recoverPreviewBody(preview, ctx.state.session?.csrf ?? ''),
    );
  });
  router.post('/destinations/recover', async (ctx) => {
    const { origin, since } = recoverInput(form(ctx));
    const r = await actions.recover(origin, since, ctx.state.operator);
    if (r.more) {
      // More than one run takes: the preview again, counting what is left.
      ctx.redirect(
        `/destinations/recover${query({ origin, since: r.since, recovered: String(r.recovered) })}`,
      );
      return;
    }
    ctx.redirect(`/destinations?recovered=${r.recovered}`);
  });
  for (const verb of ['pause', 'resume', 'test'] as const) {
    router.post(`/destinations/${verb}`, async (ctx) => {
      const origin = originInput(form(ctx));
      const r =
        verb === 'test'
          ? await actions.sendTest(origin, ctx.state.operator)
          : await actions[verb](origin, ctx.state.operator);
      ctx.redirect(
        `/destinations${query({ done: verb, origin, ...('id' in r ? { id: r.id } : {}) })}`,
      );
    });
  }
  router.get('/trends', async (ctx) => {
    const t = await trends.trends(parseRange(ctx.query.range));
    page(ctx, { title: 'Trends', nav: 'trends', charts: true }, trendsBody(t));
  });
  router.get('/audit', async (ctx) => {
    page(ctx, { title: 'Audit', nav: 'audit' }, auditBody(await store.audit(100)));
  });
  router.post('/logout', (ctx) => {
    auth.logout(ctx.state.sessionId);
    ctx.cookies.set(SESSION_COOKIE, '', {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge: 0,
    });
    ctx.redirect('/login');
  });

  // The JSON API (the same reads and actions; README.md documents it).
  router.get('/api', (ctx) => {
    ctx.body = API_INDEX;
  });
  router.get('/api/deliveries', async (ctx) => {
    const { filter, cursor, limit } = listFrom(ctx);
    ctx.body = await store.list(filter, cursor, limit);
  });
  router.get('/api/deliveries/:id', async (ctx) => {
    ctx.body = await detail(ctx);
  });
  router.post('/api/deliveries/:id/redeliver', async (ctx) => {
    await body(ctx);
    ctx.status = 202;
    ctx.body = await actions.redeliver(ctx.params.id!, ctx.state.operator);
  });
  // The seller's OAuth client bindings (issue 21): the page with its forms, and the JSON API.
  const clients = o.oauthClients;
  if (clients) {
    const change = async (verb: 'bind' | 'unbind', input: Record<string, unknown>, who: string) => {
      try {
        return await clients[verb](input, who);
      } catch (err) {
        const e = err as { code?: string; status?: number; message?: string };
        if (typeof e.code !== 'string' || typeof e.status !== 'number') throw err;
        throw new ConsoleActionError(e.status, e.code, e.message ?? verb);
      }
    };
    router.get('/oauth-clients', async (ctx) => {
      const done = ctx.query.done;
      page(
        ctx,
        {
          title: 'OAuth clients',
          nav: 'oauth-clients',
          flash:
            done === 'bind' || done === 'unbind'
              ? { kind: 'ok', text: `${done === 'bind' ? 'Bound' : 'Unbound'}.` }
              : null,
        },
        oauthClientsBody((await clients.list()) as ClientView[], ctx.state.session?.csrf ?? ''),
      );
    });
    for (const verb of ['bind', 'unbind'] as const) {
      router.post(`/oauth-clients/${verb}`, async (ctx) => {
        await change(verb, form(ctx), ctx.state.operator.name);
        ctx.redirect(`/oauth-clients?done=${verb}`);
      });
    }
    router.get('/api/oauth-clients', async (ctx) => {
      ctx.body = { items: await clients.list() };
    });
    for (const verb of ['bind', 'unbind'] as const) {
      router.post(`/api/oauth-clients/${verb}`, async (ctx) => {
        ctx.body = await change(verb, await body(ctx), ctx.state.operator.name);
      });
    }
  }
  router.get('/api/recover/preview', async (ctx) => {
    const { origin, since } = recoverInput(ctx.query);
    ctx.body = await actions.recoverPreview(origin, since);
  });
  for (const verb of ['pause', 'resume', 'test'] as const) {
    router.post(`/api/destinations/${verb}`, async (ctx) => {
      const origin = originInput(await body(ctx));
      ctx.status = verb === 'test' ? 202 : 200;
      ctx.body =
        verb === 'test'
          ? await actions.sendTest(origin, ctx.state.operator)
          : await actions[verb](origin, ctx.state.operator);
    });
  }
  router.post('/api/recover', async (ctx) => {
    const { origin, since } = recoverInput(await body(ctx));
    ctx.status = 202;
    ctx.body = await actions.recover(origin, since, ctx.state.operator);
  });
  router.get('/api/destinations', async (ctx) => {
    ctx.body = { items: await store.destinations() };
  });
  router.get('/api/trends', async (ctx) => {
    ctx.body = await trends.trends(parseRange(ctx.query.range));
  });
  router.get('/api/audit', async (ctx) => {
    ctx.body = { items: await store.audit(parseLimit(ctx.query.limit)) };
  });
  router.get('/api/events', (ctx) => {
    ctx.respond = false;
    live.add(ctx.res);
  });

  app.use(router.routes());
  app.use(router.allowedMethods());
  return { app, live };
}

export const API_INDEX = {
  endpoints: [
    {
      method: 'GET',
      path: '/api/deliveries',
      query: 'status origin media_buy principal task type key payload from to cursor limit',
    },
    { method: 'GET', path: '/api/deliveries/{id}' },
    { method: 'POST', path: '/api/deliveries/{id}/redeliver' },
    {
      method: 'POST',
      path: '/api/recover',
      body: '{"origin": "https://buyer.example", "since": "2026-11-23T00:00:00Z"}',
    },
    {
      method: 'GET',
      path: '/api/recover/preview',
      query: 'origin since',
      note: 'how many deliveries POST /api/recover would send again',
    },
    { method: 'GET', path: '/api/destinations' },
    {
      method: 'POST',
      path: '/api/destinations/pause',
      body: '{"origin": "https://buyer.example"}',
    },
    {
      method: 'POST',
      path: '/api/destinations/resume',
      body: '{"origin": "https://buyer.example"}',
    },
    { method: 'POST', path: '/api/destinations/test', body: '{"origin": "https://buyer.example"}' },
    { method: 'GET', path: '/api/trends', query: 'range (hour, day, week)' },
    { method: 'GET', path: '/api/audit', query: 'limit' },
    {
      method: 'GET',
      path: '/api/events',
      note: 'server-sent events: "attempt" per attempt record',
    },
  ],
  auth: 'a session cookie from /login (POSTs then need X-CSRF-Token), or Authorization: Bearer <console token>',
};

export interface ConsoleServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Listens on host:port (loopback by default; 0 picks a free port). */
export async function listenConsole(
  o: ConsoleAppOptions & { host?: string; port?: number },
): Promise<ConsoleServer> {
  const { app, live } = createConsoleApp(o);
  const server = createServer(app.callback());
  const host = o.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const h = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${h}:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        live.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
