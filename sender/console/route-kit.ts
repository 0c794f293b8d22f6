/**
 * What the seller console's route groups share (server.ts assembles them): the request
 * state the gate sets (session, operator, the browser POST's parsed form), and the helpers
 * every group uses to read input and answer with a page. Input errors are the console's
 * 400 `INVALID_REQUEST` (filters.ts), answered by the error middleware in the caller's
 * language.
 */
import type { RouterContext } from '@koa/router';
import type { Session } from '../../shared/console/auth.js';
import { readBody } from '../../shared/console/body.js';
import type { Html } from '../../shared/console/html.js';
import { ConsoleActionError, type ConsoleActions, type Operator } from './actions.js';
import {
  ConsoleInputError,
  decodeCursor,
  parseFilter,
  parseLimit,
  parseOrigin,
  parseTime,
} from './filters.js';
import { layout, type PageContext } from './pages/layout.js';
import type { SearchIndexes } from './search-index.js';
import type { SearchIndexBuilds } from './search-index-build.js';
import type { ConsoleStore, DeliveryDetail } from './store.js';
import type { TrendStore } from './trends.js';
export type { OAuthClientAdmin } from './handle.js';

export interface State {
  session: Session | null;
  sessionId: string | undefined;
  operator: Operator;
  api: boolean;
  /** The parsed body of a browser session's POST (read for its CSRF token). */
  form?: Record<string, unknown>;
}

export type Ctx = RouterContext<State>;

/** What a route group is handed. */
export interface RouteKit {
  store: ConsoleStore;
  actions: ConsoleActions;
  trends: TrendStore;
  /** The operator's search indexes (search-index.ts). */
  searchIndexes: SearchIndexes;
  /** Their enable as the console runs it: one at a time, its progress kept (search-index-build.ts). */
  searchIndexBuilds: SearchIndexBuilds;
  /** Answers with a page of the console's layout. */
  page(ctx: Ctx, p: Partial<PageContext> & { title: string }, body: Html | string): void;
}

/** The page answer of `createConsoleApp` (brand, operator, CSRF token, nav). */
export function pageAnswer(brand: string, oauthClients: boolean): RouteKit['page'] {
  return (ctx, p, body) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = layout(
      {
        operator: ctx.state.operator.name,
        csrf: ctx.state.session?.csrf ?? '',
        nav: null,
        brand,
        oauthClients,
        ...p,
      },
      body,
    ).value;
  };
}

/** The session's CSRF token ('' for bearer calls), for the forms a page carries. */
export function csrfOf(ctx: Ctx): string {
  return ctx.state.session?.csrf ?? '';
}

/** A browser POST's form (read by the gate for its CSRF token). */
export function form(ctx: Ctx): Record<string, unknown> {
  return ctx.state.form ?? {};
}

/** A POST's body: the gate's parsed form for a session, else read now (bearer calls). */
export async function body(ctx: Ctx): Promise<Record<string, unknown>> {
  return ctx.state.session ? form(ctx) : readBody(ctx);
}

/** The list's filter, cursor and page size from the query. */
export function listFrom(ctx: Ctx) {
  const filter = parseFilter(ctx.query);
  const c = ctx.query.cursor;
  const cursor = typeof c === 'string' && c !== '' ? decodeCursor(c) : null;
  return { filter, cursor, limit: parseLimit(ctx.query.limit) };
}

/** `?redelivered=N`: the attempt a Redeliver started, whose fate the page follows. */
export function redeliveredOf(ctx: Ctx): number | null {
  const v = ctx.query.redelivered;
  return typeof v === 'string' && /^\d{1,6}$/.test(v) ? Number(v) : null;
}

/** The delivery of `:id`, or 404 `NOT_FOUND`. */
export async function detail(store: ConsoleStore, ctx: Ctx): Promise<DeliveryDetail> {
  const d = await store.get(ctx.params.id!);
  if (!d) throw new ConsoleActionError(404, 'NOT_FOUND', `no delivery ${ctx.params.id}`);
  return d;
}

/** An action's destination: an origin or `host:port`, never a search pattern. */
export function actionOrigin(v: string): string {
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

/** A bulk redeliver's input: one origin and a time. */
export function recoverInput(b: Record<string, unknown>) {
  if (typeof b.origin !== 'string' || b.origin === '') {
    throw new ConsoleInputError('origin', 'an origin such as https://buyer.example');
  }
  if (typeof b.since !== 'string' || b.since === '') {
    throw new ConsoleInputError('since', 'an ISO 8601 time, e.g. 2026-11-23T12:00:00Z');
  }
  return { origin: actionOrigin(b.origin), since: parseTime('since', b.since) };
}

/** A destination action's input: one origin. */
export function originInput(b: Record<string, unknown>): string {
  if (typeof b.origin !== 'string' || b.origin.trim() === '') {
    throw new ConsoleInputError('origin', 'an origin such as https://buyer.example');
  }
  return actionOrigin(b.origin);
}

/** A path of this console to return to after signing in (anything else: the list). */
export function localPath(v: unknown): string {
  return typeof v === 'string' && /^\/(?![/\\])[\w\-./?=&%]*$/.test(v) ? v : '/deliveries';
}
