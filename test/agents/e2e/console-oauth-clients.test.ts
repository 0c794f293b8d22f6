/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * Issue 21 item 1, the console side: svc start's seller console binds and unbinds
 * registered OAuth clients (the OAuth clients page and `/api/oauth-clients`), audited under
 * the console's operator;
 * malformed and unknown inputs are clear 400/404s; anonymous callers get nothing.
 */
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { bindingAudit } from '../../../agents/oauth/bindings.js';
import { createPool } from '../../../shared/infra/pg.js';
import { DATABASE_URL } from '../../helpers/db.js';
import { signIn } from '../../sender/console/helpers.js';
import { startService } from './support.js';

t.setTimeout(120_000);

t.test('the seller console binds OAuth clients, audited', async (t) => {
  const { service, agentsSchema } = await startService(t);
  const c = service.console!;
  const token = JSON.parse(await readFile(c.credentialsFile!, 'utf8')).console.token as string;
  const reg = await fetch(`${service.urls.sales}/oauth/register`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${service.oauth!.initialAccessToken}`,
    },
    body: JSON.stringify({
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    }),
  });
  const client = (await reg.json()) as any;
  t.equal(reg.status, 201);
  const api = (path: string, body?: unknown, auth = `Bearer ${token}`) =>
    fetch(`${c.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  t.equal(
    (await api('/api/oauth-clients', undefined, 'Bearer not-the-token-at-all-x')).status,
    401,
  );
  const bad: Array<[unknown, number, string]> = [
    [
      { agent: 'billing', client_id: client.client_id, principal_id: 'demo-buyer' },
      400,
      'VALIDATION_ERROR',
    ],
    [
      { agent: 'sales', client_id: "x' OR 1=1", principal_id: 'demo-buyer' },
      400,
      'VALIDATION_ERROR',
    ],
    [{ agent: 'sales', client_id: client.client_id }, 400, 'VALIDATION_ERROR'],
    [
      { agent: 'sales', client_id: client.client_id, principal_id: 'nobody' },
      404,
      'REFERENCE_NOT_FOUND',
    ],
  ];
  for (const [body, status, code] of bad) {
    const r = await api('/api/oauth-clients/bind', body);
    t.equal(r.status, status, JSON.stringify(body));
    t.equal(((await r.json()) as any).error.code, code);
  }
  const bound = await api('/api/oauth-clients/bind', {
    agent: 'sales',
    client_id: client.client_id,
    principal_id: 'demo-buyer',
  });
  t.equal(bound.status, 200);
  const list = (await (await api('/api/oauth-clients')).json()) as any;
  t.match(
    list.items.find((i: any) => i.client_id === client.client_id),
    { principal_id: 'demo-buyer', expires_at: null },
  );
  t.equal(
    (await api('/api/oauth-clients/unbind', { agent: 'sales', client_id: client.client_id }))
      .status,
    200,
  );

  // The same action in the console's pages: a form per client, CSRF-protected.
  const web = await signIn(c.url, token);
  const before = await (await web.get('/oauth-clients')).text();
  t.match(before, /<a href="\/oauth-clients"/, 'in the navigation');
  t.match(before, client.client_id, 'the registered client is listed');
  t.match(before, /nobody \(expires/, 'acting as nobody until bound');
  const form = { agent: 'sales', client_id: client.client_id, principal_id: 'demo-buyer' };
  t.equal((await web.post('/oauth-clients/bind', form)).status, 403, 'no CSRF token: refused');
  const posted = await web.post('/oauth-clients/bind', { ...form, _csrf: web.csrf });
  t.equal(posted.status, 302);
  t.equal(posted.headers.get('location'), '/oauth-clients?done=bind');
  const after = await (await web.get('/oauth-clients?done=bind')).text();
  t.match(after, /Bound\./);
  t.match(after, /<td>\s*demo-buyer\s*<\/td>/, 'now acting as the principal');
  const unknown = await web.post('/oauth-clients/bind', {
    ...form,
    principal_id: 'nobody-here',
    _csrf: web.csrf,
  });
  t.equal(unknown.status, 404, 'an unknown principal: a clear 404 page');
  t.match(await unknown.text(), /REFERENCE_NOT_FOUND|not found|no principal/i);
  const unbound = await web.post('/oauth-clients/unbind', {
    agent: 'sales',
    client_id: client.client_id,
    _csrf: web.csrf,
  });
  t.equal(unbound.status, 302);

  const pool = createPool({ connectionString: DATABASE_URL, max: 1 });
  t.teardown(() => pool.end());
  const audit = await bindingAudit(pool, agentsSchema);
  t.same(
    audit.map((a) => [a.action, a.actor, a.via]),
    [
      ['unbind', 'operator', 'console'],
      ['bind', 'operator', 'console'],
      ['unbind', 'operator', 'console'],
      ['bind', 'operator', 'console'],
    ],
  );
});
