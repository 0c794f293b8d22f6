/**
 * SSRF-safe outbound HTTP (supplement §4.5, budgets of §2.6): one guarded undici dispatcher
 * for webhook deliveries, and `safeFetch` for one-shot fetches (JWKS, brand.json, revocation
 * lists, adagents.json).
 *
 * The guard lives in the dispatcher's connect step, so no caller can skip it: the host is
 * resolved there, every address is checked, and the socket is opened to the checked address
 * (pinned: nothing resolves the name a second time), with TLS SNI and certificate check still
 * done against the original host name. Plain http passes the guard only for loopback targets
 * with `allowLoopback`, or for hosts on the explicit `allowHosts` list (local testing).
 *
 * Error messages carry the reason only ("fetch failed: address_not_allowed"); whatever the
 * network said stays in `cause`, for operators' logs, never for the URL's supplier.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Agent, buildConnector } from 'undici';
import type { Dispatcher } from 'undici';
import { TargetUriError, canonicalizeTargetUri } from '../http/target-uri.js';
import { isLoopbackAddress, isReservedAddress } from './ssrf.js';
import { SvcError } from '../errors/base.js';

export type SafeFetchReason =
  | 'invalid_url'
  | 'scheme_not_allowed'
  | 'address_not_allowed'
  | 'dns_failed'
  | 'connect_timeout'
  | 'timeout'
  | 'too_large'
  | 'network_error';

export class SafeFetchError extends SvcError {
  static override readonly code = 'ERR_SAFE_FETCH';

  declare readonly code: SafeFetchReason;
  constructor(reason: SafeFetchReason, options?: { cause?: unknown }) {
    super(`fetch failed: ${reason}`, { ...options, code: reason });
  }
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses (the default is `dns.lookup` with `all`). */
export type LookupFunction = (hostname: string) => Promise<ResolvedAddress[]>;

export interface GuardOptions {
  /** Let loopback addresses (127/8, ::1) through, and plain http to them. Tests and dev only. */
  allowLoopback?: boolean;
  /**
   * Host names or IP literals exempt from the address check, plain http allowed: an explicit
   * list for local testing. A name matches the URL's host; an IP matches a resolved address.
   */
  allowHosts?: readonly string[];
  /** Bound on resolution plus TCP connect plus TLS handshake, per connection. Default 5000. */
  connectTimeoutMs?: number;
  /** Replaces the resolver (a seam for tests and for custom resolvers). */
  lookup?: LookupFunction;
}

export type GuardedDispatcherOptions = GuardOptions & Omit<Agent.Options, 'connect'>;

const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_TOTAL_TIMEOUT_MS = 10_000;

// Errors after which the next resolved address is worth a try (dual-stack hosts).
const NEXT_ADDRESS_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'EAFNOSUPPORT',
]);

const defaultLookup: LookupFunction = (hostname) => dnsLookup(hostname, { all: true });

/**
 * An undici Agent whose connect step resolves, refuses reserved addresses unless allowed,
 * and pins the socket to the checked address. Keep-alive and pool options pass through.
 * Refusals surface as `SafeFetchError` (see `toSafeFetchError`).
 */
export function createGuardedDispatcher(opts: GuardedDispatcherOptions = {}): Agent {
  const { allowLoopback, allowHosts, connectTimeoutMs, lookup, ...agentOptions } = opts;
  return new Agent({
    ...agentOptions,
    connect: guardedConnector({ allowLoopback, allowHosts, connectTimeoutMs, lookup }),
  });
}

function guardedConnector(guard: GuardOptions): buildConnector.connector {
  const connectTimeoutMs = guard.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const base = buildConnector({ timeout: connectTimeoutMs });
  const allowed = new Set((guard.allowHosts ?? []).map(normaliseHostEntry));
  const lookup = guard.lookup ?? defaultLookup;

  return (options, callback) => {
    const hostname = normaliseHostEntry(options.hostname); // undici strips IPv6 brackets
    const plainHttp = options.protocol === 'http:';
    resolveWithin(hostname, lookup, connectTimeoutMs)
      .then((addresses) => {
        checkAddresses(hostname, addresses, plainHttp, guard.allowLoopback === true, allowed);
        const servername = isIP(hostname) ? undefined : (options.servername ?? hostname);
        const attempt = (i: number): void => {
          const address = addresses[i]!.address;
          base({ ...options, hostname: address, servername }, (err, socket) => {
            if (err === null) return callback(null, socket);
            const code = (err as NodeJS.ErrnoException).code;
            if (code !== undefined && NEXT_ADDRESS_CODES.has(code) && i + 1 < addresses.length) {
              return attempt(i + 1);
            }
            callback(err, null);
          });
        };
        attempt(0);
      })
      .catch((err: unknown) => callback(toSafeFetchError(err), null));
  };
}

async function resolveWithin(
  hostname: string,
  lookup: LookupFunction,
  timeoutMs: number,
): Promise<ResolvedAddress[]> {
  const family = isIP(hostname);
  if (family !== 0) return [{ address: hostname, family }];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SafeFetchError('connect_timeout')), timeoutMs);
  });
  try {
    const addresses = await Promise.race([
      lookup(hostname).catch((err: unknown) => {
        throw new SafeFetchError('dns_failed', { cause: err });
      }),
      timeout,
    ]);
    if (!Array.isArray(addresses) || addresses.length === 0) throw new SafeFetchError('dns_failed');
    return addresses;
  } finally {
    clearTimeout(timer);
  }
}

/** Every address must pass: one reserved answer among public ones is refused too. */
function checkAddresses(
  hostname: string,
  addresses: ResolvedAddress[],
  plainHttp: boolean,
  allowLoopback: boolean,
  allowed: Set<string>,
): void {
  const hostAllowed = allowed.has(hostname);
  for (const { address } of addresses) {
    if (hostAllowed || allowed.has(normaliseHostEntry(address))) continue;
    const loopbackOk = allowLoopback && isLoopbackAddress(address);
    if (isReservedAddress(address) && !loopbackOk) {
      throw new SafeFetchError('address_not_allowed');
    }
    if (plainHttp && !loopbackOk) throw new SafeFetchError('scheme_not_allowed');
  }
}

function normaliseHostEntry(host: string): string {
  const h = host.toLowerCase();
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

/** Maps any error from a guarded request (undici's included) to a SafeFetchError. */
export function toSafeFetchError(err: unknown, opts: { timedOut?: boolean } = {}): SafeFetchError {
  if (opts.timedOut) return new SafeFetchError('timeout', { cause: err });
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; depth++) {
    if (e instanceof SafeFetchError) return e;
    if ((e as NodeJS.ErrnoException).code === 'UND_ERR_CONNECT_TIMEOUT') {
      return new SafeFetchError('connect_timeout', { cause: err });
    }
    e = e.cause;
  }
  return new SafeFetchError('network_error', { cause: err });
}

export interface SafeFetchOptions extends GuardOptions {
  /** Body cap in bytes, enforced while streaming (the §2.6 budgets: 64 KiB JWKS, ...). */
  maxBytes: number;
  /** Whole-exchange bound: resolution, connect, headers and body. Default 10000. */
  totalTimeoutMs?: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /**
   * A dispatcher from createGuardedDispatcher to reuse (its own guard options apply to the
   * connection); by default a one-shot guarded Agent is made and closed.
   */
  dispatcher?: Dispatcher;
}

export interface SafeFetchResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * One guarded request: https only (plain http only to loopback with `allowLoopback`, or to
 * an `allowHosts` entry), redirects never followed (a 3xx is returned as it is), the body
 * capped at `maxBytes`, connect and total timeouts. Throws SafeFetchError only.
 */
export async function safeFetch(url: string, opts: SafeFetchOptions): Promise<SafeFetchResponse> {
  if (!Number.isSafeInteger(opts.maxBytes) || opts.maxBytes < 0) {
    throw new TypeError('safeFetch: maxBytes must be a non-negative integer');
  }
  const target = parseTarget(url, opts);
  const totalTimeoutMs = opts.totalTimeoutMs ?? DEFAULT_TOTAL_TIMEOUT_MS;
  const dispatcher =
    opts.dispatcher ??
    createGuardedDispatcher({
      allowLoopback: opts.allowLoopback,
      allowHosts: opts.allowHosts,
      connectTimeoutMs: opts.connectTimeoutMs,
      lookup: opts.lookup,
      connections: 1,
    });
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, totalTimeoutMs);
  try {
    const res = await dispatcher.request({
      origin: target.origin,
      path: target.path,
      method: (opts.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: opts.headers,
      body: opts.body,
      signal: controller.signal,
    });
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > opts.maxBytes) {
      res.body.destroy();
      throw new SafeFetchError('too_large');
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body) {
      total += (chunk as Buffer).length;
      if (total > opts.maxBytes) {
        res.body.destroy();
        throw new SafeFetchError('too_large');
      }
      chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks, total) };
  } catch (err) {
    throw toSafeFetchError(err, { timedOut });
  } finally {
    clearTimeout(timer);
    if (opts.dispatcher === undefined) void dispatcher.destroy().catch(() => undefined);
  }
}

/** The request target, byte for byte the canonical @target-uri; the scheme rule applied. */
function parseTarget(url: string, guard: GuardOptions): { origin: string; path: string } {
  let c;
  try {
    c = canonicalizeTargetUri(url);
  } catch (err) {
    if (err instanceof TargetUriError && err.code === 'unsupported_scheme') {
      throw new SafeFetchError('scheme_not_allowed');
    }
    throw new SafeFetchError('invalid_url', { cause: err });
  }
  if (c.scheme === 'http') {
    const host = normaliseHostEntry(c.host);
    const listed = (guard.allowHosts ?? []).some((h) => normaliseHostEntry(h) === host);
    const loopbackName = isLoopbackAddress(host) || host === 'localhost';
    if (!listed && !(guard.allowLoopback && loopbackName)) {
      throw new SafeFetchError('scheme_not_allowed');
    }
  }
  const origin = `${c.scheme}://${c.authority}`;
  return { origin, path: c.targetUri.slice(origin.length) };
}
