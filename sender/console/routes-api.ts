/**
 * The seller console's JSON API (README.md, "JSON API"): the same reads and actions as the
 * pages, one function per group, and the OAuth clients' page and API (issue 21). A session
 * caller's POST has passed the gate's CSRF check; a bearer caller's body is read here.
 */
import type Router from '@koa/router';
import { ConsoleActionError } from './actions.js';
import type { LiveFeed } from './live.js';
import { parseLimit } from './filters.js';
import { oauthClientsBody, type ClientView } from './pages/oauth-clients.js';
import {
  body,
  csrfOf,
  detail,
  form,
  listFrom,
  originInput,
  recoverInput,
  type OAuthClientAdmin,
  type RouteKit,
  type State,
} from './route-kit.js';
import { searchIndexesBody } from './pages/search-indexes.js';
import { searchIndexKinds } from './search-index.js';
import type { SearchIndexBuild } from './search-index-build.js';
import { parseRange } from './trends.js';

/** Deliveries: list, one, redeliver. */
export function deliveryApi(router: Router<State>, { store, actions }: RouteKit): void {
  router.get('/api', (ctx) => {
    ctx.body = API_INDEX;
  });
  router.get('/api/deliveries', async (ctx) => {
    const { filter, cursor, limit } = listFrom(ctx);
    ctx.body = await store.list(filter, cursor, limit);
  });
  router.get('/api/deliveries/:id', async (ctx) => {
    ctx.body = await detail(store, ctx);
  });
  router.post('/api/deliveries/:id/redeliver', async (ctx) => {
    await body(ctx);
    ctx.status = 202;
    ctx.body = await actions.redeliver(ctx.params.id!, ctx.state.operator);
  });
}

/** Destinations: health, pause, resume, test event, the bulk redeliver and its preview. */
export function destinationApi(router: Router<State>, { store, actions }: RouteKit): void {
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
}

/** Trends, the audit log, and the live feed of attempts (server-sent events). */
export function trendsAuditLiveApi(
  router: Router<State>,
  { store, trends }: RouteKit,
  live: LiveFeed,
): void {
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
}

/**
 * The search indexes (search-index.ts): the page with its status and forms, and the API.
 * The page's enable runs in the background (minutes on a large outbox) and the page,
 * reloading itself meanwhile, shows its progress (search-index-build.ts); the API's
 * answers once every partition's index is built, and its GET reports a build under way.
 */
export function searchIndexRoutes(
  router: Router<State>,
  { searchIndexes, searchIndexBuilds: builds, page }: RouteKit,
): void {
  router.get('/search-indexes', async (ctx) => {
    const [status, build] = await Promise.all([searchIndexes.status(), builds.state()]);
    page(
      ctx,
      {
        title: 'Search indexes',
        nav: null,
        flash: ctx.query.done === 'disable' ? { kind: 'ok', text: 'Dropped.' } : buildFlash(build),
        ...(build?.running ? { refreshSeconds: 2 } : {}),
      },
      searchIndexesBody(status, csrfOf(ctx), build),
    );
  });
  router.get('/api/search-indexes', async (ctx) => {
    const [items, build] = await Promise.all([searchIndexes.status(), builds.state()]);
    ctx.body = { items, build };
  });
  router.post('/search-indexes/enable', (ctx) => {
    builds.start(searchIndexKinds(form(ctx)), ctx.state.operator);
    ctx.redirect('/search-indexes');
  });
  router.post('/api/search-indexes/enable', async (ctx) => {
    ctx.body = await builds.run(searchIndexKinds(await body(ctx)), ctx.state.operator);
  });
  router.post('/search-indexes/disable', async (ctx) => {
    await searchIndexes.disable(searchIndexKinds(form(ctx)), ctx.state.operator);
    ctx.redirect('/search-indexes?done=disable');
  });
  router.post('/api/search-indexes/disable', async (ctx) => {
    ctx.body = await searchIndexes.disable(searchIndexKinds(await body(ctx)), ctx.state.operator);
  });
}

/** The last build's outcome, once finished: built, or why not. */
function buildFlash(b: SearchIndexBuild | null): { kind: 'ok' | 'error'; text: string } | null {
  if (!b || b.running) return null;
  const what = `Last enable (${b.kinds.join(', ')}, by ${b.by})`;
  if (b.error)
    return { kind: 'error', text: `${what}: not built (${b.error.code}): ${b.error.message}` };
  const n = Object.values(b.built ?? {}).reduce<number>((a, v) => a + Number(v), 0);
  return { kind: 'ok', text: `${what}: built, ${n} partition indexes new.` };
}

/** The seller's OAuth client bindings (issue 21): the page with its forms, and the API. */
export function oauthClientRoutes(
  router: Router<State>,
  { page }: RouteKit,
  clients: OAuthClientAdmin,
): void {
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
      oauthClientsBody((await clients.list()) as ClientView[], csrfOf(ctx)),
    );
  });
  router.get('/api/oauth-clients', async (ctx) => {
    ctx.body = { items: await clients.list() };
  });
  for (const verb of ['bind', 'unbind'] as const) {
    router.post(`/oauth-clients/${verb}`, async (ctx) => {
      await change(verb, form(ctx), ctx.state.operator.name);
      ctx.redirect(`/oauth-clients?done=${verb}`);
    });
    router.post(`/api/oauth-clients/${verb}`, async (ctx) => {
      ctx.body = await change(verb, await body(ctx), ctx.state.operator.name);
    });
  }
}

export const API_INDEX = {
  endpoints: [
    {
      method: 'GET',
      path: '/api/deliveries',
      query: 'status origin media_buy principal task type key payload from to cursor limit',
    },
    {
      method: 'GET',
      path: '/api/deliveries/{id}',
      note: 'attemptList[].exchange: request and response headers, timing',
    },
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
    {
      method: 'GET',
      path: '/api/search-indexes',
      note: 'the contains and payload search indexes: on, partial or off, and whether searches scan; build: the enable under way (its partition, n of N, PostgreSQL phase) or the last one',
    },
    {
      method: 'POST',
      path: '/api/search-indexes/enable',
      body: '{"contains": true, "payload": true} (none: both)',
      note: 'builds them partition by partition (answers when done; 409 SEARCH_INDEX_BUILDING while another enable runs); each costs every event insert (README)',
    },
    {
      method: 'POST',
      path: '/api/search-indexes/disable',
      body: '{"contains": true, "payload": true} (none: both)',
    },
    { method: 'GET', path: '/api/audit', query: 'limit' },
    {
      method: 'GET',
      path: '/api/events',
      note: 'server-sent events: "attempt" per attempt record',
    },
  ],
  auth: 'a session cookie from /login (POSTs then need X-CSRF-Token), or Authorization: Bearer <console token>',
};
