/**
 * OAuth 2.0 authorisation server per agent origin (oidc-provider on Koa), mounted at
 * `/oauth`: dynamic client registration (`POST /oauth/register`, RFC 7591), the grants
 * it names (`authorization_code` with PKCE, `refresh_token`) and `client_credentials`,
 * discovery at `/oauth/.well-known/openid-configuration` (and the RFC 8414 name at the
 * origin root), and the agent's RFC 9728 protected-resource metadata. Access tokens are
 * JWTs (ES256, RFC 9068) with `sub`, `iat`, `exp`, `aud` = the agent's URL and `scope` =
 * `<brand>:products <brand>:media_buys <brand>:creatives` (those requested), which the
 * agents' Authenticator maps to permissions. A token issued at one agent carries that
 * agent's audience and fails at another.
 *
 * Who may do what (issue 21): registration needs the initial access token unless the
 * operator opened it (`registration.open`), is rate limited per address, and refuses
 * metadata that would make the library fetch client-chosen URLs (registration-gate.ts).
 * A registered client acts as nobody until the operator binds it to a principal
 * (bindings.ts): client_credentials is refused for an unbound client, and a bound one is
 * granted only the scopes its principal's permissions cover.
 *
 * Interactive logins (authorization_code) go through dev-login.ts: off unless the operator
 * turns on the development sign-in, and then loopback only and proved by the principal's
 * API key or a one-time code (this demo seller has no user directory). Registered clients, grants and refresh tokens are kept in
 * PostgreSQL; the token signing key too, so tokens outlive a restart.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createLocalJWKSet, exportJWK, generateKeyPair, type JWK } from 'jose';
import type { Middleware } from 'koa';
import Provider, { errors as oidcErrors, type Configuration } from 'oidc-provider';
import type { BrandProfile } from '../../shared/brand.js';
import type { Logger } from '../../shared/infra/logger.js';
import type { Pool } from '../../shared/infra/pg.js';
import { assertSchemaName } from '../../shared/infra/pg.js';
import type { AgentAuthKeys } from '../auth/authenticate.js';
import { AGENT_KINDS, type AgentKind, type Permissions } from '../auth/principal.js';
import { AGENT_ENDPOINT_PATHS, oauthResources } from '../auth/resources.js';
import { boundPrincipal, markClientUsed, migrateOAuthBindings } from './bindings.js';
import { migrateOAuthStore, pgAdapterFactory } from './pg-adapter.js';
import { serveInteraction, type DevLogin } from './dev-login.js';
import {
  AddressRateLimiter,
  CLIENT_AUTH_METHODS,
  DEFAULT_MAX_REGISTRATION_BYTES,
  DEFAULT_REGISTRATIONS_PER_MINUTE,
  METADATA_GUARD_PROPERTY,
  refuseOutboundRequests,
  validateClientMetadata,
  type RegistrationLimits,
} from './registration-gate.js';

export const OAUTH_MOUNT = '/oauth';

export interface OAuthServerOptions {
  pool: Pool;
  /** Schema of the OAuth tables (shared with the agents' schema by default). */
  schema: string;
  profile: BrandProfile;
  urls: Record<AgentKind, string>;
  /** Access token lifetime, seconds (default 3600). */
  accessTokenTtlSeconds?: number;
  /** Where the library's own warnings go (instead of the console). */
  logger?: Logger;
  /**
   * The development sign-in (SVC_OAUTH_DEV_LOGIN=1): null or absent, the sign-in pages
   * answer 403 naming the setting, so authorization_code cannot complete.
   */
  devLogin?: DevLogin | null;
  /**
   * Dynamic registration. Default: an initial access token is required (this one, else the
   * one kept in the database, made on first start); `open: true` (SVC_OAUTH_OPEN_REGISTRATION)
   * lets anyone register. Either way a new client does nothing until bound.
   */
  registration?: {
    open?: boolean;
    initialAccessToken?: string;
    limits?: RegistrationLimits;
    /** Seconds an unbound, unused client is kept (default a day). */
    unboundClientTtlSeconds?: number;
  };
}

export interface OAuthServer {
  issuer(agent: AgentKind): string;
  /** The resource scopes: `<brand>:products`, `<brand>:media_buys`, `<brand>:creatives`. */
  scopes: string[];
  providers: Record<AgentKind, Provider>;
  /** Koa middleware serving `/oauth/*` of this agent's origin. */
  middleware(agent: AgentKind): Middleware;
  /** Verification keys for the agents' Authenticator. */
  authKeys(): Partial<Record<AgentKind, Partial<AgentAuthKeys>>>;
  /** Whether the development sign-in page is served (authorization_code can complete). */
  devLogin: boolean;
  /** The token `POST /oauth/register` demands (as `Authorization: Bearer`), or null when open. */
  initialAccessToken: string | null;
}

/** The kept initial access token, made once (32 random bytes) unless one is configured. */
async function storedInitialAccessToken(pool: Pool, schema: string): Promise<string> {
  const s = assertSchemaName(schema);
  await pool.query(
    `INSERT INTO ${s}.oauth_keys (name, jwk) VALUES ('initial-access-token', $1)
     ON CONFLICT (name) DO NOTHING`,
    [{ token: `iat_${randomBytes(32).toString('base64url')}` }],
  );
  const { rows } = await pool.query<{ jwk: { token: string } }>(
    `SELECT jwk FROM ${s}.oauth_keys WHERE name = 'initial-access-token'`,
  );
  return rows[0]!.jwk.token;
}

/** The resource scopes a principal's permissions cover: one right on the resource is enough. */
function scopesCovered(permissions: Permissions, prefix: string): string[] {
  const out: string[] = [];
  if (permissions.products?.length) out.push(`${prefix}products`);
  if (permissions.media_buys?.length) out.push(`${prefix}media_buys`);
  if (permissions.creatives?.length) out.push(`${prefix}creatives`);
  return out;
}

function clientAddress(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? 'unknown';
}

async function signingJwk(pool: Pool, schema: string): Promise<JWK> {
  const s = assertSchemaName(schema);
  const { rows } = await pool.query<{ jwk: JWK }>(
    `SELECT jwk FROM ${s}.oauth_keys WHERE name = 'access-token-signing'`,
  );
  if (rows[0]) return rows[0].jwk;
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = {
    ...(await exportJWK(privateKey)),
    alg: 'ES256',
    use: 'sig',
    kid: randomBytes(8).toString('hex'),
  };
  await pool.query(
    `INSERT INTO ${s}.oauth_keys (name, jwk) VALUES ('access-token-signing', $1)
     ON CONFLICT (name) DO NOTHING`,
    [jwk],
  );
  return signingJwk(pool, schema);
}

/**
 * RFC 8414 authorization-server metadata of the issuer `<origin>/oauth`: the path-inserted
 * form (§3.1), the root form, and the issuer-appended form clients derive from the issuer
 * URL; all three answer what the OIDC discovery document says.
 */
const AS_METADATA_PATHS = new Set([
  '/.well-known/oauth-authorization-server',
  `/.well-known/oauth-authorization-server${OAUTH_MOUNT}`,
  `${OAUTH_MOUNT}/.well-known/oauth-authorization-server`,
]);

/** The resource path a protected-resource metadata URL names ('' = the origin), or null. */
function protectedResource(path: string): string | null {
  const base = '/.well-known/oauth-protected-resource';
  if (path === base || path === `${base}/`) return '';
  const rest = path.startsWith(`${base}/`) ? path.slice(base.length) : null;
  return rest !== null && (AGENT_ENDPOINT_PATHS as readonly string[]).includes(rest) ? rest : null;
}

export async function createOAuthServer(o: OAuthServerOptions): Promise<OAuthServer> {
  await migrateOAuthStore(o.pool, o.schema);
  await migrateOAuthBindings(o.pool, o.schema);
  const reg = o.registration ?? {};
  const initialAccessToken = reg.open
    ? null
    : (reg.initialAccessToken ?? (await storedInitialAccessToken(o.pool, o.schema)));
  const limiter = new AddressRateLimiter(
    reg.limits?.perAddress ?? DEFAULT_REGISTRATIONS_PER_MINUTE,
    reg.limits?.windowMs ?? 60_000,
    reg.limits?.now,
  );
  const maxBody = reg.limits?.maxBodyBytes ?? DEFAULT_MAX_REGISTRATION_BYTES;
  const privateJwk = await signingJwk(o.pool, o.schema);
  const { d: _d, ...publicJwk } = privateJwk;
  void _d;
  const jwks = createLocalJWKSet({ keys: [publicJwk] });
  const scopes = ['products', 'media_buys', 'creatives'].map((r) => `${o.profile.scopePrefix}${r}`);
  const cookieKeys = [randomBytes(32).toString('base64url')];
  const issuer = (agent: AgentKind) => `${o.urls[agent]}${OAUTH_MOUNT}`;

  const providers = {} as Record<AgentKind, Provider>;
  for (const agent of AGENT_KINDS) {
    const config = providerConfig(o, agent, { privateJwk, cookieKeys, scopes, initialAccessToken });
    providers[agent] = createProvider(o, agent, issuer(agent), config);
  }

  return {
    issuer,
    scopes,
    providers,
    middleware(agent) {
      const handle = throughLogger(o.logger, () => providers[agent].callback());
      return async (ctx, next) => {
        let path = ctx.path;
        const prm = protectedResource(path);
        if (prm !== null && ctx.method === 'GET') {
          // RFC 9728: where MCP and A2A clients find the server that issues this agent's
          // tokens; `/.well-known/oauth-protected-resource/mcp` describes `<origin>/mcp`.
          ctx.type = 'application/json';
          ctx.body = {
            resource: `${o.urls[agent]}${prm}`,
            authorization_servers: [issuer(agent)],
            scopes_supported: scopes,
            bearer_methods_supported: ['header'],
          };
          return;
        }
        if (AS_METADATA_PATHS.has(path)) {
          path = `${OAUTH_MOUNT}/.well-known/openid-configuration`;
        }
        if (path !== OAUTH_MOUNT && !path.startsWith(`${OAUTH_MOUNT}/`)) return next();
        const interaction = /^\/oauth\/interaction\/([A-Za-z0-9_-]{1,64})$/.exec(path);
        if (interaction && (ctx.method === 'GET' || ctx.method === 'POST')) {
          ctx.respond = false;
          await serveInteraction(
            providers[agent],
            agent,
            o.devLogin ?? null,
            ctx.req,
            ctx.res,
            path,
          );
          return;
        }
        if (ctx.method === 'POST' && path === `${OAUTH_MOUNT}/register`) {
          const refusal = registrationRefusal(ctx.req, limiter, maxBody);
          if (refusal) {
            ctx.status = refusal.status;
            if (refusal.retryAfter) ctx.set('Retry-After', String(refusal.retryAfter));
            ctx.set('Cache-Control', 'no-store');
            ctx.body = { error: refusal.error, error_description: refusal.description };
            return;
          }
        }
        const req = ctx.req as typeof ctx.req & { originalUrl?: string };
        const search = ctx.querystring ? `?${ctx.querystring}` : '';
        // As express mounts: the library derives its mount path from originalUrl - url.
        req.originalUrl = `${path}${search}`;
        req.url = `${path.slice(OAUTH_MOUNT.length) || '/'}${search}`;
        ctx.respond = false;
        await handle(req, ctx.res);
      };
    },
    authKeys() {
      const out: Partial<Record<AgentKind, Partial<AgentAuthKeys>>> = {};
      for (const agent of AGENT_KINDS) out[agent] = { jwks };
      return out;
    },
    initialAccessToken,
    devLogin: !!o.devLogin,
  };
}

type ResourceServerInfoFn = NonNullable<
  NonNullable<NonNullable<Configuration['features']>['resourceIndicators']>['getResourceServerInfo']
>;

/** The agent's provider: errors logged, and a client marked used at its first grant. */
function createProvider(
  o: OAuthServerOptions,
  agent: AgentKind,
  issuer: string,
  config: Configuration,
): Provider {
  const provider = throughLogger(o.logger, () => new Provider(issuer, config));
  provider.on('server_error', (_ctx, err) => o.logger?.error({ err }, 'OAuth server error'));
  provider.on('grant.success', (ctx) => {
    const clientId = ctx.oidc.client?.clientId;
    if (!clientId) return;
    markClientUsed(o.pool, o.schema, agent, clientId).catch((err: unknown) =>
      o.logger?.warn({ err, client_id: clientId }, 'could not mark the OAuth client used'),
    );
  });
  return provider;
}

/** What every agent's provider shares: the signing key, cookie keys, scopes, registration token. */
interface ProviderShared {
  privateJwk: Awaited<ReturnType<typeof signingJwk>>;
  cookieKeys: string[];
  scopes: string[];
  initialAccessToken: string | null;
}

/** One agent's oidc-provider configuration: its tables, routes, grants, PKCE, TTLs. */
function providerConfig(
  o: OAuthServerOptions,
  agent: AgentKind,
  shared: ProviderShared,
): Configuration {
  const { privateJwk, cookieKeys, scopes, initialAccessToken } = shared;
  const reg = o.registration ?? {};
  const resource = o.urls[agent];
  const resources = oauthResources(resource);
  return {
    adapter: pgAdapterFactory(o.pool, o.schema, agent, {
      ...(reg.unboundClientTtlSeconds !== undefined
        ? { unboundClientTtlSeconds: reg.unboundClientTtlSeconds }
        : {}),
    }),
    clientAuthMethods: [...CLIENT_AUTH_METHODS],
    extraClientMetadata: {
      properties: [METADATA_GUARD_PROPERTY],
      validator: validateClientMetadata as never,
    },
    httpOptions: refuseOutboundRequests,
    jwks: { keys: [privateJwk as never] },
    cookies: { keys: cookieKeys },
    scopes: ['openid', 'offline_access', ...scopes],
    claims: { openid: ['sub'] },
    routes: {
      registration: '/register',
      authorization: '/authorize',
      token: '/token',
      jwks: '/jwks',
      revocation: '/revoke',
      introspection: '/introspect',
    },
    pkce: { required: () => true },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      // The one signing key is ES256 (the library's default would be RS256).
      id_token_signed_response_alg: 'ES256',
    },
    features: {
      registration: {
        enabled: true,
        ...(initialAccessToken ? { initialAccessToken } : {}),
      },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: resourceServerInfo(o, agent, resources),
      },
    },
    interactions: { url: (_ctx, interaction) => `${OAUTH_MOUNT}/interaction/${interaction.uid}` },
    // A refresh token for every client allowed the grant (no OIDC offline_access dance).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    ttl: {
      AccessToken: o.accessTokenTtlSeconds ?? 3600,
      ClientCredentials: o.accessTokenTtlSeconds ?? 3600,
      AuthorizationCode: 600,
      RefreshToken: 30 * 86400,
      Grant: 30 * 86400,
      Interaction: 3600,
      Session: 86400,
    },
  };
}

/**
 * RFC 8707: tokens only for this agent's resources, and a client-credentials token only to a
 * client bound to a principal, with never more scope than that principal may use.
 */
function resourceServerInfo(
  o: OAuthServerOptions,
  agent: AgentKind,
  resources: string[],
): ResourceServerInfoFn {
  return async (ctx, indicator, client) => {
    if (!resources.includes(indicator)) {
      throw new oidcErrors.InvalidTarget(
        `this server issues tokens for ${resources.join(', ')} only`,
      );
    }
    const bound = await boundPrincipal(o.pool, o.schema, agent, client.clientId);
    if (!bound && ctx.oidc.params?.grant_type === 'client_credentials') {
      throw new oidcErrors.UnauthorizedClient(
        "this client is not bound to a principal yet: ask the seller's operator to bind it",
      );
    }
    // Never more than the bound principal may do; an unbound client gets no scope.
    const granted = bound ? scopesCovered(bound.permissions, o.profile.scopePrefix) : [];
    return {
      scope: granted.join(' '),
      audience: indicator,
      accessTokenTTL: o.accessTokenTtlSeconds ?? 3600,
      accessTokenFormat: 'jwt',
      jwt: { sign: { alg: 'ES256' } },
    };
  };
}

/** A registration this server refuses before the library reads it: too many, or too big. */
function registrationRefusal(
  req: IncomingMessage,
  limiter: AddressRateLimiter,
  maxBody: number,
): { status: number; error: string; description: string; retryAfter?: number } | null {
  const length = Number(req.headers['content-length'] ?? 0);
  if (!Number.isFinite(length) || length > maxBody) {
    return {
      status: 413,
      error: 'invalid_client_metadata',
      description: `client metadata larger than ${maxBody} bytes`,
    };
  }
  const wait = limiter.take(clientAddress(req));
  if (wait > 0) {
    return {
      status: 429,
      error: 'rate_limited',
      description: `too many registrations from this address; retry in ${wait} s`,
      retryAfter: wait,
    };
  }
  return null;
}

/**
 * oidc-provider prints its notices with console.warn/info (the devInteractions one once per
 * provider); while it sets up, those lines go to our logger instead, once per text.
 */
const reported = new Set<string>();
function throughLogger<T>(logger: Logger | undefined, fn: () => T): T {
  if (!logger) return fn();
  const { warn, info } = console;
  const route =
    (original: typeof console.warn) =>
    (first?: unknown, ...rest: unknown[]) => {
      // eslint-disable-next-line no-control-regex
      const text = typeof first === 'string' ? first.replace(/\x1b\[[0-9;]*m/g, '') : '';
      if (!text.startsWith('oidc-provider')) return original.call(console, first, ...rest);
      if (!reported.has(text)) {
        reported.add(text);
        logger.warn({ event: 'oidc_provider_notice' }, text);
      }
    };
  console.warn = route(warn);
  console.info = route(info);
  try {
    return fn();
  } finally {
    console.warn = warn;
    console.info = info;
  }
}
