/**
 * The sidecar's operator console (`svc receiver --console-listen HOST:PORT`): refusals
 * grouped by code and sender, events, senders' keys, queue backlog; a JSON twin of each
 * under /api/. Same rules as the seller's console: a token sign-in (no anonymous access),
 * CSRF on every POST, the strict CSP, every value escaped, rate-limited sign-in. Read
 * only: nothing here changes the receiver's state.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { SESSION_COOKIE, type ConsoleAuth, type Session } from '../../shared/console/auth.js';
import { readBody } from '../../shared/console/body.js';
import { ownOrigin, setSecurityHeaders, SHARED_STATIC } from '../../shared/console/http.js';
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import {
  eventsBody,
  layout,
  loginPage,
  overviewBody,
  sendersBody,
  type SenderView,
  type Totals,
} from './pages.js';
import type { EventFilter, ReceiverConsoleStore } from './store.js';

export interface ReceiverConsoleOptions {
  store: ReceiverConsoleStore;
  auth: ConsoleAuth;
  senders: () => SenderView[];
  totals: () => Promise<Totals>;
  logger?: Logger;
}

interface State {
  session: Session;
  sessionId: string;
}

function filterOf(q: Record<string, unknown>): EventFilter {
  const s = (k: string) => {
    const v = q[k];
    return typeof v === 'string' && v.trim() !== '' && v.length <= 300 ? v.trim() : undefined;
  };
  const f: EventFilter = {};
  for (const k of ['code', 'sender', 'key', 'before'] as const) {
    const v = s(k);
    if (v !== undefined) f[k] = v;
  }
  return f;
}

export function createReceiverConsoleApp(o: ReceiverConsoleOptions): Koa<State> {
  const log = o.logger ?? silentLogger;
  const app = new Koa<State>();
  const router = new Router<State>();
  app.use(async (ctx, next) => {
    setSecurityHeaders(ctx);
    try {
      await next();
    } catch (err) {
      log.error({ err, path: ctx.path }, 'receiver console request failed');
      ctx.status = (err as { status?: number }).status === 400 ? 400 : 500;
      ctx.body = {
        error: {
          code: ctx.status === 400 ? 'INVALID_REQUEST' : 'INTERNAL_ERROR',
          message: (err as Error).message,
        },
      };
    }
  });
  app.use(async (ctx, next) => {
    const file = ctx.path.startsWith('/static/')
      ? SHARED_STATIC[ctx.path.slice('/static/'.length)]
      : undefined;
    if (file) {
      ctx.type = file.type;
      ctx.body = file.body;
      return;
    }
    if (ctx.path === '/favicon.ico') return void (ctx.status = 204);
    if (ctx.path === '/login') {
      ctx.type = 'text/html; charset=utf-8';
      if (ctx.method === 'POST') {
        const wait = o.auth.retryAfter(ctx.ip);
        if (wait > 0) {
          ctx.status = 429;
          ctx.set('retry-after', String(wait));
          ctx.body = loginPage(`Too many failed sign-ins: try again in ${wait} s.`).value;
          return;
        }
        const form = await readBody(ctx);
        const id = o.auth.login(ctx.ip, typeof form.token === 'string' ? form.token : '');
        if (!id) {
          ctx.status = 401;
          ctx.body = loginPage('That token is not valid.').value;
          return;
        }
        ctx.cookies.set(SESSION_COOKIE, id, { httpOnly: true, sameSite: 'strict', path: '/' });
        ctx.redirect('/');
        return;
      }
      ctx.body = loginPage(null).value;
      return;
    }
    const bearer = /^Bearer (.+)$/.exec(ctx.get('authorization'))?.[1];
    if (bearer !== undefined && ctx.path.startsWith('/api/')) {
      // One limiter for every channel: a wrong bearer counts as a failed sign-in.
      const verdict = o.auth.bearer(ctx.ip, bearer);
      if (verdict === 'ok') return next();
      ctx.status = verdict === 'locked' ? 429 : 401;
      if (verdict === 'locked') ctx.set('Retry-After', String(o.auth.retryAfter(ctx.ip)));
      ctx.body = {
        error: {
          code: verdict === 'locked' ? 'RATE_LIMITED' : 'UNAUTHENTICATED',
          message:
            verdict === 'locked'
              ? 'too many failed credentials from this address'
              : 'the bearer token is not valid',
        },
      };
      return;
    }
    const sid = ctx.cookies.get(SESSION_COOKIE);
    const session = o.auth.session(sid);
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
    if (ctx.method === 'POST') {
      const origin = ctx.get('origin');
      const form = await readBody(ctx);
      if (
        (origin && origin !== ownOrigin(ctx)) ||
        !o.auth.csrfMatches(session, form._csrf ?? ctx.get('x-csrf-token'))
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
  });
  const page = (
    ctx: Koa.ParameterizedContext<State>,
    title: string,
    nav: string,
    body: Parameters<typeof layout>[4],
  ) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = layout(title, nav, ctx.state.session.operator, ctx.state.session.csrf, body).value;
  };
  router.get('/', async (ctx) => {
    const [groups, totals, answers] = await Promise.all([
      o.store.rejections(),
      o.totals(),
      o.store.answersByCode(),
    ]);
    page(ctx, 'Overview', '/', overviewBody(groups, totals, answers));
  });
  router.get('/events', async (ctx) => {
    const f = filterOf(ctx.query);
    page(ctx, 'Events', '/events', eventsBody(f, await o.store.events(f)));
  });
  router.get('/senders', (ctx) => page(ctx, 'Senders', '/senders', sendersBody(o.senders())));
  router.post('/logout', (ctx) => {
    o.auth.logout(ctx.state.sessionId);
    ctx.cookies.set(SESSION_COOKIE, '', {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge: 0,
    });
    ctx.redirect('/login');
  });
  router.get('/api/rejections', async (ctx) => {
    ctx.body = { items: await o.store.rejections(), totals: await o.totals() };
  });
  router.get('/api/answers', async (ctx) => {
    ctx.body = await o.store.answersByCode();
  });
  router.get('/api/events', async (ctx) => {
    ctx.body = { items: await o.store.events(filterOf(ctx.query)) };
  });
  router.get('/api/senders', (ctx) => {
    ctx.body = { items: o.senders() };
  });
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

export async function listenReceiverConsole(
  o: ReceiverConsoleOptions & { host: string; port: number },
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer(createReceiverConsoleApp(o).callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const h = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    url: `http://${h}:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
