/**
 * The OAuth server's sign-in pages (authorization_code's interaction step; issue 21 item 3).
 * This demo seller has no user directory, so its sign-in is a development aid, and off
 * unless asked for by name (SVC_OAUTH_DEV_LOGIN=1, never with NODE_ENV=production). When
 * on, it answers loopback clients only and still demands a secret: the principal's own API
 * key at this agent, or the one-time code printed to the operator's terminal (single use,
 * replaced after use or after a few wrong tries). Never a bare name. Failed sign-ins are
 * limited per address. Consent is one confirmation page; the library keeps the interaction
 * (its cookie binds the page to the browser that started the flow).
 */
import { createHash, randomInt, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import { html, type Html } from '../../shared/console/html.js';
import { isLoopbackAddress } from '../../shared/net/ssrf.js';
import { assertSchemaName, type Pool } from '../../shared/infra/pg.js';
import { hashApiKey } from '../auth/authenticate.js';
import type { AgentKind } from '../auth/principal.js';
import { AddressRateLimiter } from './registration-gate.js';

export const DEV_LOGIN_VARIABLE = 'SVC_OAUTH_DEV_LOGIN';
const PRINCIPAL_ID = /^[A-Za-z0-9_.:@-]{1,255}$/;
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
/** Wrong codes (from any address) before the code is replaced. */
const CODE_TRIES = 5;
const MAX_FORM_BYTES = 4096;

export interface DevLoginOptions {
  pool: Pool;
  schema: string;
  /** Where the one-time code goes: the operator's terminal (svc start: stderr). */
  announce: (code: string) => void;
  /** Failed sign-ins per address per window (default 10 per 5 minutes). */
  failures?: number;
  windowMs?: number;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export class DevLogin {
  private code = '';
  private wrongCodes = 0;
  private readonly limiter: AddressRateLimiter;
  private readonly schema: string;

  constructor(private readonly o: DevLoginOptions) {
    this.schema = assertSchemaName(o.schema);
    this.limiter = new AddressRateLimiter(o.failures ?? 10, o.windowMs ?? 5 * 60_000);
    this.rotate();
  }

  private rotate(): void {
    let c = '';
    for (let i = 0; i < 10; i++) c += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
    this.code = c;
    this.wrongCodes = 0;
    this.o.announce(c);
  }

  /** Seconds the address must wait after too many failures, or 0 (does not count). */
  blocked(address: string): number {
    return this.limiter.peek(address);
  }

  /** The principal the login and secret prove, or null (the failure is counted). */
  async verify(
    agent: AgentKind,
    address: string,
    login: unknown,
    secret: unknown,
  ): Promise<string | null> {
    const ok =
      typeof login === 'string' &&
      PRINCIPAL_ID.test(login) &&
      typeof secret === 'string' &&
      secret.length > 0 &&
      secret.length <= 512 &&
      (this.codeMatches(secret) || (await this.apiKeyOf(agent, login, secret)));
    if (ok) return login;
    this.limiter.take(address);
    return null;
  }

  private codeMatches(secret: string): boolean {
    if (!timingSafeEqual(digest(secret.trim().toUpperCase()), digest(this.code))) {
      if (++this.wrongCodes >= CODE_TRIES) this.rotate();
      return false;
    }
    this.rotate(); // single use
    return true;
  }

  private async apiKeyOf(agent: AgentKind, principal: string, key: string): Promise<boolean> {
    const { rowCount } = await this.o.pool.query(
      `SELECT 1 FROM ${this.schema}.api_keys
        WHERE key_hash = $1 AND agent = $2 AND principal_id = $3`,
      [hashApiKey(key), agent, principal],
    );
    return (rowCount ?? 0) > 0;
  }
}

function page(title: string, body: Html): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>${title}</title>
        <meta name="viewport" content="width=device-width, initial-scale=1" />
      </head>
      <body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto">
        <h1>${title}</h1>
        ${body}
      </body>
    </html>`.value;
}

/**
 * `formTo`: an origin besides ours a form's redirect chain may end at. Browsers apply
 * `form-action` to every redirect after a submission, and the consent form's chain ends at
 * the client's `redirect_uri`, so that page names the client's origin.
 */
/** The origin of a client's redirect_uri (validated by the provider), or none. */
function redirectOrigin(uri: unknown): string | undefined {
  if (typeof uri !== 'string') return undefined;
  try {
    const u = new URL(uri);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

function send(res: ServerResponse, status: number, body: string, formTo?: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.setHeader(
    'content-security-policy',
    `default-src 'none'; form-action 'self'${formTo ? ` ${formTo}` : ''}`,
  );
  res.setHeader('x-frame-options', 'DENY');
  res.end(body);
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams | null> {
  if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')) {
    return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return null;
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

const loginForm = (action: string, error?: string) =>
  html` ${error ? html`<p role="alert"><strong>${error}</strong></p>` : ''}
    <p>
      Development sign-in: your principal id and its API key at this agent, or the one-time code
      printed on the terminal of the operator running the seller.
    </p>
    <form method="post" action="${action}">
      <input type="hidden" name="prompt" value="login" />
      <p>
        <label>Principal <input name="login" autocomplete="username" required /></label>
      </p>
      <p>
        <label
          >API key or one-time code
          <input name="secret" type="password" autocomplete="current-password" required
        /></label>
      </p>
      <p><button type="submit">Sign in</button></p>
    </form>`;

const consentForm = (action: string, client: string, scopes: string) =>
  html` <p>Allow <strong>${client}</strong> to act for you with: ${scopes || 'your identity'}?</p>
    <form method="post" action="${action}">
      <input type="hidden" name="prompt" value="consent" />
      <p><button type="submit">Allow</button></p>
    </form>`;

/**
 * Serves `<mount>/interaction/<uid>` (GET: the page, POST: its answer) for one agent's
 * provider, or refuses with the setting that turns it on. Resolves false for other paths.
 */
export async function serveInteraction(
  provider: Provider,
  agent: AgentKind,
  login: DevLogin | null,
  req: IncomingMessage,
  res: ServerResponse,
  action: string,
): Promise<void> {
  if (!login) {
    return send(
      res,
      403,
      page(
        'Sign-in is off',
        html`<p>
          This seller has no sign-in page. For development, start it with ${DEV_LOGIN_VARIABLE}=1
          (svc start --oauth-dev-login), which serves one on loopback.
        </p>`,
      ),
    );
  }
  const address = req.socket.remoteAddress ?? '';
  if (!isLoopbackAddress(address)) {
    return send(
      res,
      403,
      page('Sign-in is off', html`<p>Development sign-in answers loopback only.</p>`),
    );
  }
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch {
    return send(res, 400, page('Sign-in expired', html`<p>Start the sign-in again.</p>`));
  }
  const { prompt, params } = details;
  if (req.method === 'GET') {
    if (prompt.name === 'login') return send(res, 200, page('Sign in', loginForm(action)));
    const scopes = String(params.scope ?? '');
    return send(
      res,
      200,
      page('Authorize', consentForm(action, String(params.client_id), scopes)),
      redirectOrigin(params.redirect_uri),
    );
  }
  const form = await readForm(req);
  if (!form || form.get('prompt') !== prompt.name) {
    return send(res, 400, page('Sign in', loginForm(action, 'Malformed form: start again.')));
  }
  if (prompt.name === 'login') return submitLogin(provider, agent, login, form, req, res, action);
  return submitConsent(provider, details, req, res);
}

async function submitLogin(
  provider: Provider,
  agent: AgentKind,
  login: DevLogin,
  form: URLSearchParams,
  req: IncomingMessage,
  res: ServerResponse,
  action: string,
): Promise<void> {
  const address = req.socket.remoteAddress ?? '';
  const wait = login.blocked(address);
  if (wait > 0) {
    res.setHeader('retry-after', String(wait));
    return send(
      res,
      429,
      page('Sign in', loginForm(action, `Too many failed sign-ins: wait ${wait} s.`)),
    );
  }
  const principal = await login.verify(agent, address, form.get('login'), form.get('secret'));
  if (!principal) {
    return send(res, 401, page('Sign in', loginForm(action, 'Unknown principal or wrong secret.')));
  }
  await provider.interactionFinished(
    req,
    res,
    { login: { accountId: principal } },
    { mergeWithLastSubmission: false },
  );
}

async function submitConsent(
  provider: Provider,
  details: Awaited<ReturnType<Provider['interactionDetails']>>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { prompt, grantId, session, params } = details;
  const missing = prompt.details as {
    missingOIDCScope?: string[];
    missingOIDCClaims?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session!.accountId, clientId: String(params.client_id) });
  if (!grant) return send(res, 400, page('Sign-in expired', html`<p>Start again.</p>`));
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scope] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scope.join(' '));
  }
  await provider.interactionFinished(
    req,
    res,
    { consent: { grantId: await grant.save() } },
    { mergeWithLastSubmission: true },
  );
}
