/**
 * Bounds for the node:http server a receiver listens on (the sidecar's, or the buyer's own
 * behind the Koa middleware or `nodeListener`): how many connections it keeps open, how long
 * a request head may take, and a backstop on the whole request. Node checks the head and
 * request timeouts only every `connectionsCheckingInterval` (30 s by default, so a bound of
 * 10 s fired up to 30 s late); here the interval follows the bounds, so each fires within a
 * second of its value. The body's own bounds (idle, total deadline, in-flight budget) are the
 * receiver's options.
 */
import type { Server } from 'node:http';

export interface ServerLimits {
  /** Open connections of this process; more are closed on arrival (default 1024). */
  maxConnections?: number;
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
export function limitServer(server: Server, limits: ServerLimits = {}): void {
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
  server.headersTimeout = headers;
  server.requestTimeout = request;
  server.keepAliveTimeout = positive('keepAliveTimeoutMs', limits.keepAliveTimeoutMs ?? 5_000);
  // Not in @types/node's Server properties, but read by Node when listening starts.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval =
    checkingIntervalFor(headers, request);
}
