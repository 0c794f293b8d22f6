/**
 * A loopback TCP proxy a test can cut and restore, to take a shared server (a broker, Redis)
 * "down" for one client without touching the server others use.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Closes every proxied connection and stops listening: the target looks down. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function tcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server;
  const listen = (port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server = createServer((client) => {
        const upstream = connect(targetPort, targetHost);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => {});
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : port);
      });
    });
  const port = await listen(0);
  const stop = async (): Promise<void> => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return {
    port,
    cut: stop,
    restore: async () => {
      await listen(port);
    },
    close: async () => {
      if (server.listening) await stop();
    },
  };
}
