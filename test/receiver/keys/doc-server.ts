/**
 * A real HTTP server on 127.0.0.1 serving documents whose content and behaviour a test
 * changes as it goes (rotation, slowness, breakage), counting hits per path.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface DocServer {
  origin: string;
  url(path: string): string;
  json(path: string, value: unknown, headers?: Record<string, string>): void;
  raw(path: string, body: string | Buffer, status?: number): void;
  /** Answers after `ms` (or never, if the client gives up first). */
  slow(path: string, ms: number, value: unknown): void;
  handle(path: string, handler: Handler): void;
  hits(path: string): number;
}

export async function docServer(t: Teardown): Promise<DocServer> {
  const routes = new Map<string, Handler>();
  const counts = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const h = routes.get(path);
    if (!h) {
      res.writeHead(404).end();
      return;
    }
    h(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    url: (path) => `${origin}${path}`,
    json(path, value, headers = {}) {
      const body = JSON.stringify(value);
      routes.set(path, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(body);
      });
    },
    raw(path, body, status = 200) {
      routes.set(path, (_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(body);
      });
    },
    slow(path, ms, value) {
      routes.set(path, (_req, res) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!res.destroyed) res.writeHead(200).end(JSON.stringify(value));
        }, ms);
        timers.add(timer);
      });
    },
    handle(path, handler) {
      routes.set(path, handler);
    },
    hits: (path) => counts.get(path) ?? 0,
  };
}

/** A clock the test moves by hand (ms). */
export function manualClock(start = 1_800_000_000_000): {
  now: () => number;
  advance(ms: number): void;
} {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}
