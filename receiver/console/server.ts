/**
 * The sidecar's operator console (`svc receiver --console-listen HOST:PORT`): refusals
 * grouped by code and sender, events, senders' keys, queue backlog; a JSON twin of each
 * under /api/. Same rules as the seller's console: a token sign-in (no anonymous access),
 * CSRF on every POST, the strict CSP, every value escaped, rate-limited sign-in. Its one
 * action, Re-publish, hands an accepted event to the app again (published-log.ts); nothing
 * here changes the receiver's verification or deduplication state.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import type { ConsoleAuth } from '../../shared/console/auth.js';
import { silentLogger, type Logger } from '../../shared/infra/logger.js';
import { errorAnswers, publicPart, sessionGate, type State } from './gate.js';
import type { SenderView, Totals } from './pages.js';
import type { PublishedLog } from './published-log.js';
import { apiRoutes, pageRoutes, publishedRoutes } from './routes.js';
import type { ReceiverConsoleStore } from './store.js';

export interface ReceiverConsoleOptions {
  store: ReceiverConsoleStore;
  auth: ConsoleAuth;
  senders: () => SenderView[];
  totals: () => Promise<Totals>;
  /** Publish outcomes and Re-publish (absent: those pages answer 404). */
  published?: PublishedLog | null;
  logger?: Logger;
}

/** The app: the gate (gate.ts), then each route group (routes.ts). */
export function createReceiverConsoleApp(o: ReceiverConsoleOptions): Koa<State> {
  const app = new Koa<State>();
  const router = new Router<State>();
  app.use(errorAnswers(o.logger ?? silentLogger));
  app.use(publicPart(o.auth));
  app.use(sessionGate(o.auth));
  const deps = { ...o, published: o.published ?? null };
  pageRoutes(router, deps);
  apiRoutes(router, deps);
  if (o.published) publishedRoutes(router, o.published);
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
