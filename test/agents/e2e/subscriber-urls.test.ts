/* eslint-disable @typescript-eslint/no-explicit-any -- wire bodies are read loosely */
/**
 * Issue 21 item 4 against the whole seller side (svc start's service, real sender rules,
 * real PostgreSQL and Redis): every URL a principal registers (agent- and account-level
 * notification configs, push_notification_config) is checked with the sender's rules at
 * registration, refused as INVALID_REQUEST naming the field (dry runs too); and a
 * subscriber the sender refuses at delivery time (stored before the check) never stops
 * another subscriber's capabilities.changed.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { AgentClient } from '../../../agents/client/agent-client.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startService } from './support.js';

t.setTimeout(180_000);

const HOSTILE = [
  'http://169.254.169.254/latest/meta-data/',
  'https://10.0.0.5/hook',
  'http://[::1]:9/hook',
  'https://user:pw@hooks.example/x',
  'http://hooks.example/plain-http',
  'ftp://hooks.example/x',
  'not a url',
];

t.test('registration-time URL checks, then an isolated fan-out', async (t) => {
  const { service, senderSchema, agentsSchema } = await startService(t);
  const { urls } = service;
  const key = (agent: string) =>
    service.credentials.find((c) => c.agent === agent && c.principal_id === 'demo-buyer')!.api_key;
  const signals = new AgentClient({ agentUrl: urls.signals, apiKey: key('signals') });
  const sales = new AgentClient({ agentUrl: urls.sales, apiKey: key('sales') });
  t.teardown(() => Promise.all([signals.close(), sales.close()]));

  for (const url of HOSTILE) {
    for (const dry of [false, true]) {
      const r = await signals.call('sync_agent_notification_configs', {
        notification_configs: [
          { subscriber_id: 'evil', url, event_types: ['capabilities.changed'] },
        ],
        ...(dry ? { dry_run: true } : {}),
      });
      const e = (r.body as any).errors?.[0] ?? (r.body as any).error;
      t.match(
        e,
        { code: /^(INVALID_REQUEST|VALIDATION_ERROR)$/, field: /^notification_configs\[0\]\.url$/ },
        `agent-level ${url}${dry ? ' (dry run)' : ''}`,
      );
    }
    const acct = await sales.call('sync_accounts', {
      idempotency_key: randomUUID(),
      accounts: [
        {
          brand: { domain: 'acme.example' },
          operator: 'acme.example',
          billing: 'operator',
          notification_configs: [
            { subscriber_id: 'evil', url, event_types: ['creative.status_changed'] },
          ],
        },
      ],
    });
    const body = acct.body as any;
    const err = body.errors?.[0] ?? body.accounts?.[0]?.errors?.[0];
    t.match(
      err,
      { code: /^(INVALID_REQUEST|VALIDATION_ERROR)$/, field: /notification_configs\[0\]\.url$/ },
      `account-level ${url}`,
    );
  }

  // A good subscriber registers; a hostile config is stored as one registered before the
  // check would be. The fan-out still reaches the good one.
  // A subscriber that answers 200 to every delivery and counts them.
  const received: string[] = [];
  const sink = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(body);
      res.end();
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (sink.closeAllConnections(), sink.close(() => r()))));
  const rx = { url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}` };
  const good = await signals.call('sync_agent_notification_configs', {
    notification_configs: [
      { subscriber_id: 'good', url: `${rx.url}/caps`, event_types: ['capabilities.changed'] },
    ],
  });
  t.equal(good.ok, true, JSON.stringify(good.body));
  const { createPool } = await import('../../../shared/infra/pg.js');
  const { DATABASE_URL } = await import('../../helpers/db.js');
  const pool = createPool({ connectionString: DATABASE_URL, max: 1 });
  t.teardown(() => pool.end());
  await pool.query(
    `INSERT INTO ${agentsSchema}.agent_notification_configs (agent, principal_id, configs)
     VALUES ('signals', 'legacy-principal', $1)`,
    [
      JSON.stringify([
        {
          subscriber_id: 'old-evil',
          url: 'http://169.254.169.254/',
          event_types: ['capabilities.changed'],
          active: true,
        },
      ]),
    ],
  );
  const published = await service.core.publishCapabilitiesChange('signals', 'test');
  t.equal(published.subscribers, 1, 'the refused subscriber is skipped, the good one sent');
  const { rows } = await pool.query<{ subscriber_id: string; target_url: string }>(
    `SELECT subscriber_id, target_url FROM ${senderSchema}.outbox
      WHERE notification_type = 'capabilities.changed'`,
  );
  t.same(
    rows.map((r) => r.subscriber_id),
    ['good'],
    'only the good subscriber has a delivery',
  );
  // And the worker delivers it (the receiver answers 2xx).
  const end = Date.now() + 30_000;
  let state = '';
  while (state !== 'delivered' && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    const { rows: st } = await pool.query<{ state: string }>(
      `SELECT state FROM ${senderSchema}.outbox WHERE subscriber_id = 'good'`,
    );
    state = st[0]?.state ?? '';
  }
  t.equal(state, 'delivered', 'the good subscriber received capabilities.changed');
  t.match(received.join('\n'), /"subscriber_id":"good"/, 'the subscriber got it');
});
