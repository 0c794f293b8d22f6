/**
 * The sidecar console's routes, one function per group: the pages (overview, events,
 * senders, sign-out), the JSON twin of each under /api/, and the published events with
 * their Re-publish action (page form, JSON API; the CLI calls the API) and its audit.
 * Read-only but for Re-publish, which hands an accepted event to the app again.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import { SESSION_COOKIE, type ConsoleAuth } from '../../shared/console/auth.js';
import { readBody } from '../../shared/console/body.js';
import { ConsoleInputFailure } from './errors.js';
import {
  eventsBody,
  layout,
  overviewBody,
  sendersBody,
  type SenderView,
  type Totals,
} from './pages.js';
import { auditBody, publishedBody } from './pages-published.js';
import type { PublishedFilter, PublishedLog } from './published-log.js';
import type { EventFilter, ReceiverConsoleStore } from './store.js';
import type { State } from './gate.js';

export interface RouteDeps {
  store: ReceiverConsoleStore;
  auth: ConsoleAuth;
  senders: () => SenderView[];
  totals: () => Promise<Totals>;
  published: PublishedLog | null;
}

type Ctx = Koa.ParameterizedContext<State>;

function page(ctx: Ctx, title: string, nav: string, body: Parameters<typeof layout>[4]): void {
  const s = ctx.state.session!;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = layout(title, nav, s.operator, s.csrf, body).value;
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

/** The Published list's filter: each malformed value a 400 naming its field. */
export function publishedFilterOf(q: Record<string, unknown>): PublishedFilter {
  const f: PublishedFilter = {};
  const text = (k: 'sender' | 'key') => {
    const v = q[k];
    if (v === undefined || v === '') return;
    if (typeof v !== 'string' || v.length > 300) {
      throw new ConsoleInputFailure(k, 'one value of at most 300 characters');
    }
    f[k] = v.trim();
  };
  text('sender');
  text('key');
  const o = q.outcome;
  if (o !== undefined && o !== '') {
    if (o !== 'published' && o !== 'failed') {
      throw new ConsoleInputFailure('outcome', 'published or failed');
    }
    f.outcome = o;
  }
  const b = q.before;
  if (b !== undefined && b !== '') {
    if (typeof b !== 'string' || !/^\d{1,18}$/.test(b)) {
      throw new ConsoleInputFailure('before', 'the id of a listed event');
    }
    f.before = b;
  }
  return f;
}

/** Overview, events, senders, sign-out. */
export function pageRoutes(router: Router<State>, d: RouteDeps): void {
  router.get('/', async (ctx) => {
    const [groups, totals, answers] = await Promise.all([
      d.store.rejections(),
      d.totals(),
      d.store.answersByCode(),
    ]);
    page(ctx, 'Overview', '/', overviewBody(groups, totals, answers));
  });
  router.get('/events', async (ctx) => {
    const f = filterOf(ctx.query);
    page(ctx, 'Events', '/events', eventsBody(f, await d.store.events(f)));
  });
  router.get('/senders', (ctx) => page(ctx, 'Senders', '/senders', sendersBody(d.senders())));
  router.post('/logout', (ctx) => {
    d.auth.logout(ctx.state.sessionId);
    ctx.cookies.set(SESSION_COOKIE, '', {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge: 0,
    });
    ctx.redirect('/login');
  });
}

/** The JSON twins of the pages. */
export function apiRoutes(router: Router<State>, d: RouteDeps): void {
  router.get('/api/rejections', async (ctx) => {
    ctx.body = { items: await d.store.rejections(), totals: await d.totals() };
  });
  router.get('/api/answers', async (ctx) => {
    ctx.body = await d.store.answersByCode();
  });
  router.get('/api/events', async (ctx) => {
    ctx.body = { items: await d.store.events(filterOf(ctx.query)) };
  });
  router.get('/api/senders', (ctx) => {
    ctx.body = { items: d.senders() };
  });
}

/** Published events, Re-publish (page form and JSON API), and the audit of it. */
export function publishedRoutes(router: Router<State>, published: PublishedLog): void {
  router.get('/published', async (ctx) => {
    const f = publishedFilterOf(ctx.query);
    const rows = await published.list(f);
    page(
      ctx,
      'Published',
      '/published',
      publishedBody(f, rows, ctx.state.session!.csrf, ctx.query),
    );
  });
  router.post('/published/:id/republish', async (ctx) => {
    const r = await published.republish(ctx.params.id!, ctx.state.operator);
    const q = new URLSearchParams({ republished: r.id, outcome: r.outcome });
    if (r.error) q.set('error', r.error.slice(0, 200));
    ctx.redirect(`/published?${q.toString()}`);
  });
  router.get('/audit', async (ctx) => {
    page(ctx, 'Audit', '/audit', auditBody(await published.audit(100)));
  });
  router.get('/api/published', async (ctx) => {
    ctx.body = { items: await published.list(publishedFilterOf(ctx.query)) };
  });
  router.post('/api/published/:id/republish', async (ctx) => {
    if (!ctx.state.session) await readBody(ctx);
    const via = ctx.get('x-svc-via') === 'cli' ? 'cli' : ctx.state.operator.via;
    const r = await published.republish(ctx.params.id!, { ...ctx.state.operator, via });
    // The action ran either way; a failed hand-over is the app's answer, said as 502.
    ctx.status = r.outcome === 'published' ? 200 : 502;
    ctx.body = r;
  });
  router.get('/api/audit', async (ctx) => {
    ctx.body = { items: await published.audit(100) };
  });
}
