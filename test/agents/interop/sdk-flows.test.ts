/**
 * The SDK's typed client (`@adcp/sdk` AdCPClient) completing the spec's typical creative
 * (formats, build, preview), signal (discover, activate) and sales (products, buy under
 * seller approval, the built creative synced and assigned, delivery) flows against the agents as `svc start` builds them (SVC_BRAND=adcp),
 * once over MCP and once over A2A, with the same results; the signal activation's and the
 * media buy's task webhooks are verified with the SDK's own RFC 9421 webhook verifier
 * against the seller's published JWKS, and the buy's completion is also awaited with the
 * SDK's own poller (AdCP `tasks/get`).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import t, { type Test } from 'tap';
import type * as SigningServer from '@adcp/sdk/signing/server';
import { loadSdk } from './a2a-v03-alias.js';
import { demoToken, startAdcpService } from './support.js';
import { until } from '../e2e/support.js';

const require = createRequire(import.meta.url);
const signing = require('@adcp/sdk/signing/server') as typeof SigningServer;

interface Hook {
  path: string;
  body: Record<string, unknown>;
  verified: boolean;
  error?: string;
}

/** A buyer's webhook endpoint: every POST verified by the SDK against the seller's JWKS. */
async function sdkWebhookReceiver(t: Tap, jwksUrl: string) {
  const { keys } = (await (await fetch(jwksUrl)).json()) as {
    keys: Array<Record<string, unknown>>;
  };
  // The SDK (protocol 3.0.6) accepts only `adcp_use: webhook-signing` on webhook keys; the
  // published 3.1+ rule (supplement §2) is `request-signing`, the older value deprecated but
  // still accepted. Only that label is adapted: tag, components, digest, signature and
  // window are the SDK's own checks.
  const relabelled = keys.map((k) => ({ ...k, adcp_use: 'webhook-signing' }));
  t.ok(
    keys.every((k) => k.adcp_use === 'request-signing'),
    'the seller publishes request-signing keys',
  );
  const verify = signing.createWebhookVerifier({
    jwks: new signing.StaticJwksResolver(relabelled as never),
  });
  const hooks: Hook[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = `http://${req.headers.host}${req.url}`;
      verify({ method: req.method!, url, headers: req.headers, body }).then(
        () => hooks.push({ path: req.url!, body: JSON.parse(body), verified: true }),
        (err: Error) =>
          hooks.push({
            path: req.url!,
            body: JSON.parse(body),
            verified: false,
            error: err.message,
          }),
      );
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hooks };
}

type Flow = Record<string, unknown>;
type Tap = Test;

t.test('typed client flows over MCP and A2A give the same results', async (t) => {
  // Virtual time at 3600x: a signal's 60-minute activation takes about a second, a buy's
  // 10-minute seller approval a fraction of one. A production deployment (no test
  // controller), so the demo buyer's buys go through the seller's approval.
  const service = await startAdcpService(t, {
    clockSpeed: 3600,
    approval: '600',
    testController: false,
  });
  const rx = await sdkWebhookReceiver(t, `${service.urls.sales}/.well-known/jwks.json`);
  const sdk = loadSdk();
  const results: Record<'mcp' | 'a2a', Flow> = { mcp: {}, a2a: {} };
  for (const protocol of ['mcp', 'a2a'] as const) {
    const client = new sdk.AdCPClient(
      (['sales', 'creative', 'signals'] as const).map((agent) => ({
        id: agent,
        name: agent,
        // MCP: the endpoint; A2A: the origin (the SDK reads its agent card).
        agent_uri: protocol === 'mcp' ? `${service.urls[agent]}/mcp` : service.urls[agent],
        protocol,
        auth_token: demoToken(service, agent),
      })),
    );
    const out = results[protocol];
    const ok = <T>(r: { success: boolean; data?: T; error?: string }, what: string): T => {
      t.ok(r.success, `${protocol} ${what}: ${r.error ?? 'ok'}`);
      return r.data as T;
    };

    // Creative: formats -> build (deterministic) -> preview.
    const creative = client.agent('creative');
    const formats = ok(
      await creative.listCreativeFormats({ type: 'display' } as never),
      'list_creative_formats',
    ) as { formats: Array<{ format_id: { agent_url: string; id: string } }> };
    out.formats = formats.formats.map((f) => f.format_id.id);
    const target = formats.formats.find((f) => f.format_id.id === 'display_300x250')!.format_id;
    const built = ok(
      await creative.buildCreative({
        message: 'Run further this spring',
        target_format_id: target,
        brand: { domain: 'acme.example' },
        idempotency_key: `build-${protocol}-0001`,
      } as never),
      'build_creative',
    ) as { creative_manifest: { format_id: unknown; assets: Record<string, unknown> } };
    out.manifest = built.creative_manifest;
    const preview = ok(
      await creative.previewCreative({
        request_type: 'single',
        creative_manifest: built.creative_manifest,
      } as never),
      'preview_creative',
    ) as { response_type: string; previews: Array<{ renders: Array<{ role: string }> }> };
    out.preview = [preview.response_type, preview.previews[0]!.renders.map((r) => r.role)];

    // Signals: discover -> activate with a task webhook -> live.
    const signals = client.agent('signals');
    const ttd = { type: 'platform', platform: 'the-trade-desk' };
    const found = ok(
      await signals.getSignals({
        signal_spec: 'luxury car buyers in market',
        destinations: [ttd],
        countries: ['US'],
      } as never),
      'get_signals',
    ) as {
      signals: Array<{
        signal_agent_segment_id: string;
        pricing_options: Array<{ pricing_option_id: string }>;
      }>;
    };
    out.signals = found.signals.map((s) => [s.signal_agent_segment_id, s.pricing_options]);
    const chosen = found.signals[0]!;
    const destination = protocol === 'mcp' ? ttd : { type: 'platform', platform: 'amazon-dsp' };
    const operationId = `activate-${protocol}`;
    const activated = await signals.activateSignal({
      signal_agent_segment_id: chosen.signal_agent_segment_id,
      destinations: [destination],
      pricing_option_id: chosen.pricing_options[0]!.pricing_option_id,
      idempotency_key: `activate-${protocol}-0001`,
      push_notification_config: {
        url: `${rx.url}/hooks/${operationId}`,
        operation_id: operationId,
      },
    } as never);
    t.notOk(activated.error, `${protocol} activate_signal accepted`);
    await until(
      () =>
        rx.hooks.some((h) => h.path === `/hooks/${operationId}` && h.body.status === 'completed'),
      30_000,
    );
    const done = rx.hooks.filter((h) => h.path === `/hooks/${operationId}`);
    t.ok(
      done.every((h) => h.verified),
      `${protocol}: every task webhook verified by the SDK (${done.map((h) => h.error ?? 'ok').join(', ')})`,
    );
    const final = done.find((h) => h.body.status === 'completed')!.body;
    const result = (final.result ?? final) as {
      deployments?: Array<{ is_live: boolean; activation_key?: { type: string } }>;
    };
    out.activation = result.deployments?.map((d) => [d.is_live, d.activation_key?.type]);

    // Sales: the brief's products -> a buy under timed seller approval, with a task
    // webhook (no operation_id, as the published 3.x buyer sends it) -> the SDK's own
    // poller (AdCP tasks/get) -> the approved buy.
    const sales = client.agent('sales');
    const products = ok(
      await sales.getProducts({
        buying_mode: 'brief',
        brief: 'display banners for performance across the network',
        brand: { domain: 'acme.example' },
      } as never),
      'get_products',
    ) as {
      products: Array<{
        product_id: string;
        format_ids: Array<{ id: string }>;
        pricing_options: Array<{ pricing_option_id: string; floor_price?: number }>;
      }>;
    };
    out.products = products.products.map((p) => p.product_id);
    // A product that takes the creative built above.
    const product = products.products.find((p) => p.format_ids.some((f) => f.id === target.id));
    t.ok(product, `${protocol}: a product for ${target.id} found`);
    const pricing = product!.pricing_options[0]!;
    const hookPath = `/hooks/buy-${protocol}`;
    const created = await sales.createMediaBuy({
      idempotency_key: `buy-${protocol}-0000-0000-0001`,
      brand: { domain: 'acme.example' },
      packages: [
        {
          product_id: product!.product_id,
          pricing_option_id: pricing.pricing_option_id,
          budget: 5000,
          ...(pricing.floor_price !== undefined ? { bid_price: pricing.floor_price * 2 } : {}),
        },
      ],
      start_time: 'asap',
      end_time: new Date(Date.now() + 30 * 86_400_000).toISOString(),
      push_notification_config: { url: `${rx.url}${hookPath}` },
      context: { correlation_id: `buy-${protocol}` },
    } as never);
    t.equal(
      created.status,
      'submitted',
      `${protocol} create_media_buy awaits approval (${created.error ?? created.status})`,
    );
    const submitted = (
      created as unknown as {
        submitted?: { taskId: string; waitForCompletion(ms?: number): Promise<typeof created> };
      }
    ).submitted;
    t.match(submitted?.taskId, /^task_/, `${protocol}: the SDK holds the seller's task id`);
    const finished = await submitted!.waitForCompletion(100);
    const buy = ok(finished, 'create_media_buy completion (SDK poll)') as {
      media_buy_id: string;
      status: string;
      packages: Array<{ package_id: string }>;
    };
    t.match(buy.media_buy_id, /^mb_/, `${protocol}: the approved buy has its id`);
    await until(
      () => rx.hooks.some((h) => h.path === hookPath && h.body.status === 'completed'),
      30_000,
    );
    const buyHooks = rx.hooks.filter((h) => h.path === hookPath);
    t.ok(
      buyHooks.every((h) => h.verified),
      `${protocol}: every buy webhook verified by the SDK (${buyHooks.map((h) => h.error ?? 'ok').join(', ')})`,
    );
    const completedHook = buyHooks.find((h) => h.body.status === 'completed')!.body;
    t.equal(completedHook.task_id, submitted!.taskId, `${protocol}: the webhook names the task`);
    t.equal(
      (completedHook.result as { media_buy_id?: string }).media_buy_id,
      buy.media_buy_id,
      `${protocol}: the webhook and the poll agree`,
    );

    // The built creative into the library, assigned to the buy's package; then delivery.
    const creativeId = `built-${protocol}`;
    // The published 3.x buyer names its account (brand + operator) on sync_creatives.
    const account = { brand: { domain: 'acme.example' }, operator: 'acme.example' };
    const synced = ok(
      await sales.syncCreatives({
        idempotency_key: `sync-${protocol}-0000-0000-0001`,
        account,
        creatives: [
          {
            creative_id: creativeId,
            name: 'Run further this spring',
            format_id: target,
            assets: built.creative_manifest.assets,
          },
        ],
        assignments: [{ creative_id: creativeId, package_id: buy.packages[0]!.package_id }],
      } as never),
      'sync_creatives',
    ) as { creatives: Array<{ creative_id: string; action: string }> };
    out.synced = synced.creatives.map((c) => [c.creative_id.replace(protocol, ''), c.action]);
    const delivery = ok(
      await sales.getMediaBuyDelivery({ media_buy_ids: [buy.media_buy_id] } as never),
      'get_media_buy_delivery',
    ) as { currency: string; media_buy_deliveries: Array<{ media_buy_id: string }> };
    t.same(
      delivery.media_buy_deliveries.map((d) => d.media_buy_id),
      [buy.media_buy_id],
      `${protocol}: the buy's delivery`,
    );
    out.delivery = delivery.currency;
    out.buy = {
      // Task webhooks carry no ordering guarantee (service-spec: at-least-once, may arrive
      // out of order; receivers order by timestamp): compare them in timestamp order.
      statuses: [...buyHooks]
        .sort((a, b) => String(a.body.timestamp).localeCompare(String(b.body.timestamp)))
        .map((h) => h.body.status),
      status: buy.status,
      packages: buy.packages.length,
      task_type: completedHook.task_type,
      operation_id: typeof completedHook.operation_id,
    };
  }
  t.same(results.a2a, results.mcp, 'A2A and MCP give the same results');
});
