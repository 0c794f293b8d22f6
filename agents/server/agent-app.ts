/**
 * One agent's HTTP origin as a Koa app: `/mcp` (MCP Streamable HTTP), `/a2a` (A2A
 * JSON-RPC, both versions), `/.well-known/agent-card.json` (also under `/a2a`), the seller's key documents
 * (`/.well-known/jwks.json`, `/.well-known/brand.json`) when a key router is given, and
 * per kind: the registry endpoint (sales), served previews (creative). Extra routers
 * (OAuth) are mounted by the caller. Every refusal answers with the spec's error shape
 * and status; unknown routes 404 and faults 500 in the same shape, never an HTML page.
 */
import Koa, { type Middleware } from 'koa';
import Router from '@koa/router';
import { TaskError } from '../../shared/errors/task-errors.js';
import type { BrandProfile } from '../../shared/brand.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { AgentKind } from '../auth/principal.js';
import { errorResponse, plainErrorBody, internalError } from '../runtime/errors.js';
import type { AgentsCore } from '../service.js';
import { a2aMiddleware } from '../transport/a2a.js';
import { agentCardMiddleware } from '../transport/agent-card.js';
import { protectedResourceMetadataUrl } from '../transport/auth-challenge.js';
import { readJsonBody } from '../transport/body.js';
import { mcpMiddleware } from '../transport/mcp.js';
import type { KeysRouter } from '../../sender/index.js';

export interface AgentAppOptions {
  agent: AgentKind;
  core: AgentsCore;
  profile: BrandProfile;
  /** The agent's public origin (default: `core.settings.urls[agent]`). */
  baseUrl?: string;
  /** `/.well-known/jwks.json` and `/.well-known/brand.json` (sender/keys keysRouter). */
  keysRouter?: KeysRouter;
  /** Further middleware mounted before the agent routes (e.g. the OAuth server). */
  extra?: Middleware[];
  /**
   * The origin serves RFC 9728 protected-resource metadata (the OAuth server is mounted):
   * auth challenges then name it in `resource_metadata`.
   */
  oauth?: boolean;
  logger?: Logger;
}

export function agentDisplayName(profile: BrandProfile, agent: AgentKind): string {
  return `${profile.brand} ${agent} agent`;
}

export function createAgentApp(o: AgentAppOptions): Koa {
  const { agent, core, profile } = o;
  const baseUrl = o.baseUrl ?? core.settings.urls[agent];
  const name = agentDisplayName(profile, agent);
  const brand = profile.brand;
  const errorBody = (code: string, message: string) => plainErrorBody(brand, code, message);
  const endpoint = (path: '/mcp' | '/a2a') => new URL(path, baseUrl).toString();
  const resourceMetadata = (path: '/mcp' | '/a2a') =>
    o.oauth ? { resourceMetadata: protectedResourceMetadataUrl(endpoint(path)) } : {};
  const app = new Koa();
  app.proxy = false;
  app.silent = true;

  app.use(errorMiddleware(brand, o.logger ?? core.dispatcher.logger));
  for (const m of o.extra ?? []) app.use(m);

  const router = new Router();
  const mcp = mcpMiddleware({
    agent,
    dispatcher: core.dispatcher,
    serverName: `${profile.brand}-${agent}-agent`,
    endpointUrl: endpoint('/mcp'),
    ...resourceMetadata('/mcp'),
    ...(o.logger ? { logger: o.logger } : {}),
  });
  router.all('/mcp', mcp);
  router.all(
    '/a2a',
    a2aMiddleware({
      agent,
      dispatcher: core.dispatcher,
      baseUrl,
      name,
      ...resourceMetadata('/a2a'),
      ...(o.logger ? { logger: o.logger } : {}),
    }),
  );
  const card = agentCardMiddleware({ agent, dispatcher: core.dispatcher, baseUrl, name });
  router.get('/.well-known/agent-card.json', card);
  // The card also relative to the endpoint it names (the layout of an A2A app mounted at
  // /a2a, as @a2a-js/sdk mounts one): a buyer handed the card's `url` discovers the card
  // from it (`<url>/.well-known/agent-card.json`), as the AdCP SDK's A2A client does.
  router.get('/a2a/.well-known/agent-card.json', card);

  if (agent === 'sales') addRegistryRoute(router, core, errorBody);
  if (agent === 'creative') addPreviewRoute(router, core, errorBody);
  if (o.keysRouter) app.use(o.keysRouter.routes());
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

type ErrorBody = (code: string, message: string) => unknown;

/** TaskErrors in the spec's shape and status; other faults logged and answered 500 alike. */
function errorMiddleware(brand: string, logger: Logger | undefined): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined && ctx.respond !== false) {
        ctx.status = 404;
        ctx.body = plainErrorBody(brand, 'NOT_FOUND', `no route ${ctx.method} ${ctx.path}`);
      }
    } catch (err) {
      if (err instanceof TaskError) {
        const r = errorResponse(err, { brand });
        ctx.status = r.status;
        ctx.body = r.body;
        return;
      }
      const fault = internalError(err, logger, { path: ctx.path });
      if (ctx.headerSent || ctx.respond === false) return;
      const r = errorResponse(fault, { brand });
      ctx.status = r.status;
      ctx.body = r.body;
    }
  };
}

/** The sales agent's registry endpoint: product authorization against its publishers. */
function addRegistryRoute(router: Router, core: AgentsCore, errorBody: ErrorBody): void {
  router.post('/api/registry/validate/product-authorization', async (ctx) => {
    const read = await readJsonBody(ctx.req);
    if (!read.ok) {
      ctx.status = read.status;
      ctx.body = errorBody(
        read.status === 400 ? 'VALIDATION_ERROR' : 'INVALID_REQUEST',
        read.message,
      );
      return;
    }
    ctx.body = core.validateProductAuthorization(read.value);
  });
}

/** The creative agent's served previews, until they expire. */
function addPreviewRoute(router: Router, core: AgentsCore, errorBody: ErrorBody): void {
  const previewPath = new URL(core.settings.previewBaseUrl).pathname.replace(/\/$/, '');
  router.get(`${previewPath}/:id`, async (ctx) => {
    const preview = await core.getPreview(ctx.params.id ?? '');
    if (!preview) {
      ctx.status = 404;
      ctx.body = errorBody('CREATIVE_NOT_FOUND', 'no such preview, or it has expired');
      return;
    }
    ctx.set('Expires', new Date(preview.expires_at).toUTCString());
    ctx.set(
      'Content-Security-Policy',
      "default-src 'none'; img-src * data:; style-src 'unsafe-inline'; media-src *",
    );
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = preview.html;
  });
}
