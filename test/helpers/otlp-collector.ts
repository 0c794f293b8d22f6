/**
 * A stand-in OTLP/HTTP collector on loopback for the tracing tests: keeps the body of every
 * request posted to /v1/traces (JSON, the exporter's default) and answers 200.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

interface T {
  teardown(fn: () => unknown): void;
}

export async function otlpCollector(t: T): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}
