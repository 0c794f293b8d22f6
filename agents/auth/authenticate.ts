/**
 * Credentials to principals, per agent. JWT bearer tokens are verified with the agent's
 * own key (HS256 secret, EdDSA public key, or a JWKS for OAuth-issued tokens), so a token
 * of one agent fails at another; API keys (`X-API-Key`, or `Authorization: Bearer <key>`
 * when the bearer is not a JWS) are looked up by SHA-256 among the agent's own keys.
 * Missing credentials give null (the tier decides); bad ones throw
 * AUTH_INVALID.
 *
 * A token of the OAuth server (verified with its JWKS) names its client (`client_id`):
 * the principal is the one the seller's operator bound that client to (agents/oauth/
 * bindings.ts), looked up on every call so unbinding takes effect at once. An unbound
 * client, or a `sub` that is neither the client nor its principal, is AUTH_INVALID; the
 * permissions are those of the token's scopes that the principal itself holds. A
 * principal the signals agent does not know gets no signal access.
 */
import { createHash, createHmac, randomBytes, type KeyObject } from 'node:crypto';
import {
  errors as joseErrors,
  jwtVerify,
  SignJWT,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { BrandProfile } from '../../shared/brand.js';
import { assertSchemaName, type Pool } from '../../shared/infra/pg.js';
import { taskError } from '../runtime/errors.js';
import { boundPrincipal } from '../oauth/bindings.js';
import {
  AGENT_KINDS,
  PermissionsSchema,
  permissionsFromScopes,
  type AgentKind,
  type Permissions,
  type Principal,
} from './principal.js';

export interface AgentAuthKeys {
  /** HS256 secret (32+ bytes). */
  hs256Secret?: Uint8Array;
  /** EdDSA (Ed25519) public key. */
  eddsaPublicKey?: KeyObject;
  /** Further keys, e.g. the OAuth server's JWKS (`createLocalJWKSet`). */
  jwks?: JWTVerifyGetKey;
  /** Accepted `aud` values when a token has one (default: the agent kind and its URL). */
  audiences?: string[];
}

export interface AuthenticatorOptions {
  pool: Pool;
  schema: string;
  profile: BrandProfile;
  keys: Record<AgentKind, AgentAuthKeys>;
  /** Leeway for `exp`/`iat`, seconds (default 30). */
  clockToleranceSeconds?: number;
}

const MAX_TOKEN_LENGTH = 8192;
const JWS_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const MAX_API_KEY_LENGTH = 512;

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export class Authenticator {
  private readonly options: AuthenticatorOptions;
  private readonly schema: string;

  constructor(options: AuthenticatorOptions) {
    this.options = options;
    this.schema = assertSchemaName(options.schema);
  }

  /** null when no credentials were sent; AUTH_INVALID when they do not hold. */
  async authenticate(
    agent: AgentKind,
    credentials: { authorization?: string; apiKey?: string },
  ): Promise<Principal | null> {
    const authorization = credentials.authorization?.trim();
    if (authorization) {
      const m = /^Bearer[ \t]+(\S+)$/i.exec(authorization);
      if (!m || !m[1]) {
        throw taskError('AUTH_INVALID', 'Authorization must be "Bearer <token or API key>"');
      }
      // A bearer that is not a JWS (three base64url segments) is an API key, as the
      // protocol's buyers send them (`Authorization: Bearer <key>`).
      return JWS_SHAPE.test(m[1]) ? this.verifyJwt(agent, m[1]) : this.lookupApiKey(agent, m[1]);
    }
    const apiKey = credentials.apiKey?.trim();
    if (apiKey) return this.lookupApiKey(agent, apiKey);
    return null;
  }

  private async verifyJwt(agent: AgentKind, token: string): Promise<Principal> {
    if (token.length > MAX_TOKEN_LENGTH) throw taskError('AUTH_INVALID', 'token too long');
    const keys = this.options.keys[agent];
    let payload: JWTPayload;
    let viaOAuthServer = false;
    try {
      const result = await jwtVerify(
        token,
        async (header, jws) => {
          if (header.alg === 'HS256' && keys.hs256Secret) return keys.hs256Secret;
          if ((header.alg === 'EdDSA' || header.alg === 'Ed25519') && keys.eddsaPublicKey) {
            return keys.eddsaPublicKey;
          }
          if (keys.jwks) {
            viaOAuthServer = true;
            return keys.jwks(header, jws);
          }
          throw new joseErrors.JOSEAlgNotAllowed(`alg ${header.alg} not accepted`);
        },
        {
          requiredClaims: ['sub', 'exp', 'iat'],
          clockTolerance: this.options.clockToleranceSeconds ?? 30,
        },
      );
      payload = result.payload;
    } catch (err) {
      const reason =
        err instanceof joseErrors.JWTExpired
          ? 'token expired'
          : err instanceof joseErrors.JWTClaimValidationFailed
            ? `token claim ${err.claim} invalid`
            : 'token signature or format invalid';
      throw taskError('AUTH_INVALID', `invalid bearer token: ${reason}`);
    }
    const audiences = keys.audiences ?? [agent];
    if (payload.aud !== undefined) {
      const auds = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      if (!auds.some((a) => audiences.includes(a))) {
        throw taskError('AUTH_INVALID', 'invalid bearer token: issued for another agent');
      }
    }
    if (typeof payload.sub !== 'string' || payload.sub.length === 0 || payload.sub.length > 255) {
      throw taskError('AUTH_INVALID', 'invalid bearer token: sub must be a principal id');
    }
    if (viaOAuthServer) return this.oauthPrincipal(agent, payload, payload.sub);
    let permissions: Permissions = {};
    if (payload.permissions !== undefined) {
      const parsed = PermissionsSchema.safeParse(payload.permissions);
      if (!parsed.success) {
        throw taskError('AUTH_INVALID', 'invalid bearer token: permissions claim malformed');
      }
      permissions = parsed.data;
    } else if (typeof payload.scope === 'string') {
      permissions = permissionsFromScopes(payload.scope, this.options.profile.scopePrefix);
    }
    const agentAccess = await this.agentAccess(agent, payload.sub);
    return { agent, principal_id: payload.sub, permissions, method: 'jwt', agentAccess };
  }

  /** An OAuth-issued token: the principal its client is bound to, or AUTH_INVALID. */
  private async oauthPrincipal(
    agent: AgentKind,
    payload: JWTPayload,
    sub: string,
  ): Promise<Principal> {
    const clientId = payload.client_id;
    const bound =
      typeof clientId === 'string'
        ? await boundPrincipal(this.options.pool, this.schema, agent, clientId)
        : null;
    if (!bound) {
      throw taskError(
        'AUTH_INVALID',
        "invalid bearer token: its OAuth client is not bound to a principal (the seller's operator binds clients)",
      );
    }
    if (sub !== clientId && sub !== bound.principalId) {
      throw taskError('AUTH_INVALID', 'invalid bearer token: sub is not a principal of this agent');
    }
    const scoped =
      typeof payload.scope === 'string'
        ? permissionsFromScopes(payload.scope, this.options.profile.scopePrefix)
        : {};
    return {
      agent,
      principal_id: bound.principalId,
      permissions: intersectPermissions(scoped, bound.permissions),
      method: 'jwt',
      agentAccess: agent === 'signals' ? bound.signalsAccess : true,
    };
  }

  /** Principals registered with the agent may be barred from it (signals: AGENT_ACCESS_DENIED). */
  private async agentAccess(agent: AgentKind, principalId: string): Promise<boolean> {
    if (agent !== 'signals') return true;
    const { rows } = await this.options.pool.query<{ signals_access: boolean }>(
      `SELECT signals_access FROM ${this.schema}.principals WHERE agent = $1 AND principal_id = $2`,
      [agent, principalId],
    );
    // Unknown to the signals agent: no access (never a default grant).
    return rows[0]?.signals_access ?? false;
  }

  private async lookupApiKey(agent: AgentKind, key: string): Promise<Principal> {
    if (key.length > MAX_API_KEY_LENGTH) throw taskError('AUTH_INVALID', 'API key too long');
    const { rows } = await this.options.pool.query<{
      principal_id: string;
      permissions: Permissions;
      signals_access: boolean;
    }>(
      `SELECT p.principal_id, p.permissions, p.signals_access
         FROM ${this.schema}.api_keys k
         JOIN ${this.schema}.principals p USING (agent, principal_id)
        WHERE k.key_hash = $1 AND k.agent = $2`,
      [hashApiKey(key), agent],
    );
    const row = rows[0];
    if (!row) throw taskError('AUTH_INVALID', 'unknown API key for this agent');
    return {
      agent,
      principal_id: row.principal_id,
      permissions: row.permissions,
      method: 'api_key',
      agentAccess: row.signals_access,
    };
  }
}

/** Each resource's rights held by both (a token's scopes never widen a principal's rights). */
export function intersectPermissions(a: Permissions, b: Permissions): Permissions {
  const out: Permissions = {};
  for (const [resource, perms] of Object.entries(a) as Array<[keyof Permissions, string[]]>) {
    const both = perms.filter((p) => b[resource]?.includes(p as never));
    if (both.length) out[resource] = both as Permissions[keyof Permissions];
  }
  return out;
}

/** Per-agent HS256 secrets, created once and kept in the database. */
export async function loadAgentSecrets(
  pool: Pool,
  schema: string,
): Promise<Record<AgentKind, Uint8Array>> {
  const s = assertSchemaName(schema);
  for (const agent of AGENT_KINDS) {
    await pool.query(
      `INSERT INTO ${s}.agent_secrets (agent, jwt_secret) VALUES ($1, $2)
       ON CONFLICT (agent) DO NOTHING`,
      [agent, randomBytes(32).toString('base64url')],
    );
  }
  const { rows } = await pool.query<{ agent: AgentKind; jwt_secret: string }>(
    `SELECT agent, jwt_secret FROM ${s}.agent_secrets`,
  );
  const out = {} as Record<AgentKind, Uint8Array>;
  for (const r of rows) out[r.agent] = Buffer.from(r.jwt_secret, 'base64url');
  return out;
}

/** An HS256 token an agent accepts (demo credentials, tests, operators). */
export async function issueToken(input: {
  secret: Uint8Array;
  agent: AgentKind;
  sub: string;
  permissions?: Permissions;
  scope?: string;
  ttlSeconds?: number;
  /** Unix seconds (tests); default now. */
  now?: number;
}): Promise<string> {
  const now = input.now ?? Math.floor(Date.now() / 1000);
  const claims: JWTPayload = {};
  if (input.permissions) claims.permissions = input.permissions;
  if (input.scope) claims.scope = input.scope;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(input.sub)
    .setAudience(input.agent)
    .setIssuedAt(now)
    .setExpirationTime(now + (input.ttlSeconds ?? 3600))
    .sign(input.secret);
}

/** A demo API key derived from the agent's secret: stable across restarts, not guessable. */
export function demoApiKey(secret: Uint8Array, agent: AgentKind, principalId: string): string {
  const mac = createHmac('sha256', secret).update(`api-key:${agent}:${principalId}`).digest();
  return `${agent}_${mac.subarray(0, 24).toString('base64url')}`;
}
