/**
 * The bench's receiver, in its own process: answers 200 to every POST and records the
 * enqueue-to-receipt latency from the `context.bench_t0` the sender echoes.
 * GET /count returns { count }; GET /stats adds the latencies (ms); GET /reset clears.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let count = 0;
let latencies: number[] = [];
// bench_i -> receipt time (Unix ms), for the per-stage breakdown.
let arrivals: Record<string, number> = {};
const now = () => performance.timeOrigin + performance.now();

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    if (req.url === '/reset') {
      count = 0;
      latencies = [];
      arrivals = {};
      res.end('{}');
      return;
    }
    res.setHeader('content-type', 'application/json');
    // Polled often: the count alone, so polling costs the receiver nothing.
    res.end(JSON.stringify(req.url === '/count' ? { count } : { count, latencies, arrivals }));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    count++;
    try {
      const t = now();
      const context = JSON.parse(Buffer.concat(chunks).toString()).context;
      if (typeof context?.bench_t0 === 'number') latencies.push(t - context.bench_t0);
      if (typeof context?.bench_i === 'number') arrivals[context.bench_i] = t;
    } catch {
      // not a bench payload
    }
    res.writeHead(200, { 'content-length': '0' });
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
