/**
 * Operator sign-in through the built-in OpenID provider (agents/oauth, oidc-provider with
 * its demo login pages), over real HTTP: the console registers as a client, the browser
 * (a cookie jar here) goes through the provider's login and consent, and the callback
 * opens a session for the ID token's subject, who is then the operator recorded on
 * actions. Forged and malformed callbacks are refused: unknown, replayed or expired state,
 * a code that is wrong or already used, an ID token with another nonce or past its expiry,
 * a subject who is not an operator, the provider's error, no code.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ConsoleActions } from '../../../sender/console/actions.js';
import { consoleOidcFromConfig, startConsole } from '../../../sender/console/index.js';
import { loadConfig } from '../../../shared/config.js';
import { listenConsole } from '../../../sender/console/server.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import { newIdempotencyKey } from '../../../sender/outbox/keys.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import { OidcSignIn } from '../../../shared/console/oidc.js';
import { testDatabase } from '../../helpers/db.js';
import { senderHarness, startReceiver } from '../harness.js';
import { Browser, json, startBuiltInProvider as provider } from './helpers.js';

const TOKEN = 'oidc-test-console-token-0123456789';

type Asserts = Pick<typeof t, 'equal' | 'match' | 'notOk'>;

t.test('console sign-in through the built-in OpenID provider', async (t) => {
  const issuer = await provider(t);
  const h = await senderHarness(t);
  const rx = await startReceiver(() => ({ status: 200 }));
  t.teardown(() => rx.close());
  h.startWorker();
  const dataDir = await mkdtemp(join(tmpdir(), 'coidc-'));
  const c = await startConsole({
    pool: h.pool,
    queue: h.queue,
    schema: h.schema,
    dataDir,
    token: TOKEN,
    oidc: { issuer, operators: ['alice'] },
  });
  t.teardown(() => c.close());
  const callback = `${c.url}/auth/callback`;
  const begin = async (b: Browser, next = '/deliveries') => {
    const res = await b.go(`${c.url}/login/oidc?next=${encodeURIComponent(next)}`);
    t.equal(res.status, 302);
    return res.headers.get('location')!;
  };
  const stateOf = (u: string) => new URL(u).searchParams.get('state')!;

  t.test('the sign-in page offers the provider, not the token form', async (t) => {
    const page = await (await fetch(`${c.url}/login`)).text();
    t.match(page, /id="oidc-sign-in"\s+href="\/login\/oidc\?next=%2Fdeliveries"/);
    t.notMatch(page, /name="token"/);
    const post = await fetch(`${c.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: TOKEN }).toString(),
    });
    t.equal(post.status, 403, 'no token sign-in in a browser');
    t.notOk(post.headers.get('set-cookie'));
    const api = await fetch(`${c.url}/api/deliveries`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    t.equal(api.status, 200, 'scripts keep the Bearer token');
    const authorize = new URL(await begin(new Browser()));
    t.equal(`${authorize.origin}${authorize.pathname}`, `${issuer}/authorize`);
    const p = authorize.searchParams;
    t.equal(p.get('response_type'), 'code');
    t.equal(p.get('redirect_uri'), callback);
    t.equal(p.get('code_challenge_method'), 'S256');
    t.match(p.get('code_challenge'), /^[\w-]{43}$/);
    t.match(p.get('state'), /^[\w-]{32}$/);
    t.match(p.get('nonce'), /^[\w-]{32}$/);
    t.equal(p.get('scope'), 'openid');
  });

  const browser = new Browser();
  let used = '';
  t.test('an operator signs in, and is the operator of its actions', async (t) => {
    const back = await browser.throughProvider(await begin(browser, '/audit'), 'alice', callback);
    used = back;
    const res = await browser.go(back);
    t.equal(res.status, 302);
    t.equal(res.headers.get('location'), '/audit', 'back where the sign-in started');
    t.ok(browser.cookies.get('svc_console'), 'a session');
    const page = await (await browser.go(`${c.url}/deliveries`)).text();
    t.match(page, /alice/, 'signed in as the ID token subject');
    const csrf = /<meta name="csrf-token" content="([^"]+)"/.exec(page)![1]!;

    const key = newIdempotencyKey();
    const [id] = await h.outbox.enqueue([
      {
        target: { url: rx.url, auth: { mode: 'rfc9421' }, channel: 'task' },
        payload: { idempotency_key: key, task_id: 'task_1', status: 'completed' },
        idempotencyKey: key,
        notificationType: 'completed',
        principalId: 'p_1',
        taskId: 'task_1',
      },
    ]);
    await h.waitForState(id!, ['delivered']);
    const redeliver = await browser.go(`${c.url}/deliveries/${id}/redeliver`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: c.url },
      body: new URLSearchParams({ _csrf: csrf }).toString(),
    });
    t.equal(redeliver.status, 302);
    const audit = await json(await browser.go(`${c.url}/api/audit`));
    t.match(audit.items[0], { operator: 'alice', via: 'console', action: 'redeliver' });
    const { rows } = await h.pool.query(
      `SELECT requested_by FROM ${h.schema}.webhook_activity WHERE outbox_id = $1 AND attempt = 2`,
      [id],
    );
    t.equal(rows[0]?.requested_by, 'alice', 'webhook_activity names the operator');
  });

  const refused = async (
    t: Asserts,
    url: string,
    status: number,
    text: RegExp,
    b = new Browser(),
  ) => {
    const res = await b.go(url);
    t.equal(res.status, status, text.source);
    t.match(await res.text(), text);
    t.notOk(b.cookies.get('svc_console'), 'no session');
  };

  t.test('forged and malformed callbacks are refused', async (t) => {
    // A callback replayed (its state is single use).
    await refused(t, used, 400, /unknown, used or expired/);
    // A state the console never issued.
    await refused(t, `${callback}?code=abc&state=forged-state`, 400, /unknown, used or expired/);
    // A valid state with a code that is not the provider's.
    const s1 = stateOf(await begin(new Browser()));
    await refused(t, `${callback}?code=not-a-code&state=${s1}`, 400, /did not accept the code/);
    // A valid state and the code of a sign-in already completed (used once).
    const b2 = new Browser();
    const a2 = await b2.throughProvider(await begin(b2), 'alice', callback);
    const s3 = stateOf(await begin(new Browser()));
    const code = new URL(a2).searchParams.get('code')!;
    await b2.go(a2);
    await refused(t, `${callback}?code=${code}&state=${s3}`, 400, /did not accept the code/);
    // The authorization request's nonce replaced on its way: the ID token is not ours.
    const b4 = new Browser();
    const a4 = new URL(await begin(b4));
    a4.searchParams.set('nonce', 'an-injected-nonce');
    const back4 = await b4.throughProvider(a4.toString(), 'alice', callback);
    await refused(t, back4, 400, /not for this sign-in/, b4);
    // The provider signs in anyone: only the listed operators get in.
    const b5 = new Browser();
    const back5 = await b5.throughProvider(await begin(b5), 'mallory', callback);
    await refused(t, back5, 403, /mallory is not a console operator/, b5);
    // The provider's error, and no code at all.
    const s6 = stateOf(await begin(new Browser()));
    await refused(t, `${callback}?error=access_denied&state=${s6}`, 403, /refused the sign-in/);
    const s7 = stateOf(await begin(new Browser()));
    await refused(t, `${callback}?state=${s7}`, 400, /sent no code/);
    await refused(t, `${callback}`, 400, /unknown, used or expired/);
    // Failed sign-ins count against the address like failed tokens.
    for (let i = 0; i < 2; i++) await new Browser().go(`${callback}?state=x`);
    const limited = await fetch(`${callback}?state=x`, { redirect: 'manual' });
    t.equal(limited.status, 429);
    t.ok(Number(limited.headers.get('retry-after')) > 0);
  });
});

t.test('expired sign-ins and ID tokens', async (t) => {
  const issuer = await provider(t);
  const { pool, schema } = testDatabase(t, 'coidx');
  let now = Date.now();
  const server = await listenConsole({
    store: new ConsoleStore(pool, schema),
    actions: new ConsoleActions(pool, null as never, schema),
    auth: new ConsoleAuth({ token: TOKEN }),
    oidc: { issuer, signIn: null },
  });
  t.teardown(() => server.close());
  // Not registered yet: the console says so rather than failing.
  const early = await fetch(`${server.url}/login/oidc`, { redirect: 'manual' });
  t.equal(early.status, 503);
  t.equal((await json(early)).error.code, 'OIDC_NOT_READY');

  const callback = `${server.url}/auth/callback`;
  const register = (ttl: number) =>
    OidcSignIn.register({
      issuer,
      redirectUri: callback,
      operators: ['operator'],
      pendingTtlMs: ttl,
      now: () => now,
    });
  const sign = await register(60_000);
  const b = new Browser();
  const back = await b.throughProvider(sign.begin('/'), 'operator', callback);
  now += 61_000;
  await t.rejects(sign.finish(Object.fromEntries(new URL(back).searchParams)), {
    code: 'OIDC_STATE_INVALID',
  });

  // A sign-in finished after its ID token expired (the provider's ID tokens live 1 h).
  now = Date.now();
  const late = await register(3 * 3_600_000);
  const back2 = await new Browser().throughProvider(late.begin('/'), 'operator', callback);
  now += 2 * 3_600_000;
  await t.rejects(late.finish(Object.fromEntries(new URL(back2).searchParams)), {
    code: 'OIDC_ID_TOKEN_INVALID',
    message: /"exp"/,
  });
});

t.test(
  'registration needs a reachable provider that names itself and lets clients register',
  async (t) => {
    const base = { redirectUri: 'http://127.0.0.1:1/auth/callback', operators: ['operator'] };
    await t.rejects(OidcSignIn.register({ ...base, issuer: 'http://127.0.0.1:1/oauth' }), {
      code: 'OIDC_PROVIDER_UNREACHABLE',
      message: /cannot reach http:\/\/127\.0\.0\.1:1\/oauth\/\.well-known\/openid-configuration/,
    });
    const issuer = await provider(t);
    await t.rejects(
      OidcSignIn.register({ ...base, issuer, operators: [] }),
      /at least one operator/,
    );
    await t.rejects(
      OidcSignIn.register({ ...base, issuer: `${issuer}/nope` }),
      /OIDC discovery failed .* \(HTTP 404\)/,
    );
    await t.rejects(
      OidcSignIn.register({ ...base, issuer, redirectUri: 'not a url' }),
      /OIDC client registration at .* failed \(HTTP 400\)/,
    );
  },
);

t.test('the setting: SVC_CONSOLE_AUTH and its companions, malformed ones refused', async (t) => {
  const cfg = (env: Record<string, string>) => loadConfig({ LOG_LEVEL: 'silent', ...env });
  const builtIn = 'http://127.0.0.1:3001/oauth';
  t.equal(consoleOidcFromConfig(cfg({}), builtIn), null, 'the token form by default');
  t.same(
    consoleOidcFromConfig(cfg({ SVC_CONSOLE_AUTH: 'oidc', SVC_OAUTH_DEV_LOGIN: '1' }), builtIn),
    { issuer: builtIn },
  );
  // Issue 21: the built-in provider's sign-in is off unless asked for by name.
  t.throws(() => consoleOidcFromConfig(cfg({ SVC_CONSOLE_AUTH: 'oidc' }), builtIn), {
    message: /needs its development sign-in, SVC_OAUTH_DEV_LOGIN=1/,
  });
  t.same(
    consoleOidcFromConfig(
      cfg({
        SVC_CONSOLE_AUTH: 'oidc',
        SVC_CONSOLE_OIDC_ISSUER: 'https://id.example/realms/ops',
        SVC_CONSOLE_OPERATORS: 'alice,bob@example.com',
      }),
      builtIn,
    ),
    { issuer: 'https://id.example/realms/ops', operators: ['alice', 'bob@example.com'] },
  );
  t.throws(() => consoleOidcFromConfig(cfg({ SVC_CONSOLE_AUTH: 'oidc' }), null), {
    message: /needs SVC_CONSOLE_OIDC_ISSUER/,
  });
  t.throws(
    () => consoleOidcFromConfig(cfg({ SVC_CONSOLE_AUTH: 'oidc', NODE_ENV: 'production' }), builtIn),
    { message: /demo, off with NODE_ENV=production/ },
  );
  t.throws(() => cfg({ SVC_CONSOLE_AUTH: 'password' }), /SVC_CONSOLE_AUTH/);
  t.throws(() => cfg({ SVC_CONSOLE_OIDC_ISSUER: 'not a url' }), /SVC_CONSOLE_OIDC_ISSUER/);
  t.throws(() => cfg({ SVC_CONSOLE_OPERATORS: 'alice,,bob' }), /SVC_CONSOLE_OPERATORS/);
  t.throws(() => cfg({ SVC_CONSOLE_OPERATORS: 'alice, bob' }), /SVC_CONSOLE_OPERATORS/);
});
