/**
 * Proof of control (supplement §7.4) for account- and agent-level subscribers: a signed
 * webhook.challenge to a real receiver on 127.0.0.1, verified there with the webhook
 * profile; failures refuse the whole set and keep the previous one.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ChallengeVerifier } from '../../agents/common/subscriber-proof.js';
import { brandProfile } from '../../shared/brand.js';
import { generateSigningKey, publishedJwk } from '../../shared/signing/keys.js';
import { verifyWebhookSignature } from '../../shared/signing/verify.js';
import { buyer, harness } from './support/core.js';

const profile = brandProfile('svc');

async function challengeReceiver(t: { teardown(fn: () => unknown): void }, publicJwk: object) {
  const seen: Array<Record<string, unknown>> = [];
  let mode: 'echo' | 'token' | 'wrong' | 'error' = 'echo';
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const port = (server.address() as AddressInfo).port;
      let verified = false;
      try {
        await verifyWebhookSignature(
          {
            method: req.method!,
            url: `http://127.0.0.1:${port}${req.url}`,
            headers: req.headers,
            body,
          },
          {
            profile,
            keys: { resolve: async () => ({ jwk: publicJwk as never, senderId: 'seller' }) },
          },
        );
        verified = true;
      } catch {
        verified = false;
      }
      const msg = JSON.parse(body.toString()) as Record<string, unknown>;
      seen.push({ ...msg, verified });
      if (mode === 'error') {
        res.writeHead(500).end();
        return;
      }
      const answer =
        mode === 'echo'
          ? { challenge: msg.challenge }
          : mode === 'token'
            ? { token: msg.challenge }
            : { challenge: 'nope' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    seen,
    setMode: (m: typeof mode) => {
      mode = m;
    },
  };
}

t.test('account subscribers prove control before they take effect', async (t) => {
  const { key } = await generateSigningKey('ed25519');
  const rx = await challengeReceiver(t, publishedJwk(key, profile));
  const h = await harness(t, {
    settings: {
      subscriberVerifier: new ChallengeVerifier({
        key,
        profile,
        allowHosts: ['127.0.0.1'],
        timeoutMs: 2000,
      }),
    },
  });
  const c = buyer(h);
  const cfg = (id: string, extra: Record<string, unknown> = {}) => ({
    subscriber_id: id,
    url: rx.url(`/acct/${id}`),
    event_types: ['creative.status_changed'],
    ...extra,
  });

  const ok = await h.ok(
    'sales',
    'sync_accounts',
    {
      accounts: [
        {
          account_id: 'acct-p',
          name: 'Acme',
          notification_configs: [cfg('s1'), cfg('s2', { active: false })],
        },
      ],
    },
    c,
  );
  t.equal((ok.accounts as Array<{ action: string }>)[0]!.action, 'created');
  t.equal(rx.seen.length, 1, 'paused entries are not challenged');
  t.match(rx.seen[0], {
    type: 'webhook.challenge',
    account_id: 'acct-p',
    subscriber_id: 's1',
    seller_agent_url: 'http://127.0.0.1:3001',
    delivery_auth: { mode: 'rfc9421' },
    event_types: ['creative.status_changed'],
    verified: true,
  });
  t.match(rx.seen[0]!.challenge, /^[A-Za-z0-9_.:-]{32,255}$/);

  // Same binding: no new challenge. A legacy credential changes the binding.
  await h.ok(
    'sales',
    'sync_accounts',
    {
      accounts: [
        {
          account_id: 'acct-p',
          name: 'Acme',
          notification_configs: [cfg('s1'), cfg('s2', { active: false })],
        },
      ],
    },
    c,
  );
  t.equal(rx.seen.length, 1);
  rx.setMode('token');
  await h.ok(
    'sales',
    'sync_accounts',
    {
      accounts: [
        {
          account_id: 'acct-p',
          name: 'Acme',
          notification_configs: [
            cfg('s1', {
              authentication: { schemes: ['HMAC-SHA256'], credentials: 'c'.repeat(40) },
            }),
          ],
        },
      ],
    },
    c,
  );
  t.equal(rx.seen.length, 2, '{token} alias accepted');
  t.match(rx.seen[1], {
    delivery_auth: { mode: 'HMAC-SHA256', credential_fingerprint: /^[0-9a-f]{64}$/ },
  });

  // A wrong answer refuses the whole set; the previous one stays.
  rx.setMode('wrong');
  const refused = await h.err(
    'sales',
    'sync_accounts',
    { accounts: [{ account_id: 'acct-p', name: 'Acme', notification_configs: [cfg('s9')] }] },
    c,
  );
  t.equal(refused.code, 'VALIDATION_ERROR');
  t.equal(refused.field, 'accounts[0].notification_configs[0].url');
  const after = await h.ok('sales', 'list_accounts', {}, c);
  t.same(
    (
      after.accounts as Array<{ notification_configs: Array<{ subscriber_id: string }> }>
    )[0]!.notification_configs.map((x) => x.subscriber_id),
    ['s1'],
  );
  rx.setMode('error');
  t.equal(
    (
      await h.err(
        'sales',
        'sync_accounts',
        { accounts: [{ account_id: 'acct-p', name: 'Acme', notification_configs: [cfg('s8')] }] },
        c,
      )
    ).field,
    'accounts[0].notification_configs[0].url',
  );
  // Unreachable URL.
  const dead = await h.err(
    'sales',
    'sync_accounts',
    {
      accounts: [
        {
          account_id: 'acct-p',
          name: 'Acme',
          notification_configs: [cfg('s7', { url: 'http://127.0.0.1:1/x' })],
        },
      ],
    },
    c,
  );
  t.equal(dead.field, 'accounts[0].notification_configs[0].url');

  // Dry runs send nothing.
  const n = rx.seen.length;
  rx.setMode('echo');
  await h.ok(
    'sales',
    'sync_accounts',
    {
      dry_run: true,
      accounts: [{ account_id: 'acct-p', name: 'Acme', notification_configs: [cfg('s6')] }],
    },
    c,
  );
  await h.call(
    'sales',
    'sync_accounts',
    { accounts: [{ account_id: 'acct-p', name: 'Acme', notification_configs: [cfg('s5')] }] },
    c,
    { dryRun: true },
  );
  t.equal(rx.seen.length, n);
});

t.test('agent subscribers prove control too', async (t) => {
  const { key } = await generateSigningKey('ecdsa-p256-sha256');
  const rx = await challengeReceiver(t, publishedJwk(key, profile));
  const h = await harness(t, {
    settings: {
      subscriberVerifier: new ChallengeVerifier({
        key,
        profile,
        allowHosts: ['127.0.0.1'],
        timeoutMs: 2000,
      }),
    },
  });
  const configs = [
    { subscriber_id: 'caps', url: rx.url('/caps'), event_types: ['capabilities.changed'] },
  ];
  await h.ok(
    'creative',
    'sync_agent_notification_configs',
    { notification_configs: configs },
    buyer(h, 'creative'),
  );
  t.match(rx.seen, [
    {
      scope: 'agent',
      subscriber_id: 'caps',
      seller_agent_url: 'http://127.0.0.1:3002',
      verified: true,
    },
  ]);
  t.notOk('account_id' in rx.seen[0]!);
  await h.ok(
    'creative',
    'sync_agent_notification_configs',
    { notification_configs: configs },
    buyer(h, 'creative'),
  );
  t.equal(rx.seen.length, 1, 'unchanged binding');
  rx.setMode('wrong');
  const e = await h.err(
    'creative',
    'sync_agent_notification_configs',
    { notification_configs: [{ ...configs[0], url: rx.url('/caps2') }] },
    buyer(h, 'creative'),
  );
  t.equal(e.field, 'notification_configs[0].url');
});
