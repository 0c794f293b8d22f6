/**
 * `npm run bench -- agents-core`: the agents' TaskDispatcher in process (no transport):
 * list_creative_formats latency at a fixed 200 calls/s, then get_products and
 * create_media_buy throughput with 16 callers. Bounded in count and time; the transport
 * suite (`agents`) measures the same over MCP.
 */
import { randomBytes } from 'node:crypto';
import { brandProfile } from '../shared/brand.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { createAgentsCore } from '../agents/service.js';
import { RecordingNotifications } from '../agents/runtime/recording-notifications.js';
import type { InvokeRequest } from '../agents/runtime/types.js';

const DATABASE_URL = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

export async function run(): Promise<void> {
  const pool = createPool({ connectionString: DATABASE_URL, max: 20 });
  const schema = `bench_agents_${randomBytes(4).toString('hex')}`;
  try {
    const core = await createAgentsCore({
      pool,
      schema,
      profile: brandProfile('svc'),
      notifications: new RecordingNotifications(),
      settings: { approval: 'manual' },
    });
    const creds = await core.demoCredentials();
    const apiKey = creds.find(
      (c) => c.agent === 'sales' && c.principal_id === 'demo-buyer',
    )!.api_key;
    const invoke = (r: Omit<InvokeRequest, 'transport'>) =>
      core.dispatcher.invoke({ ...r, transport: 'mcp' });

    // Warm-up (JIT, pool connections), not measured.
    for (let i = 0; i < 300; i++) {
      await invoke({
        agent: 'creative',
        task: 'list_creative_formats',
        params: {},
        credentials: {},
      });
    }
    // Fixed rate: 200 calls/s for 5 s.
    const rate = 200;
    const total = rate * 5;
    const lat: number[] = [];
    const started = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const t0 = performance.now();
      pending.push(
        invoke({
          agent: 'creative',
          task: 'list_creative_formats',
          params: {},
          credentials: {},
        }).then(() => {
          lat.push(performance.now() - t0);
        }),
      );
    }
    await Promise.all(pending);
    lat.sort((a, b) => a - b);
    process.stdout.write(
      `list_creative_formats @ ${rate}/s x ${total}: p50 ${pct(lat, 0.5).toFixed(2)} ms, p99 ${pct(lat, 0.99).toFixed(2)} ms, max ${lat.at(-1)!.toFixed(2)} ms\n`,
    );

    // Closed loop: 16 callers, bounded by count and 10 s.
    const end = new Date(Date.now() + 7 * 86400_000).toISOString();
    const closedLoop = async (
      name: string,
      make: (i: number) => Omit<InvokeRequest, 'transport'>,
      count: number,
    ) => {
      let next = 0;
      const l: number[] = [];
      const deadline = performance.now() + 10_000;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < count && performance.now() < deadline) {
            const i = next++;
            const s = performance.now();
            const r = await invoke(make(i));
            if (r instanceof Error) throw r;
            l.push(performance.now() - s);
          }
        }),
      );
      const secs = (performance.now() - t0) / 1000;
      l.sort((a, b) => a - b);
      process.stdout.write(
        `${name}: ${l.length} calls in ${secs.toFixed(2)} s = ${(l.length / secs).toFixed(0)} calls/s, p50 ${pct(l, 0.5).toFixed(2)} ms, p99 ${pct(l, 0.99).toFixed(2)} ms\n`,
      );
    };
    await closedLoop(
      'get_products (authenticated, brief)',
      () => ({
        agent: 'sales',
        task: 'get_products',
        params: { brief: 'sports fans on connected tv' },
        credentials: { apiKey },
      }),
      3000,
    );
    await closedLoop(
      'create_media_buy (async, 2 packages)',
      (i) => ({
        agent: 'sales',
        task: 'create_media_buy',
        credentials: { apiKey },
        params: {
          buyer_ref: `bench-${i}`,
          brand_manifest: { url: 'https://acme.example' },
          packages: [
            {
              buyer_ref: 'a',
              product_id: 'video_olv_news',
              pricing_option_id: 'olv_news_cpm',
              budget: 5000,
            },
            {
              buyer_ref: 'b',
              product_id: 'display_run_of_network',
              pricing_option_id: 'ron_display_auction',
              budget: 1000,
              bid_price: 4,
            },
          ],
          start_time: { type: 'asap' },
          end_time: end,
          push_notification_config: { url: 'https://buyer.example/hook', operation_id: `op-${i}` },
        },
      }),
      2000,
    );
  } finally {
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  }
}
