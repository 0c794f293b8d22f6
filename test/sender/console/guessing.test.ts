/**
 * Issue 21 item 7 over real HTTP: every failed credential counts in the console's one
 * limiter whatever its channel (a wrong `Authorization: Bearer` as a wrong form token),
 * so bearer guessing locks the address out like form guessing does; and an operator's
 * sign-in in progress survives a flood of 10,100 anonymous sign-in starts from elsewhere.
 */
import t from 'tap';
import { ConsoleActions } from '../../../sender/console/actions.js';
import { listenConsole } from '../../../sender/console/server.js';
import { ConsoleStore } from '../../../sender/console/store.js';
import { ConsoleAuth } from '../../../shared/console/auth.js';
import { OidcSignIn } from '../../../shared/console/oidc.js';
import { testDatabase } from '../../helpers/db.js';
import { Browser, startBuiltInProvider as provider } from './helpers.js';

const TOKEN = 'guessing-test-console-token-0123456789';

t.test('wrong bearer tokens and wrong form tokens share one limiter', async (t) => {
  const { pool, schema } = testDatabase(t, 'cguess');
  const server = await listenConsole({
    store: new ConsoleStore(pool, schema),
    actions: new ConsoleActions(pool, null as never, schema),
    auth: new ConsoleAuth({ token: TOKEN, loginAttempts: 5 }),
    oidc: null,
  });
  t.teardown(() => server.close());
  const api = (token: string) =>
    fetch(`${server.url}/api/deliveries`, { headers: { authorization: `Bearer ${token}` } });
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await api(`wrong-token-${i}-padding`)).status);
  t.same(statuses, [401, 401, 401, 401, 401]);
  const locked = await api(TOKEN);
  t.equal(locked.status, 429, 'the address is locked out, even with the right token');
  t.ok(Number(locked.headers.get('retry-after')) > 0);
  const form = await fetch(`${server.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
    body: new URLSearchParams({ token: TOKEN, next: '/deliveries' }).toString(),
  });
  t.equal(form.status, 429, 'the form is locked by bearer guesses too');
  for (const bad of ['', ' ', 'x'.repeat(10_000)]) {
    const r = await fetch(`${server.url}/api/deliveries`, {
      headers: { authorization: `Bearer ${bad}` },
    });
    t.ok([401, 429].includes(r.status), `malformed bearer ${bad.length}: ${r.status}`);
  }
});

t.test('a sign-in in progress survives 10,100 anonymous starts', async (t) => {
  const issuer = await provider(t);
  const callback = 'http://127.0.0.1:9/auth/callback';
  const sign = await OidcSignIn.register({
    issuer,
    redirectUri: callback,
    operators: ['operator'],
  });
  const mine = sign.begin('/deliveries', '10.1.1.1');
  for (let i = 0; i < 10_100; i++) sign.begin('/', '10.6.6.6');
  const back = await new Browser().throughProvider(mine, 'operator', callback);
  const done = await sign.finish(Object.fromEntries(new URL(back).searchParams));
  t.same(done, { operator: 'operator', next: '/deliveries' });
  // The flooding address keeps only its newest few: its first start is gone.
  const flooded = sign.begin('/', '10.6.6.6');
  t.ok(flooded, 'the flooder still gets a sign-in (its own oldest went)');
});
