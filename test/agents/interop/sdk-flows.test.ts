/**
 * The SDK's typed client (`@adcp/sdk` AdCPClient) completing the spec's typical creative,
 * signal and sales flows against the agents as `svc start` builds them (SVC_BRAND=adcp),
 * once over MCP and once over A2A, with the same results; the signal activation's task
 * webhook is verified with the SDK's own RFC 9421 webhook verifier against the seller's
 * published JWKS.
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
  // Virtual time at 3600x: a signal's 60-minute activation takes about a second.
  const service = await startAdcpService(t, { clockSpeed: 3600 });
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

    // Sales: the brief's products.
    const sales = client.agent('sales');
    const products = ok(
      await sales.getProducts({
        buying_mode: 'brief',
        brief: 'sports fans on connected TV',
        brand: { domain: 'acme.example' },
      } as never),
      'get_products',
    ) as { products: Array<{ product_id: string }> };
    out.products = products.products.map((p) => p.product_id);
    t.ok((out.products as unknown[]).length > 0, `${protocol}: products found`);
  }
  t.same(results.a2a, results.mcp, 'A2A and MCP give the same results');
});
