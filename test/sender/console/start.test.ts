/**
 * `svc start` serves the seller console: its service (startAgentsService, what `svc start`
 * runs) listens for the console on its own port, refuses anonymous access, and a sign-in
 * with the token it wrote to the credentials file works.
 */
import { readFile, stat } from 'node:fs/promises';
import t from 'tap';
import { startBanner } from '../../../agents/server/banner.js';
import { startService } from '../../agents/e2e/support.js';
import { Browser, devCodes, json, signIn } from './helpers.js';

t.setTimeout(120_000);

t.test('svc start serves the console', async (t) => {
  const { service } = await startService(t);
  const c = service.console;
  if (!c) throw new Error('no console');
  const url = new URL(c.url);
  t.equal(url.hostname, '127.0.0.1', 'loopback by default');
  t.ok(Number(url.port) > 0, 'on its own port');
  t.equal(c.oidcIssuer, null, 'the token form by default');
  t.match(startBanner(service, c.credentialsFile!, false), `console  ${c.url}  (operator token:`);
  for (const agent of Object.values(service.urls)) t.not(new URL(agent).port, url.port);

  const anonymous = await fetch(`${c.url}/deliveries`, { redirect: 'manual' });
  t.equal(anonymous.status, 302, 'no anonymous page');
  t.match(anonymous.headers.get('location'), /^\/login/);
  t.equal((await fetch(`${c.url}/api/deliveries`)).status, 401, 'no anonymous API');
  const forged = await fetch(`${c.url}/api/deliveries`, {
    headers: { authorization: 'Bearer not-the-console-token-at-all' },
  });
  t.equal(forged.status, 401, 'a wrong bearer token');

  const file = c.credentialsFile!;
  t.equal((await stat(file)).mode & 0o777, 0o600, 'the credentials file is 0600');
  const creds = JSON.parse(await readFile(file, 'utf8')).console;
  t.equal(creds.url, c.url, 'the file names the console');
  await t.rejects(signIn(c.url, `${creds.token}x`), /sign-in answered 401/);
  const client = await signIn(c.url, creds.token);
  t.ok(client.csrf, 'signed in: a page with its CSRF token');
  const list = await json(await client.get('/api/deliveries'));
  t.same(list.items, [], 'the (empty) outbox of this service');
});

t.test(
  'svc start with SVC_CONSOLE_AUTH=oidc: operators sign in through its provider',
  async (t) => {
    // The built-in provider's sign-in is its development page, asked for by name; the
    // operator proves presence with the one-time code svc start prints.
    let origin = '';
    const { service } = await startService(
      t,
      { SVC_CONSOLE_AUTH: 'oidc', SVC_OAUTH_DEV_LOGIN: '1' },
      { announceDevLoginCode: (code) => devCodes.set(origin, code) },
    );
    origin = service.urls.sales;
    devCodes.set(origin, devCodes.get('') ?? '');
    const c = service.console!;
    t.equal(c.oidcIssuer, `${service.urls.sales}/oauth`, "the sales agent's provider");
    t.match(
      startBanner(service, c.credentialsFile!, false),
      `console  ${c.url}  (operators sign in through ${c.oidcIssuer}; API token: section "console"`,
      'the banner says how operators sign in',
    );
    const creds = JSON.parse(await readFile(c.credentialsFile!, 'utf8')).console;
    const login = await (await fetch(`${c.url}/login`)).text();
    t.match(login, /through the OpenID provider <code>http:\/\/127\.0\.0\.1:\d+\/oauth<\/code>/);
    const b = new Browser();
    const start = await b.go(`${c.url}/login/oidc?next=%2Fdestinations`);
    t.equal(new URL(start.headers.get('location')!).origin, service.urls.sales, 'the sales agent');
    const back = await b.throughProvider(
      start.headers.get('location')!,
      creds.operator,
      `${c.url}/auth/callback`,
    );
    const done = await b.go(back);
    t.equal(done.status, 302);
    t.equal(done.headers.get('location'), '/destinations');
    const page = await (await b.go(`${c.url}/destinations`)).text();
    t.match(page, new RegExp(`class="who">${creds.operator}<`), "the credentials file's operator");
  },
);
