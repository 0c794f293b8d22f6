import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { createOAuthServer } from '../../../agents/oauth/server.js';
import { DevLogin } from '../../../agents/oauth/dev-login.js';
import { brandProfile } from '../../../shared/brand.js';
import { testDatabase } from '../../helpers/db.js';

/** A signed-in client of a console over real HTTP: cookie jar of one, CSRF token from pages. */
export interface ConsoleClient {
  base: string;
  cookie: string;
  csrf: string;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  post(
    path: string,
    form: Record<string, string>,
    headers?: Record<string, string>,
  ): Promise<Response>;
}

export async function signIn(base: string, token: string): Promise<ConsoleClient> {
  const res = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, next: '/deliveries' }).toString(),
  });
  if (res.status !== 302) throw new Error(`sign-in answered ${res.status}`);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  const client: ConsoleClient = {
    base,
    cookie,
    csrf: '',
    get: (path, headers = {}) =>
      fetch(`${base}${path}`, { redirect: 'manual', headers: { cookie, ...headers } }),
    post: (path, form, headers = {}) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(form).toString(),
      }),
  };
  const page = await (await client.get('/deliveries')).text();
  client.csrf = /<meta name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '';
  return client;
}

export async function until<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A JSON answer, loosely typed: the tests check its shape field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;
export async function json(res: Response): Promise<Json> {
  return res.json();
}

/** The browser: one cookie jar for every port of 127.0.0.1 (cookies ignore ports). */
export class Browser {
  readonly cookies = new Map<string, string>();
  async go(url: string, init: RequestInit = {}): Promise<Response> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, pair!.slice(i + 1));
    }
    return res;
  }

  /**
   * From an authorization URL through the provider's login (as `login`) and consent pages
   * to the redirect back to the console: the callback URL, not yet followed.
   */
  async throughProvider(authorizeUrl: string, login: string, callbackPrefix: string) {
    let url = authorizeUrl;
    for (let hops = 0; hops < 20; hops++) {
      if (url.startsWith(callbackPrefix)) return url;
      const res = await this.go(url);
      if (res.status >= 300 && res.status < 400) {
        url = new URL(res.headers.get('location')!, url).toString();
        continue;
      }
      const page = await res.text();
      const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
      const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
      if (res.status !== 200 || !action || !prompt) {
        throw new Error(`provider answered ${res.status}: ${page.slice(0, 300)}`);
      }
      // The development sign-in wants a secret: the one-time code its terminal showed.
      const code = devCodes.get(new URL(url).origin) ?? '';
      const form: Record<string, string> =
        prompt === 'login' ? { prompt, login, secret: code } : { prompt: 'consent' };
      const next = await this.go(new URL(action, url).toString(), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });
      url = new URL(next.headers.get('location')!, url).toString();
    }
    throw new Error('too many hops');
  }
}

/** The one-time sign-in code each built-in provider last printed, by its origin. */
export const devCodes = new Map<string, string>();

/**
 * The built-in provider of the sales agent's origin, on its own port, with its development
 * sign-in on (its codes in `devCodes`) and registration open (the console registers itself).
 */
export async function startBuiltInProvider(t: { teardown(fn: () => unknown): void }) {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, s) => s.end();
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  );
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const db = testDatabase(t, 'coidc');
  const oauth = await createOAuthServer({
    pool: db.pool,
    schema: db.schema,
    profile: brandProfile('svc'),
    urls: { sales: origin, creative: `${origin}/c`, signals: `${origin}/s` },
    registration: { open: true },
    devLogin: new DevLogin({
      pool: db.pool,
      schema: db.schema,
      announce: (code) => devCodes.set(origin, code),
    }),
  });
  const app = new Koa();
  app.use(oauth.middleware('sales'));
  handler = app.callback();
  return oauth.issuer('sales');
}
