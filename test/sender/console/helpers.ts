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
