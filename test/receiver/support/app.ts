/** A stand-in for the buyer's app behind the sidecar: records what it is forwarded. */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AppHit {
  headers: IncomingMessage['headers'];
  body: string;
}

export async function startApp(
  behaviour: (hit: AppHit) => Promise<number> | number = () => 200,
): Promise<{ url: string; hits: AppHit[]; server: Server; close(): Promise<void> }> {
  const hits: AppHit[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const hit = { headers: req.headers, body: Buffer.concat(chunks).toString() };
      const status = await behaviour(hit);
      if (status >= 200 && status < 300) hits.push(hit);
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/events`,
    hits,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
