/**
 * Operator sign-in through an OpenID Provider (the built-in one of `agents/oauth`, or any
 * other): the console is an OIDC client using the authorization code flow with PKCE
 * (S256), `state` and `nonce`. It registers itself once per start (RFC 7591 dynamic
 * registration, a confidential client), keeps each sign-in's verifier, nonce and return
 * path under its `state` (single use, ten minutes), exchanges the code at the token
 * endpoint and accepts the ID token only when its signature (the provider's JWKS), issuer,
 * audience, expiry and nonce hold. The operator is the token's `sub`, and only the
 * subjects listed as operators get in: the built-in provider's demo login accepts any
 * name, so the list is what makes an operator.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { SvcError } from '../errors/base.js';

export class OidcSignInError extends SvcError {
  static override readonly code = 'ERR_OIDC_SIGN_IN';

  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(message, { code });
    this.name = 'OidcSignInError';
  }
}

export interface OidcOptions {
  /** The provider's issuer URL (discovery at `<issuer>/.well-known/openid-configuration`). */
  issuer: string;
  /** This console's callback, e.g. `http://127.0.0.1:3004/auth/callback`. */
  redirectUri: string;
  /** The `sub` values admitted as operators. */
  operators: string[];
  /** Sent as `Authorization: Bearer` to the registration endpoint (RFC 7591 §3). */
  initialAccessToken?: string;
  /** How long a started sign-in may take; default 10 minutes. */
  pendingTtlMs?: number;
  now?: () => number;
}

interface Pending {
  verifier: string;
  nonce: string;
  next: string;
  expiresAt: number;
  address: string;
}

/** Sign-ins in progress one client address may hold; its oldest goes first beyond this. */
export const PENDING_PER_ADDRESS = 20;

interface Metadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  registration_endpoint?: string;
}

const b64 = (n: number) => randomBytes(n).toString('base64url');

async function getJson(
  url: string,
  init?: RequestInit,
): Promise<{ status: number; body: unknown }> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new OidcSignInError(502, 'OIDC_PROVIDER_UNREACHABLE', `cannot reach ${url} (${cause})`);
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: reported by the caller from the status.
  }
  return { status: res.status, body };
}

export class OidcSignIn {
  private readonly pending = new Map<string, Pending>();
  /** The states each address has pending, oldest first (the per-address cap). */
  private readonly byAddress = new Map<string, string[]>();
  private readonly now: () => number;
  private readonly ttl: number;
  private readonly jwks: JWTVerifyGetKey;

  private constructor(
    private readonly o: OidcOptions,
    private readonly meta: Metadata,
    private readonly client: { id: string; secret: string },
  ) {
    this.now = o.now ?? Date.now;
    this.ttl = o.pendingTtlMs ?? 10 * 60_000;
    this.jwks = createRemoteJWKSet(new URL(meta.jwks_uri));
  }

  /** Discovers the provider and registers this console as a client of it. */
  static async register(o: OidcOptions): Promise<OidcSignIn> {
    if (o.operators.length === 0) throw new Error('OIDC sign-in needs at least one operator');
    const discovery = `${o.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const d = await getJson(discovery);
    const meta = d.body as Metadata | null;
    if (d.status !== 200 || !meta?.authorization_endpoint || !meta.token_endpoint) {
      throw new Error(`OIDC discovery failed at ${discovery} (HTTP ${d.status})`);
    }
    if (meta.issuer !== o.issuer) {
      throw new Error(
        `OIDC discovery at ${discovery} names issuer ${meta.issuer}, not ${o.issuer}`,
      );
    }
    if (!meta.registration_endpoint) {
      throw new Error(`the OIDC provider ${o.issuer} offers no dynamic client registration`);
    }
    const r = await getJson(meta.registration_endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(o.initialAccessToken ? { authorization: `Bearer ${o.initialAccessToken}` } : {}),
      },
      body: JSON.stringify({
        client_name: 'operator console',
        redirect_uris: [o.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      }),
    });
    const c = r.body as { client_id?: string; client_secret?: string } | null;
    if (r.status !== 201 || !c?.client_id || !c.client_secret) {
      throw new Error(
        `OIDC client registration at ${meta.registration_endpoint} failed (HTTP ${r.status})`,
      );
    }
    return new OidcSignIn(o, meta, { id: c.client_id, secret: c.client_secret });
  }

  get clientId(): string {
    return this.client.id;
  }

  /**
   * A new sign-in: where to send the browser. `next` is the local path to return to. Each
   * client address holds at most PENDING_PER_ADDRESS sign-ins in progress (its own oldest
   * is dropped), so a flood of starts from one address never evicts another's sign-in.
   */
  begin(next: string, address = 'unknown'): string {
    this.prune();
    const state = b64(24);
    const verifier = b64(32);
    const nonce = b64(24);
    const mine = this.byAddress.get(address) ?? [];
    while (mine.length >= PENDING_PER_ADDRESS) this.pending.delete(mine.shift()!);
    mine.push(state);
    this.byAddress.set(address, mine);
    this.pending.set(state, { verifier, nonce, next, expiresAt: this.now() + this.ttl, address });
    // Bounded overall too (many addresses): the oldest sign-in anywhere goes first.
    if (this.pending.size > 100_000) this.forget(this.pending.keys().next().value!);
    const u = new URL(this.meta.authorization_endpoint);
    u.search = new URLSearchParams({
      response_type: 'code',
      client_id: this.client.id,
      redirect_uri: this.o.redirectUri,
      scope: 'openid',
      state,
      nonce,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    return u.toString();
  }

  /**
   * The provider sent the browser back: checks state (single use), exchanges the code,
   * verifies the ID token and its nonce. Resolves to the operator and the return path.
   */
  async finish(query: Record<string, unknown>): Promise<{ operator: string; next: string }> {
    const state = typeof query.state === 'string' ? query.state : '';
    const p = this.pending.get(state);
    if (state) this.forget(state);
    if (!p || p.expiresAt <= this.now()) {
      throw new OidcSignInError(
        400,
        'OIDC_STATE_INVALID',
        'this sign-in is unknown, used or expired: start again',
      );
    }
    if (typeof query.error === 'string') {
      throw new OidcSignInError(
        403,
        'OIDC_DENIED',
        `the provider refused the sign-in: ${query.error.slice(0, 100)}`,
      );
    }
    if (typeof query.code !== 'string' || query.code === '' || query.code.length > 2048) {
      throw new OidcSignInError(400, 'OIDC_CODE_MISSING', 'the provider sent no code');
    }
    const basic = Buffer.from(
      `${encodeURIComponent(this.client.id)}:${encodeURIComponent(this.client.secret)}`,
    ).toString('base64');
    const t = await getJson(this.meta.token_endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${basic}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: query.code,
        redirect_uri: this.o.redirectUri,
        code_verifier: p.verifier,
      }).toString(),
    });
    const tokens = t.body as { id_token?: string; error?: string } | null;
    if (t.status !== 200 || typeof tokens?.id_token !== 'string') {
      throw new OidcSignInError(
        400,
        'OIDC_CODE_REJECTED',
        `the provider did not accept the code (${tokens?.error ?? `HTTP ${t.status}`}): start again`,
      );
    }
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(tokens.id_token, this.jwks, {
        issuer: this.meta.issuer,
        audience: this.client.id,
        currentDate: new Date(this.now()),
      }));
    } catch (err) {
      throw new OidcSignInError(
        400,
        'OIDC_ID_TOKEN_INVALID',
        `the ID token does not verify: ${(err as Error).message}`,
      );
    }
    if (claims.nonce !== p.nonce) {
      throw new OidcSignInError(400, 'OIDC_NONCE_MISMATCH', 'the ID token is not for this sign-in');
    }
    const sub = claims.sub;
    if (typeof sub !== 'string' || !this.o.operators.includes(sub)) {
      throw new OidcSignInError(
        403,
        'OIDC_NOT_AN_OPERATOR',
        `${typeof sub === 'string' ? sub.slice(0, 100) : 'this account'} is not a console operator`,
      );
    }
    return { operator: sub, next: p.next };
  }

  private forget(state: string): void {
    const p = this.pending.get(state);
    if (!p) return;
    this.pending.delete(state);
    const mine = this.byAddress.get(p.address);
    if (!mine) return;
    const i = mine.indexOf(state);
    if (i >= 0) mine.splice(i, 1);
    if (mine.length === 0) this.byAddress.delete(p.address);
  }

  private prune(): void {
    const now = this.now();
    for (const [k, v] of this.pending) if (v.expiresAt <= now) this.forget(k);
  }
}
