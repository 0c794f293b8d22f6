/**
 * The seller's console: a Koa app with the pages and the JSON API they use (`/api/...`,
 * documented in README.md), behind `ConsoleAuth`. Every response carries a strict CSP (no
 * inline script or style, nothing from another origin); every POST from a browser session
 * must echo the session's CSRF token and come from this origin (gate.ts). The routes are
 * one function per group: pages (routes-pages.ts) and the JSON API (routes-api.ts).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import type { ConsoleAuth } from '../../shared/console/auth.js';
import { SESSION_COOKIE } from '../../shared/console/auth.js';
import { SHARED_STATIC } from '../../shared/console/http.js';
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import type { ConsoleActions } from './actions.js';
import { errorAnswers, publicPart, sessionGate, type OidcSetting } from './gate.js';
import { LiveFeed } from './live.js';
import type { ConsoleServer, OAuthClientAdmin } from './handle.js';
import { pageAnswer, type RouteKit, type State } from './route-kit.js';
import {
  deliveryApi,
  destinationApi,
  oauthClientRoutes,
  searchIndexRoutes,
  trendsAuditLiveApi,
} from './routes-api.js';
import { deliveryPages, destinationPages, trendsAndAuditPages } from './routes-pages.js';
import { SearchIndexes } from './search-index.js';
import { SearchIndexBuilds } from './search-index-build.js';
import type { ConsoleStore } from './store.js';
import { TrendStore } from './trends.js';

export type { ConsoleServer, OAuthClientAdmin } from './handle.js';
export type { OidcSetting } from './gate.js';
export { API_INDEX } from './routes-api.js';

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

/** The app: the gate's three steps, then each route group on one router. */
export function createConsoleApp(o: ConsoleAppOptions): { app: Koa<State>; live: LiveFeed } {
  const logger = o.logger ?? silentLogger;
  const brand = o.brand ?? 'svc';
  const { store, actions, auth } = o;
  const live = new LiveFeed(store, logger, o.liveEveryMs);
  const app = new Koa<State>();
  const router = new Router<State>();
  const gate = { auth, brand, logger, oidc: o.oidc ?? null, statics: STATIC };
  app.use(errorAnswers(gate));
  app.use(publicPart(gate));
  app.use(sessionGate(gate));

  const searchIndexes = new SearchIndexes(store.pool, store.schema);
  const kit: RouteKit = {
    store,
    actions,
    trends: new TrendStore(store.pool, store.schema),
    searchIndexes,
    searchIndexBuilds: new SearchIndexBuilds(searchIndexes, store.pool, store.schema),
    page: pageAnswer(brand, !!o.oauthClients),
  };
  deliveryPages(router, kit);
  destinationPages(router, kit);
  trendsAndAuditPages(router, kit);
  searchIndexRoutes(router, kit);
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
  deliveryApi(router, kit);
  if (o.oauthClients) oauthClientRoutes(router, kit, o.oauthClients);
  destinationApi(router, kit);
  trendsAuditLiveApi(router, kit, live);

  app.use(router.routes());
  app.use(router.allowedMethods());
  return { app, live };
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
