/**
 * Bounds for the node:http server a receiver listens on (the sidecar's, or the buyer's own
 * behind the Koa middleware or `nodeListener`): how many connections it keeps open, how long
 * a request head may take, and a backstop on the whole request. Node checks the head and
 * request timeouts only every `connectionsCheckingInterval` (30 s by default, so a bound of
 * 10 s fired up to 30 s late); here the interval follows the bounds, so each fires within a
 * second of its value. The body's own bounds (idle, total deadline, in-flight budget) are the
 * receiver's options. Fairness between clients (a per-address cap, idle connections closed
 * first near the cap) is connection-guard.ts, installed here.
 */
import type { Server } from 'node:http';
import { ConnectionGuard, type ShedReason } from './connection-guard.js';

export interface ServerLimits {
  /** Open connections of this process; more are closed on arrival (default 1024). */
  maxConnections?: number;
  /**
   * Open connections per client address, IPv6 per /64 (default 256, at most
   * `maxConnections`). At the cap the address's oldest idle connection makes room; near
   * `maxConnections`, idle connections of the largest holder are closed first, so other
   * clients (and /healthz, /metrics) keep getting in (connection-guard.ts).
   */
  maxConnectionsPerAddress?: number;
  /** Told of each connection the per-address and near-capacity rules close. */
  onShed?: (reason: ShedReason) => void;
  /** Longest time to receive a request head (default 10 s); then 408 and close. */
  headersTimeoutMs?: number;
  /**
   * Longest time to receive a whole request (default 31 s: the 10 s head bound plus the
   * receiver's 20 s body deadline and 1 s of slack); then 408 and close.
   */
  requestTimeoutMs?: number;
  /** How long an idle keep-alive connection stays open (default 5 s). */
  keepAliveTimeoutMs?: number;
}

export const DEFAULT_MAX_CONNECTIONS = 1024;
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 31_000;

function positive(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer`);
  return v;
}

/** The check interval that keeps every bound within a second (and a quarter) of its value. */
export function checkingIntervalFor(headersTimeoutMs: number, requestTimeoutMs: number): number {
  return Math.min(1000, Math.max(50, Math.floor(Math.min(headersTimeoutMs, requestTimeoutMs) / 4)));
}

/**
 * Applies the limits to a server that is not listening yet (Node reads the check interval
 * when it starts listening). Call it between `createServer()` and `listen()`.
 */
export function limitServer(server: Server, limits: ServerLimits = {}): ConnectionGuard {
  if (server.listening) {
    throw new Error('limitServer: apply the limits before server.listen()');
  }
  const headers = positive(
    'headersTimeoutMs',
    limits.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
  );
  const request = positive(
    'requestTimeoutMs',
    limits.requestTimeoutMs ?? Math.max(DEFAULT_REQUEST_TIMEOUT_MS, headers),
  );
  if (headers > request) throw new RangeError('headersTimeoutMs must not exceed requestTimeoutMs');
  server.maxConnections = positive(
    'maxConnections',
    limits.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
  );
  const perAddress = Math.min(
    server.maxConnections,
    positive(
      'maxConnectionsPerAddress',
      limits.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    ),
  );
  server.headersTimeout = headers;
  server.requestTimeout = request;
  server.keepAliveTimeout = positive('keepAliveTimeoutMs', limits.keepAliveTimeoutMs ?? 5_000);
  // Not in @types/node's Server properties, but read by Node when listening starts.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval =
    checkingIntervalFor(headers, request);
  return new ConnectionGuard(server, {
    maxConnections: server.maxConnections,
    maxPerAddress: perAddress,
    ...(limits.onShed ? { onShed: limits.onShed } : {}),
  });
}
