/**
 * The seller worker's Prometheus endpoint (`svc worker --metrics-listen host:port`): GET
 * /metrics on its own small HTTP server, off unless asked for. A bare port binds loopback
 * only, so the metrics (origins' shard depths, delivery counts) are never public by mistake.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidArgumentError } from 'commander';
import type { Registry } from 'prom-client';

/** `host:port`, `[v6]:port` or a bare port (loopback); commander's parser for the flag. */
export function parseMetricsListen(value: string): { host: string; port: number } {
  const bare = /^\d{1,5}$/.test(value);
  const m = bare ? null : /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(value);
  const port = Number(bare ? value : (m?.[2] ?? NaN));
  if ((!bare && !m) || !(port >= 0 && port <= 65535)) {
    throw new InvalidArgumentError(
      `"${value}" is not host:port or a port 0-65535 (e.g. 127.0.0.1:9464)`,
    );
  }
  return { host: bare ? '127.0.0.1' : m![1]!.replace(/^\[|\]$/g, ''), port };
}

/** Serves `registry` at /metrics (404 elsewhere, 405 for other methods); resolves once listening. */
export async function serveMetrics(
  registry: Registry,
  at: { host: string; port: number },
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(503, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address() as AddressInfo;
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return { server, url: `http://${host}:${a.port}/metrics` };
}
