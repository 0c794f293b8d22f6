/**
 * The seller console's pages and their forms (README.md, the page table), one function per
 * group: deliveries (list, one delivery, its live fragments, Redeliver), destinations
 * (health, Pause/Resume, Send test event, the bulk redeliver's preview and run), trends
 * and audit. Each form's action is the same `ConsoleActions` call as the JSON API's
 * (routes-api.ts) and the CLI's; the gate has checked the session and its CSRF token.
 */
import type Router from '@koa/router';
import { query } from '../../shared/console/html.js';
import { auditBody } from './pages/audit.js';
import { deliveriesBody, deliveryRow } from './pages/deliveries.js';
import { deliveryBody, deliveryLive } from './pages/delivery.js';
import { destinationsBody, recoverPreviewBody } from './pages/destinations.js';
import { trendsBody } from './pages/trends.js';
import {
  csrfOf,
  detail,
  form,
  listFrom,
  originInput,
  recoverInput,
  redeliveredOf,
  type RouteKit,
  type State,
} from './route-kit.js';
import { parseRange } from './trends.js';

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

/** The list, one delivery (with its attempts in full), its live fragments, Redeliver. */
export function deliveryPages(router: Router<State>, { store, actions, page }: RouteKit): void {
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
    const d = await detail(store, ctx);
    page(
      ctx,
      { title: `Delivery ${d.id}`, nav: 'deliveries', live: 'delivery' },
      deliveryBody(d, csrfOf(ctx), redeliveredOf(ctx)),
    );
  });
  router.get('/deliveries/:id/live', async (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = deliveryLive(await detail(store, ctx), csrfOf(ctx), redeliveredOf(ctx)).value;
  });
  router.get('/deliveries/:id/row', async (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = deliveryRow(await detail(store, ctx)).value;
  });
  router.post('/deliveries/:id/redeliver', async (ctx) => {
    const r = await actions.redeliver(ctx.params.id!, ctx.state.operator);
    ctx.redirect(`/deliveries/${r.id}?redelivered=${r.attempt}`);
  });
}

/** Destinations' health and actions, and the bulk redeliver's preview, confirmation, run. */
export function destinationPages(router: Router<State>, { store, actions, page }: RouteKit): void {
  router.get('/destinations', async (ctx) => {
    page(
      ctx,
      { title: 'Destinations', nav: 'destinations', flash: destinationsFlash(ctx.query) },
      destinationsBody(await store.destinations(), csrfOf(ctx)),
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
      recoverPreviewBody(preview, csrfOf(ctx)),
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
}

/** Trends (charts over their tables) and the audit log. */
export function trendsAndAuditPages(
  router: Router<State>,
  { store, trends, page }: RouteKit,
): void {
  router.get('/trends', async (ctx) => {
    const t = await trends.trends(parseRange(ctx.query.range));
    page(ctx, { title: 'Trends', nav: 'trends', charts: true }, trendsBody(t));
  });
  router.get('/audit', async (ctx) => {
    page(ctx, { title: 'Audit', nav: 'audit' }, auditBody(await store.audit(100)));
  });
}
