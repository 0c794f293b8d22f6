/**
 * Key publication (supplement §2.6): `/.well-known/jwks.json` and the operator's
 * `/.well-known/brand.json` with an `agents[]` entry per agent pointing at the JWKS.
 * A small router the agents mount. Its public type is structural (shared/http/koa-like.ts),
 * so the package's declarations carry no Koa types.
 */
import Router from '@koa/router';
import type { KoaMiddlewareLike } from '../../shared/http/koa-like.js';
import type { BrandProfile } from '../../shared/brand.js';
import type { KeySet } from './key-set.js';

export interface BrandAgent {
  type:
    'brand' | 'rights' | 'measurement' | 'governance' | 'creative' | 'sales' | 'buying' | 'signals';
  /** The agent's URL (https), unique within agents[]. */
  url: string;
  /** `^[a-z0-9_]+$`, at most 100 characters. */
  id: string;
  /** Default: `/.well-known/jwks.json` at the origin of `url`. */
  jwks_uri?: string;
  description?: string;
}

export function brandJson(agents: BrandAgent[]): { agents: BrandAgent[] } {
  return {
    agents: agents.map((a) => ({
      ...a,
      jwks_uri: a.jwks_uri ?? new URL('/.well-known/jwks.json', a.url).toString(),
    })),
  };
}

/** What `app.use()` mounts: `app.use(keysRouter(...).routes())`. */
export interface KeysRouter {
  routes(): KoaMiddlewareLike;
}

export function keysRouter(options: {
  keys: KeySet;
  profile: BrandProfile;
  agents?: BrandAgent[];
  /** Cache-Control max-age of both documents; default 3600. */
  maxAgeSeconds?: number;
}): KeysRouter {
  const router = new Router();
  const cache = `public, max-age=${options.maxAgeSeconds ?? 3600}`;
  router.get('/.well-known/jwks.json', (ctx) => {
    ctx.set('Cache-Control', cache);
    ctx.type = 'application/json';
    ctx.body = options.keys.jwks(options.profile);
  });
  router.get('/.well-known/brand.json', (ctx) => {
    ctx.set('Cache-Control', cache);
    ctx.type = 'application/json';
    ctx.body = brandJson(options.agents ?? []);
  });
  // Koa's router middleware takes Koa's full context, of which KoaContextLike is a part:
  // sound wherever it is mounted with app.use(), which is the only way to call it.
  return { routes: () => router.routes() as unknown as KoaMiddlewareLike };
}
