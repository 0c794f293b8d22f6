/**
 * Where an attempt's time went (issue 26, "an attempt in full"): DNS and connect (TCP, and
 * TLS for https) when the attempt opened its connection, or `reused` when it went on a
 * kept-alive one. undici says neither per request, so the transport's connector times its
 * own lookup and connect per socket, and undici's diagnostics channels tie a request to
 * the socket it was written on. Time to first byte and the total are timed by the caller.
 *
 * The tie between one `Transport.post` and undici's request object: undici builds the
 * request synchronously inside `request()` when a connection is free, so `expectRequest`
 * marks the next `undici:request:create` as ours for exactly that synchronous call. A
 * request that waits in the pool's queue (every connection busy) is built later, outside
 * the mark: it gets no DNS/connect figures, never another request's.
 */
import diagnostics from 'node:diagnostics_channel';
import type { Socket } from 'node:net';

export interface AttemptTiming {
  /** Name resolution, when this attempt opened a connection to a host name. */
  dnsMs?: number;
  /** TCP (and TLS) connect, when this attempt opened its connection. */
  connectMs?: number;
  /** True when the attempt went on a kept-alive connection (no DNS, no connect). */
  reused?: boolean;
  /** From the start of the attempt to the response's headers. */
  ttfbMs?: number;
  /** From the start of the attempt to the end of the response read. */
  totalMs?: number;
}

interface SocketTiming {
  dnsMs?: number;
  connectMs: number;
  /** Whether a request has gone on it already (then the next one reuses it). */
  used: boolean;
}

const sockets = new WeakMap<object, SocketTiming>();
const requests = new WeakMap<object, AttemptTiming>();
let expected: AttemptTiming | null = null;

function onCreate(message: unknown): void {
  if (!expected) return;
  requests.set((message as { request: object }).request, expected);
  expected = null;
}

function onSendHeaders(message: unknown): void {
  const { request, socket } = message as { request: object; socket: object };
  const t = requests.get(request);
  if (!t) return;
  const s = sockets.get(socket);
  if (s && !s.used) {
    s.used = true;
    if (s.dnsMs !== undefined) t.dnsMs = round(s.dnsMs);
    t.connectMs = round(s.connectMs);
    t.reused = false;
  } else {
    t.reused = true;
  }
}

let subscribed = false;
function subscribe(): void {
  if (subscribed) return;
  subscribed = true;
  diagnostics.subscribe('undici:request:create', onCreate);
  diagnostics.subscribe('undici:client:sendHeaders', onSendHeaders);
}

/** Milliseconds with one decimal: sub-millisecond loopback steps still show. */
export function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Records how a socket the connector opened came to be (before undici uses it). */
export function socketOpened(socket: Socket, connectMs: number, dnsMs?: number): void {
  sockets.set(socket, { connectMs, ...(dnsMs !== undefined ? { dnsMs } : {}), used: false });
}

/**
 * Runs `start` (which must call undici's `request()` synchronously) with the request it
 * builds tied to `timing`; returns what `start` returns.
 */
export function timed<T>(timing: AttemptTiming, start: () => T): T {
  subscribe();
  expected = timing;
  try {
    return start();
  } finally {
    expected = null;
  }
}
