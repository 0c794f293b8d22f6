/**
 * `--agent` against our own sales agent: the kit drives create_media_buy over MCP with a
 * push_notification_config pointing at itself, and grades the webhooks the whole seller
 * side (task runtime, NotificationCore, outbox, BullMQ worker) emits, plus the keys it
 * publishes through brand.json.
 */
import t from 'tap';
import { McpAgentDriver } from '../../../conformance/grade-sender/driver.js';
import { gradeSender } from '../../../conformance/grade-sender/grade-sender.js';
import { startService } from '../../agents/e2e/support.js';
import { profile } from '../support/receivers.js';

t.test('our sales agent, driven over MCP, scores every check', async (t) => {
  const { service } = await startService(t);
  const sales = service.urls.sales;
  const apiKey = service.credentials.find(
    (c) => c.agent === 'sales' && c.principal_id === 'demo-buyer',
  )!.api_key;
  const report = await gradeSender({
    profile,
    protocolVersion: '3.2',
    driver: new McpAgentDriver(sales, {
      headers: { 'x-api-key': apiKey },
      createMediaBuy: {
        buyer_ref: 'conformance',
        brand_manifest: { url: 'https://acme.example' },
        packages: [
          {
            buyer_ref: 'pkg-ctv',
            product_id: 'ctv_premium_sports',
            pricing_option_id: 'ctv_sports_cpm',
            budget: 24000,
          },
        ],
        start_time: { type: 'asap' },
        end_time: new Date(service.core.clock.nowMs() + 30 * 86400_000).toISOString(),
      },
    }),
    keys: { agentUrl: sales, allowLoopback: true },
    stepTimeoutMs: 30_000,
    quietMs: 3000,
  });
  t.same(
    report.checks
      .filter((c) => c.status !== 'passed')
      .map((c) => `${c.id} [${c.status}]: ${c.detail}`),
    [],
  );
});
