/**
 * `npm run bench -- agents`: the agents over MCP (official SDK client and server,
 * Streamable HTTP, real Koa servers on 127.0.0.1, PostgreSQL). Reports calls/s of
 * `get_products` and `create_media_buy` at a fixed concurrency, and p50/p99 latency at a
 * fixed request rate, including `list_creative_formats` at 200 calls/s (target p99 < 20 ms).
 * Bounded: every phase has a call count and a wall-clock cap. Notifications are silent
 * (the sender has its own suite). Args: `[seconds per fixed-rate phase, default 5]`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { brandProfile } from '../shared/brand.js';
import { createPool, dropSchema, LOCAL_DATABASE_URL } from '../shared/infra/pg.js';
import { AGENT_KINDS, type AgentKind } from '../agents/auth/principal.js';
import { AgentClient } from '../agents/client/agent-client.js';
import { silentNotifications } from '../agents/runtime/silent-notifications.js';
import { createAgentApp } from '../agents/server/agent-app.js';
import { createAgentsCore } from '../agents/service.js';

const DATABASE_URL = process.env.DATABASE_URL ?? LOCAL_DATABASE_URL;

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function throughput(
  n: number,
  width: number,
  capMs: number,
  call: (i: number) => Promise<unknown>,
): Promise<{ done: number; perSecond: number }> {
  let next = 0;
  let done = 0;
  const start = performance.now();
  const deadline = start + capMs;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n && performance.now() < deadline) {
        await call(next++);
        done++;
      }
    }),
  );
  return { done, perSecond: done / ((performance.now() - start) / 1000) };
}

async function fixedRate(
  rate: number,
  seconds: number,
  call: (i: number) => Promise<unknown>,
): Promise<{ sent: number; failed: number; p50: number; p99: number; max: number }> {
  const n = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const latencies: number[] = [];
  let failed = 0;
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t0 = performance.now();
    pending.push(
      call(i).then(
        () => {
          latencies.push(performance.now() - t0);
        },
        () => {
          failed++;
        },
      ),
    );
  }
  await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 30_000).unref())]);
  latencies.sort((a, b) => a - b);
  return {
    sent: n,
    failed,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    max: latencies.at(-1) ?? NaN,
  };
}

export async function run(args: string[]): Promise<void> {
  const seconds = Math.min(Math.max(Number(args[0] ?? 5) || 5, 1), 30);
  const pool = createPool({ connectionString: DATABASE_URL, max: 20 });
  const schema = `bench_agents_${randomBytes(4).toString('hex')}`;
  const servers: Server[] = [];
  const clients: AgentClient[] = [];
  const profile = brandProfile('svc');
  try {
    const urls = {} as Record<AgentKind, string>;
    const handlers = {} as Record<AgentKind, Parameters<typeof createServer>[1]>;
    for (const agent of AGENT_KINDS) {
      const server = createServer((req, res) => handlers[agent]!(req, res));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      servers.push(server);
      urls[agent] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }
    const core = await createAgentsCore({
      pool,
      schema,
      profile,
      notifications: silentNotifications,
      settings: { urls, previewBaseUrl: `${urls.creative}/previews`, approval: 'never' },
    });
    for (const agent of AGENT_KINDS) {
      handlers[agent] = createAgentApp({ agent, core, profile }).callback();
    }
    const creds = await core.demoCredentials();
    const key = creds.find((c) => c.agent === 'sales' && c.principal_id === 'demo-buyer')!.api_key;
    const sales = new AgentClient({ agentUrl: urls.sales, apiKey: key });
    const creative = new AgentClient({ agentUrl: urls.creative });
    clients.push(sales, creative);
    await sales.connect();
    await creative.connect();

    const products = (i: number) =>
      sales.call('get_products', {
        brief: i % 2 ? 'sports fans on connected TV' : 'news readers, display and video',
        brand_manifest: { url: 'https://acme.example' },
      });
    const end = new Date(Date.now() + 7 * 86400_000).toISOString();
    const buy = (i: number) =>
      sales
        .call('create_media_buy', {
          buyer_ref: `bench-${i}-${randomBytes(3).toString('hex')}`,
          brand_manifest: { url: 'https://acme.example' },
          packages: [
            {
              buyer_ref: 'p',
              product_id: 'video_olv_news',
              pricing_option_id: 'olv_news_cpm',
              budget: 1000,
            },
          ],
          start_time: { type: 'asap' },
          end_time: end,
        })
        .then((r) => {
          if (!r.ok) throw new Error(JSON.stringify(r.body));
          return r;
        });
    const formats = () => creative.call('list_creative_formats', {});

    // Warm-up (JIT, pool, keep-alive).
    await throughput(50, 4, 10_000, products);
    await throughput(20, 4, 10_000, buy);
    await throughput(50, 4, 10_000, formats);

    const rows: string[][] = [];
    const tp = async (name: string, n: number, call: (i: number) => Promise<unknown>) => {
      const r = await throughput(n, 8, 20_000, call);
      rows.push([
        name,
        `${r.done} calls, 8 in flight`,
        `${r.perSecond.toFixed(0)} calls/s`,
        '',
        '',
      ]);
    };
    const fr = async (name: string, rate: number, call: (i: number) => Promise<unknown>) => {
      const r = await fixedRate(rate, seconds, call);
      rows.push([
        name,
        `${rate}/s for ${seconds} s (${r.sent} calls, ${r.failed} failed)`,
        '',
        `${r.p50.toFixed(1)} ms`,
        `${r.p99.toFixed(1)} ms`,
      ]);
    };
    await tp('get_products', 1000, products);
    await tp('create_media_buy', 500, buy);
    await fr('get_products', 50, products);
    await fr('create_media_buy', 50, buy);
    await fr('list_creative_formats (creative agent)', 200, formats);

    process.stdout.write('\n| MCP call | load | throughput | p50 | p99 |\n|---|---|---|---|---|\n');
    for (const r of rows) process.stdout.write(`| ${r.join(' | ')} |\n`);
    process.stdout.write('\ntarget: list_creative_formats p99 < 20 ms at 200 calls/s\n');
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
    await dropSchema(pool, schema).catch(() => {});
    await pool.end();
  }
}
