// Load generator of `npm run bench -- agents`, run in a worker thread so the client's
// work (fetch, JSON, the MCP client) does not compete with the agents on one event loop.
// Plain JS: worker threads do not inherit the tsx loader.
import { parentPort, workerData } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const clients = {};
async function client(url, apiKey) {
  const k = `${url}|${apiKey ?? ''}`;
  if (!clients[k]) {
    const c = new Client({ name: 'bench', version: '1.0.0' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: apiKey ? { 'x-api-key': apiKey } : {} },
      }),
    );
    clients[k] = c;
  }
  return clients[k];
}

function params(task, i, end) {
  if (task === 'get_products') {
    return {
      brief: i % 2 ? 'sports fans on connected TV' : 'news readers, display and video',
      brand_manifest: { url: 'https://acme.example' },
    };
  }
  if (task === 'create_media_buy') {
    return {
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
    };
  }
  return {};
}

async function call(c, task, i, end) {
  const r = await c.callTool({ name: task, arguments: params(task, i, end) });
  if (r.isError) throw new Error(JSON.stringify(r.structuredContent));
}

function pct(sorted, p) {
  return sorted.length
    ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
    : NaN;
}

async function phase(m) {
  const c = await client(m.url, m.apiKey);
  const end = new Date(Date.now() + 7 * 86400_000).toISOString();
  if (m.mode === 'throughput') {
    let next = 0;
    let done = 0;
    let failed = 0;
    const start = performance.now();
    const deadline = start + m.capMs;
    await Promise.all(
      Array.from({ length: m.width }, async () => {
        while (next < m.n && performance.now() < deadline) {
          const i = next++;
          await call(c, m.task, i, end).then(
            () => done++,
            () => failed++,
          );
        }
      }),
    );
    return { done, failed, perSecond: done / ((performance.now() - start) / 1000) };
  }
  const n = Math.round(m.rate * m.seconds);
  const interval = 1000 / m.rate;
  const latencies = [];
  let failed = 0;
  const pending = [];
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const wait = start + i * interval - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t0 = performance.now();
    pending.push(
      call(c, m.task, i, end).then(
        () => latencies.push(performance.now() - t0),
        () => failed++,
      ),
    );
  }
  await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 30_000).unref())]);
  latencies.sort((a, b) => a - b);
  return { sent: n, failed, p50: pct(latencies, 50), p99: pct(latencies, 99) };
}

parentPort.on('message', async (m) => {
  if (m.type === 'close') {
    for (const c of Object.values(clients)) await c.close().catch(() => {});
    parentPort.close();
    return;
  }
  try {
    parentPort.postMessage({ ok: true, result: await phase(m) });
  } catch (err) {
    parentPort.postMessage({ ok: false, error: String(err?.message ?? err) });
  }
});
void workerData;
